// TextWindowDataset (nn/text_windows.h): the windows of a corpus split against the split's bytes
// read here, batches equal to the samples stacked, a DataLoader with a RandomSampler and worker
// threads visiting every window once per epoch, and the errors (null corpus, context below 1, a
// split too short, an index out of range). Host data only: batches are host tensors.
#include <algorithm>
#include <memory>

#include "nn/data_loader.h"
#include "nn/text_windows.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace nn = tritium::nn;
using tritium::Tensor;

namespace {

std::shared_ptr<const nn::TextCorpus> small_corpus() {
  std::vector<std::string> docs;
  for (int i = 0; i < 20; ++i) docs.push_back("fortune " + std::to_string(i * 37) + " says hello\n%\n");
  return std::make_shared<const nn::TextCorpus>(docs, 10);  // 18 training documents, 2 held out
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_text_windows)

BOOST_AUTO_TEST_CASE(windows_are_the_split_bytes, *tt::needs_cpu_backend()) {
  auto corpus = small_corpus();
  const auto& bytes = corpus->tokens(nn::TextCorpus::Split::train);
  const int64_t T = 7;
  nn::TextWindowDataset windows(corpus, nn::TextCorpus::Split::train, T);
  BOOST_TEST(windows.size() == static_cast<int64_t>(bytes.size()) - T);
  for (int64_t i : {int64_t{0}, int64_t{5}, windows.size() - 1}) {
    nn::Example e = windows.get(i);
    BOOST_TEST((e.data.shape() == std::vector<int64_t>{T}));
    auto x = e.data.to_vector<int64_t>(), y = e.target.to_vector<int64_t>();
    for (int64_t t = 0; t < T; ++t) {
      BOOST_TEST(x[size_t(t)] == int64_t{bytes[size_t(i + t)]});
      BOOST_TEST(y[size_t(t)] == int64_t{bytes[size_t(i + t + 1)]});
    }
  }
  nn::Batch b = windows.get_batch({3, 0, 11});
  BOOST_TEST((b.x.shape() == std::vector<int64_t>{3, T}));
  nn::Batch stacked = nn::collate({windows.get(3), windows.get(0), windows.get(11)});
  BOOST_TEST(b.x.to_vector<int64_t>() == stacked.x.to_vector<int64_t>(), boost::test_tools::per_element());
  BOOST_TEST(b.y.to_vector<int64_t>() == stacked.y.to_vector<int64_t>(), boost::test_tools::per_element());
}

// What train-gpt --workers relies on: each window once per epoch, in the sampler's order, whatever
// the workers' timing; the next epoch another order.
BOOST_AUTO_TEST_CASE(a_loader_visits_every_window_once_per_epoch, *tt::needs_cpu_backend()) {
  auto windows = std::make_shared<const nn::TextWindowDataset>(small_corpus(), nn::TextCorpus::Split::train, 9);
  nn::DataLoader loader(windows, {.batch_size = 5, .shuffle = true, .num_workers = 3, .seed = 4});
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 2; ++e) {
    // The epoch's order is a permutation of the windows, and the batches are those windows in it.
    std::vector<int64_t> order = loader.order(e), sorted = order;
    std::sort(sorted.begin(), sorted.end());
    BOOST_REQUIRE_EQUAL(static_cast<int64_t>(sorted.size()), windows->size());
    for (int64_t s = 0; s < windows->size(); ++s) BOOST_TEST(sorted[size_t(s)] == s);
    size_t k = 0;
    for (auto& [x, y] : loader) {
      auto xs = x.to_vector<int64_t>(), ys = y.to_vector<int64_t>();
      for (int64_t r = 0; r < x.size(0); ++r, ++k) {
        BOOST_REQUIRE_LT(k, order.size());
        nn::Example want = windows->get(order[k]);
        BOOST_TEST((std::vector<int64_t>(xs.begin() + r * 9, xs.begin() + (r + 1) * 9) == want.data.to_vector<int64_t>()));
        BOOST_TEST((std::vector<int64_t>(ys.begin() + r * 9, ys.begin() + (r + 1) * 9) == want.target.to_vector<int64_t>()));
      }
    }
    BOOST_TEST(k == order.size());
    epochs.push_back(order);
  }
  BOOST_TEST(epochs[0] != epochs[1]);
}

BOOST_AUTO_TEST_CASE(errors, *tt::needs_cpu_backend()) {
  auto corpus = small_corpus();
  const int64_t held = corpus->size(nn::TextCorpus::Split::held_out);
  tt::check_throws([&] { nn::TextWindowDataset(nullptr, nn::TextCorpus::Split::train, 4); }, {"TextWindowDataset", "null"});
  tt::check_throws([&] { nn::TextWindowDataset(corpus, nn::TextCorpus::Split::train, 0); },
                   {"TextWindowDataset", "context must be at least 1, got 0"});
  tt::check_throws([&] { nn::TextWindowDataset(corpus, nn::TextCorpus::Split::held_out, held); },
                   {"TextWindowDataset", "held-out split", "too few for one window"});
  nn::TextWindowDataset windows(corpus, nn::TextCorpus::Split::train, 4);
  tt::check_throws([&] { windows.get(windows.size()); }, {"TextWindowDataset", "out of range"});
  tt::check_throws([&] { windows.get_batch({0, -1}); }, {"TextWindowDataset", "index -1 is out of range"});
  tt::check_throws([&] { windows.get_batch({}); }, {"TextWindowDataset", "no indices"});
}

BOOST_AUTO_TEST_SUITE_END()
