// The byte-level text corpus (nn/text_corpus.h): the deterministic interleaved split, batches of
// random windows (targets shifted by one, every window a substring of its split, reproducible from
// the seed, on every backend), the unigram baseline against a host computation, the fortune
// reader on a directory written here (and on Debian's databases when installed), and the errors.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "nn/text_corpus.h"
#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace nn = tritium::nn;
using tritium::Tensor;
using Split = nn::TextCorpus::Split;

namespace {

template <class F> void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    BOOST_ERROR("expected an error containing: " << fragment);
  } catch (const tritium::Error& e) {
    BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos, "message: " << e.what());
  }
}

std::string as_text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_text_corpus)

BOOST_AUTO_TEST_CASE(split_is_interleaved_and_deterministic) {
  std::vector<std::string> docs;
  for (int i = 0; i < 7; ++i) docs.push_back("doc" + std::to_string(i) + "\n");
  nn::TextCorpus corpus(docs, 3);  // documents 2 and 5 held out
  BOOST_TEST(as_text(corpus.tokens(Split::held_out)) == "doc2\ndoc5\n");
  BOOST_TEST(as_text(corpus.tokens(Split::train)) == "doc0\ndoc1\ndoc3\ndoc4\ndoc6\n");
  BOOST_TEST(corpus.documents(Split::train) == 5);
  BOOST_TEST(corpus.documents(Split::held_out) == 2);
  expect_error([&] { nn::TextCorpus(docs, 1); }, "held_out_every must be at least 2, got 1");
  expect_error([&] { nn::TextCorpus({"a", "b"}, 2); }, "held-out split of 1 bytes");
}

BOOST_AUTO_TEST_CASE(batches_are_shifted_windows) {
  tt::for_each_backend([&](const tt::Backend& be) {
    std::vector<std::string> docs;
    for (int i = 0; i < 40; ++i) docs.push_back("fortune number " + std::to_string(i * 7919 % 1000) + " says hi\n%\n");
    nn::TextCorpus corpus(docs);
    const std::string train = as_text(corpus.tokens(Split::train));
    for (auto [B, T] : {std::pair<int64_t, int64_t>{5, 13}, {3, 1}, {1, static_cast<int64_t>(train.size()) - 1}}) {
      tritium::ops::Generator gen(42);
      auto [x, y] = corpus.get_batch(Split::train, B, T, gen);
      BOOST_TEST((x.shape() == std::vector<int64_t>{B, T}));
      BOOST_TEST((y.shape() == std::vector<int64_t>{B, T}));
      BOOST_TEST((x.device() == be.device));
      BOOST_TEST((x.dtype() == tritium::DType::i64));
      auto xv = x.to_vector<int64_t>(), yv = y.to_vector<int64_t>();
      for (int64_t b = 0; b < B; ++b) {
        std::string window;
        for (int64_t t = 0; t < T; ++t) window.push_back(static_cast<char>(xv[static_cast<size_t>(b * T + t)]));
        window.push_back(static_cast<char>(yv[static_cast<size_t>(b * T + T - 1)]));
        BOOST_TEST(train.find(window) != std::string::npos, "window " << b << " is not in the training split");
        for (int64_t t = 0; t + 1 < T; ++t) BOOST_TEST(yv[static_cast<size_t>(b * T + t)] == xv[static_cast<size_t>(b * T + t + 1)]);
      }
      tritium::ops::Generator again(42);
      BOOST_TEST(corpus.get_batch(Split::train, B, T, again).first.to_vector<int64_t>() == xv,
                 boost::test_tools::per_element());
    }
    // Different windows from later draws of the generator (the starts are random).
    tritium::ops::Generator gen(1);
    auto a = corpus.get_batch(Split::train, 8, 16, gen).first.to_vector<int64_t>();
    auto b = corpus.get_batch(Split::train, 8, 16, gen).first.to_vector<int64_t>();
    BOOST_TEST((a != b));
    const int64_t held = corpus.size(Split::held_out);
    expect_error([&] { corpus.get_batch(Split::held_out, 2, held, gen); },
                 "a context of " + std::to_string(held) + " needs " + std::to_string(held + 1) + " tokens, the held-out split has");
    expect_error([&] { corpus.get_batch(Split::train, 0, 4, gen); }, "batch (0) and context (4) must be at least 1");
  });
}

BOOST_AUTO_TEST_CASE(unigram_baseline_and_byte_codec) {
  nn::TextCorpus corpus({"aab", "ab", "abb"}, 3);  // train "aabab", held out "abb"
  // Add-one counts over 256 bytes: a 3 + 1, b 2 + 1, total 5 + 256.
  double pa = 4.0 / 261, pb = 3.0 / 261;
  double want = -(std::log(pa) + 2 * std::log(pb)) / 3;
  BOOST_TEST(std::abs(corpus.unigram_held_out_loss() - want) < 1e-12);
  std::string text = "h\xc3\xa9llo\n";
  auto ids = nn::TextCorpus::encode(text);
  BOOST_TEST(ids.size() == text.size());
  BOOST_TEST(ids[1] == 0xc3);
  BOOST_TEST(nn::TextCorpus::decode(ids) == text);
  expect_error([] { nn::TextCorpus::decode({65, 256}); }, "token 256 is not a byte");
}

BOOST_AUTO_TEST_CASE(fortune_files) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tritium-fortunes-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream(dir / "b") << "second file one\n%\nsecond file two\n";  // no final "%"
    std::ofstream(dir / "a") << "first one\nline two\n%\nfirst two\n%\n";
    std::ofstream(dir / "a.dat") << "binary index, skipped";
    std::ofstream(dir / "a.u8") << "skipped too";
  }
  nn::TextCorpus corpus = nn::TextCorpus::fortunes(dir.string(), 2);
  BOOST_TEST(as_text(corpus.tokens(Split::train)) == "first one\nline two\n%\nsecond file one\n%\n");
  BOOST_TEST(as_text(corpus.tokens(Split::held_out)) == "first two\n%\nsecond file two\n%\n");
  fs::remove_all(dir);
  expect_error([&] { nn::TextCorpus::fortunes(dir.string()); }, "apt-get install fortunes");
  fs::create_directories(dir);
  expect_error([&] { nn::TextCorpus::fortunes(dir.string()); }, "no fortunes in");
  fs::remove_all(dir);

  // Debian's databases, when the package is installed: a corpus of megabytes whose unigram loss
  // lies between 2.5 and 4 nats per byte (English text), far below the uniform model's log 256.
  if (fs::is_directory(nn::TextCorpus::default_fortunes_dir())) {
    nn::TextCorpus fortunes = nn::TextCorpus::fortunes();
    BOOST_TEST(fortunes.size(Split::train) > 1000000);
    BOOST_TEST(fortunes.size(Split::held_out) > 100000);
    double u = fortunes.unigram_held_out_loss();
    BOOST_TEST((u > 2.5 && u < 4.0), "unigram loss " << u);
  } else {
    BOOST_TEST_MESSAGE("the fortunes package is not installed: Debian's databases not read");
  }
}

BOOST_AUTO_TEST_SUITE_END()
