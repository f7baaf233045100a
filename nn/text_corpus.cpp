// The byte-level text corpus (nn/text_corpus.h): reading the fortune databases, the split, the
// random windows and the unigram baseline.
#include "nn/text_corpus.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace tritium::nn {

namespace fs = std::filesystem;

TextCorpus::TextCorpus(const std::vector<std::string>& documents, int64_t held_out_every) {
  if (held_out_every < 2) fail("TextCorpus: held_out_every must be at least 2, got {}", held_out_every);
  for (size_t i = 0; i < documents.size(); ++i) {
    bool held_out = static_cast<int64_t>(i % static_cast<size_t>(held_out_every)) == held_out_every - 1;
    auto& out = held_out ? held_out_ : train_;
    out.insert(out.end(), documents[i].begin(), documents[i].end());
    ++(held_out ? held_out_docs_ : train_docs_);
  }
  if (train_.size() < 2 || held_out_.size() < 2)
    fail("TextCorpus: {} documents give a training split of {} and a held-out split of {} bytes (each needs at "
         "least 2)", documents.size(), train_.size(), held_out_.size());
}

TextCorpus TextCorpus::fortunes(const std::string& dir, int64_t held_out_every) {
  const char* install = "install Debian's fortunes package (apt-get install fortunes; ./run.sh and "
                        "scripts/setup.sh do) or pass another directory of fortune files";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("TextCorpus::fortunes: no fortune databases at {}: {}", dir, install);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && !entry.is_symlink() && !entry.path().has_extension()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> documents;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("TextCorpus::fortunes: cannot read {}", path.string());
    std::string line, doc;
    while (std::getline(in, line)) {
      doc += line;
      doc += '\n';
      if (line == "%") {  // the end of a fortune
        if (doc.size() > 2) documents.push_back(std::move(doc));
        doc.clear();
      }
    }
    if (!doc.empty()) documents.push_back(doc + "%\n");
  }
  if (documents.empty()) fail("TextCorpus::fortunes: no fortunes in {}: {}", dir, install);
  return TextCorpus(documents, held_out_every);
}

std::pair<Tensor, Tensor> TextCorpus::get_batch(Split split, int64_t batch, int64_t context, ops::Generator& gen,
                                                Device device) const {
  const auto& data = tokens(split);
  const char* name = split == Split::train ? "training" : "held-out";
  if (batch < 1 || context < 1)
    fail("TextCorpus::get_batch: batch ({}) and context ({}) must be at least 1", batch, context);
  if (context + 1 > static_cast<int64_t>(data.size()))
    fail("TextCorpus::get_batch: a context of {} needs {} tokens, the {} split has {}", context, context + 1, name,
         data.size());
  const int64_t starts_count = static_cast<int64_t>(data.size()) - context;
  std::vector<int64_t> starts =
      ops::randint(0, starts_count, {batch}, gen, DType::i64, device).to_vector<int64_t>();  // a kernel: on `device`
  std::vector<int64_t> x(static_cast<size_t>(batch * context)), y(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < context; ++t) {
      size_t at = static_cast<size_t>(starts[static_cast<size_t>(b)] + t);
      x[static_cast<size_t>(b * context + t)] = data[at];
      y[static_cast<size_t>(b * context + t)] = data[at + 1];
    }
  return {Tensor::from_vector(x, {batch, context}, device), Tensor::from_vector(y, {batch, context}, device)};
}

double TextCorpus::unigram_held_out_loss() const {
  std::vector<double> counts(vocab_size, 1.0);  // add-one smoothing
  for (uint8_t b : train_) counts[b] += 1.0;
  double total = static_cast<double>(train_.size()) + vocab_size;
  double nll = 0;
  for (uint8_t b : held_out_) nll -= std::log(counts[b] / total);
  return nll / static_cast<double>(held_out_.size());
}

std::vector<int64_t> TextCorpus::encode(const std::string& text) {
  std::vector<int64_t> out;
  out.reserve(text.size());
  for (unsigned char c : text) out.push_back(c);
  return out;
}

std::string TextCorpus::decode(const std::vector<int64_t>& tokens) {
  std::string out;
  out.reserve(tokens.size());
  for (int64_t t : tokens) {
    if (t < 0 || t > 255) fail("TextCorpus::decode: token {} is not a byte", t);
    out.push_back(static_cast<char>(t));
  }
  return out;
}

}  // namespace tritium::nn
