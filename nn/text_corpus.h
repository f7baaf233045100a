// A byte-level text corpus for language models (issue 31 item 2, the GPT's data): tokens are the
// bytes of the text (vocabulary 256), split deterministically into a training and a held-out part,
// with random context windows as batches (nanoGPT's get_batch) drawn from a seeded generator.
// TextCorpus::fortunes() reads Debian's `fortunes` databases (/usr/share/games/fortunes; the
// package is installed by scripts/install_packages.sh). Include "nn/text_corpus.h" (docs/gpt.md).
//
//   nn::TextCorpus corpus = nn::TextCorpus::fortunes();
//   Generator gen(0);
//   auto [x, y] = corpus.get_batch(nn::TextCorpus::Split::train, 32, 64, gen);   // [32, 64] i64 each
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/ops.h"

namespace tritium::nn {

class TextCorpus {
 public:
  enum class Split { train, held_out };

  // Documents (each kept whole in one split): every `held_out_every`-th document (the last of each
  // run of held_out_every) is held out, the others train. Documents keep their text as given; the
  // splits are their concatenations. Errors: held_out_every below 2, a split shorter than 2 bytes.
  TextCorpus(const std::vector<std::string>& documents, int64_t held_out_every = 10);

  // The fortune databases of `dir` (every regular file without an extension, by name; the .dat
  // indexes and .u8 links are skipped), each cut into its fortunes at the "%" lines; a fortune is
  // one document (with its "%\n" line, so a model learns where fortunes end). Errors: a missing or
  // empty directory, naming the Debian package that installs it.
  static TextCorpus fortunes(const std::string& dir = default_fortunes_dir(), int64_t held_out_every = 10);
  static std::string default_fortunes_dir() { return "/usr/share/games/fortunes"; }

  const std::vector<uint8_t>& tokens(Split split) const { return split == Split::train ? train_ : held_out_; }
  int64_t size(Split split) const { return static_cast<int64_t>(tokens(split).size()); }
  int64_t documents(Split split) const { return split == Split::train ? train_docs_ : held_out_docs_; }
  static constexpr int64_t vocab_size = 256;

  // `batch` windows of `context` + 1 consecutive tokens at uniform random starts in the split
  // (drawn with ops::randint from `gen`): x the first `context`, y the last `context` ([batch,
  // context] i64 on `device`). Errors: batch or context below 1, a context the split cannot hold.
  std::pair<Tensor, Tensor> get_batch(Split split, int64_t batch, int64_t context, ops::Generator& gen,
                                      Device device = default_device()) const;

  // Mean cross-entropy (nats per byte) on the held-out split of the unigram model fitted on the
  // training split (byte frequencies with add-one smoothing): the loss a model must beat to have
  // learnt more than byte frequencies.
  double unigram_held_out_loss() const;

  // Bytes to text and back (a byte-level tokenizer).
  static std::vector<int64_t> encode(const std::string& text);
  static std::string decode(const std::vector<int64_t>& tokens);

 private:
  std::vector<uint8_t> train_, held_out_;
  int64_t train_docs_ = 0, held_out_docs_ = 0;
};

}  // namespace tritium::nn
