// IDX reading (plain and gzip; errors for missing, corrupt and truncated files), Fashion-MNIST,
// datasets (TensorDataset, Subset, collate), samplers (against PyTorch's DistributedSampler
// indices), the DataLoader (batching, drop_last, seeded shuffling, worker threads delivering in
// order, errors from workers, shutdown, bad arguments), pinned memory and the device prefetcher.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>
#include <zlib.h>

#include "nn/data.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace fs = std::filesystem;
using tritium::Tensor;
using namespace tritium;

namespace {

// A fresh directory under the system's temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("tritium-test-data-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

std::vector<uint8_t> idx_images(uint32_t count, uint32_t rows, uint32_t cols, uint32_t magic = 0x803) {
  std::vector<uint8_t> out;
  put_be32(out, magic), put_be32(out, count), put_be32(out, rows), put_be32(out, cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i) out.push_back(static_cast<uint8_t>((i * 37 + 11) % 256));
  return out;
}

std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels, uint32_t magic = 0x801) {
  std::vector<uint8_t> out;
  put_be32(out, magic), put_be32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  BOOST_TEST_REQUIRE(f != nullptr);
  BOOST_TEST_REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  BOOST_TEST_REQUIRE(gzclose(f) == Z_OK);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// A dataset of n samples: data row i = (i, i + 0.5, -i), target i.
nn::TensorDataset counting_dataset(int64_t n) {
  std::vector<float> data;
  std::vector<int64_t> targets;
  for (int64_t i = 0; i < n; ++i) {
    data.insert(data.end(), {float(i), float(i) + 0.5f, -float(i)});
    targets.push_back(i);
  }
  return nn::TensorDataset(Tensor::from_vector(data, {n, 3}), Tensor::from_vector(targets));
}

// Every batch of one epoch, checking each row matches its target; returns the targets in order.
std::vector<int64_t> epoch_targets(nn::DataLoader& loader, std::vector<int64_t>* sizes = nullptr) {
  std::vector<int64_t> seen;
  for (auto& [x, y] : loader) {
    BOOST_TEST_REQUIRE(x.dim() == 2);
    BOOST_TEST_REQUIRE(x.size(0) == y.size(0));
    BOOST_TEST(x.size(1) == 3);
    BOOST_TEST((y.dtype() == DType::i64));
    auto xv = x.to_vector<float>();
    auto yv = y.to_vector<int64_t>();
    for (size_t r = 0; r < yv.size(); ++r) {
      BOOST_TEST(xv[3 * r] == float(yv[r]));
      BOOST_TEST(xv[3 * r + 1] == float(yv[r]) + 0.5f);
      BOOST_TEST(xv[3 * r + 2] == -float(yv[r]));
    }
    seen.insert(seen.end(), yv.begin(), yv.end());
    if (sizes) sizes->push_back(x.size(0));
  }
  return seen;
}

const std::string kFashionRoot = nn::FashionMNIST::default_root();
bool fashion_installed() {
  return fs::exists(kFashionRoot + "/train-images-idx3-ubyte.gz") || fs::exists(kFashionRoot + "/train-images-idx3-ubyte");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_data)

BOOST_AUTO_TEST_CASE(idx_valid_plain_and_gzip) {
  TempDir dir;
  auto images = idx_images(3, 2, 4);
  std::vector<uint8_t> labels = {7, 0, 9};
  write_file(dir / "images", images);
  write_gzip(dir / "images.gz", images);
  write_file(dir / "labels", idx_labels(labels));
  write_gzip(dir / "labels.gz", idx_labels(labels));
  for (std::string suffix : {"", ".gz"}) {
    BOOST_TEST_CONTEXT("suffix '" << suffix << "'") {
      nn::IdxImages im = nn::read_idx_images(dir / ("images" + suffix));
      BOOST_TEST(im.count == 3);
      BOOST_TEST(im.rows == 2);
      BOOST_TEST(im.cols == 4);
      BOOST_TEST(im.pixels == std::vector<uint8_t>(images.begin() + 16, images.end()), boost::test_tools::per_element());
      BOOST_TEST(nn::read_idx_labels(dir / ("labels" + suffix)) == labels, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(idx_errors_name_the_path) {
  TempDir dir;
  auto images = idx_images(3, 2, 4);
  write_file(dir / "labels", idx_labels({1, 2, 3}));
  write_file(dir / "truncated", std::vector<uint8_t>(images.begin(), images.end() - 5));
  write_file(dir / "short-header", std::vector<uint8_t>(images.begin(), images.begin() + 10));
  write_file(dir / "tiny", {0, 0});
  auto trailing = images;
  trailing.push_back(42);
  write_file(dir / "trailing", trailing);
  // A gzip stream cut in the middle.
  write_gzip(dir / "full.gz", idx_images(50, 28, 28));
  auto gz = read_bytes(dir / "full.gz");
  write_file(dir / "cut.gz", std::vector<uint8_t>(gz.begin(), gz.begin() + gz.size() / 2));

  tt::check_throws([&] { nn::read_idx_images(dir / "missing"); }, {dir / "missing", "no such file"}, "missing file");
  tt::check_throws([&] { nn::read_idx_images(dir.path.string()); }, {dir.path.string(), "directory"}, "directory");
  tt::check_throws([&] { nn::read_idx_images(dir / "labels"); }, {dir / "labels", "wrong magic", "0x00000801"},
                   "labels read as images");
  tt::check_throws([&] { nn::read_idx_labels(dir / "truncated"); }, {dir / "truncated", "wrong magic"},
                   "images read as labels");
  tt::check_throws([&] { nn::read_idx_images(dir / "truncated"); }, {dir / "truncated", "truncated"}, "truncated");
  tt::check_throws([&] { nn::read_idx_images(dir / "short-header"); }, {dir / "short-header", "truncated"},
                   "short header");
  tt::check_throws([&] { nn::read_idx_images(dir / "tiny"); }, {dir / "tiny", "truncated"}, "tiny");
  tt::check_throws([&] { nn::read_idx_images(dir / "trailing"); }, {dir / "trailing", "unexpected byte"},
                   "trailing bytes");
  tt::check_throws([&] { nn::read_idx_images(dir / "cut.gz"); }, {dir / "cut.gz"}, "truncated gzip");
}

BOOST_AUTO_TEST_CASE(fashion_mnist_from_small_files, *tt::needs_cpu_backend()) {  // (u8 -> f32 on the CPU)
  TempDir dir;
  auto images = idx_images(4, 28, 28);
  std::vector<uint8_t> labels = {3, 9, 0, 1};
  write_gzip(dir / "train-images-idx3-ubyte.gz", images);
  write_gzip(dir / "train-labels-idx1-ubyte.gz", idx_labels(labels));
  write_file(dir / "t10k-images-idx3-ubyte", idx_images(2, 28, 28));  // plain files work too
  write_file(dir / "t10k-labels-idx1-ubyte", idx_labels({1, 2, 3}));  // one label too many

  nn::FashionMNIST train(dir.path.string(), true);
  BOOST_TEST(train.size() == 4);
  BOOST_TEST((train.data.shape() == Tensor::Shape{4, 784}));
  BOOST_TEST((train.data.dtype() == DType::f32));
  BOOST_TEST((train.targets.dtype() == DType::i64));
  BOOST_TEST(train.targets.to_vector<int64_t>() == (std::vector<int64_t>{3, 9, 0, 1}), boost::test_tools::per_element());
  std::vector<double> ref;
  for (size_t i = 16; i < images.size(); ++i) ref.push_back((images[i] / 255.0 - 0.2860) / 0.3530);
  tt::check_close<float>(train.data.to_vector<float>(), ref, 1e-6, "normalised pixels");

  tt::check_throws([&] { nn::FashionMNIST(dir.path.string(), false); },
                   {"t10k-images-idx3-ubyte", "2 images", "3 labels"}, "inconsistent counts");
  write_file(dir / "t10k-labels-idx1-ubyte", idx_labels({1, 12}));
  tt::check_throws([&] { nn::FashionMNIST(dir.path.string(), false); }, {"t10k-labels-idx1-ubyte", "label 12"},
                   "label out of range");
  tt::check_throws([&] { nn::FashionMNIST((dir.path / "nowhere").string(), true); },
                   {"nowhere/train-images-idx3-ubyte", "no such file"}, "missing directory");
}

BOOST_AUTO_TEST_CASE(fashion_mnist_installed) {
  if (!fashion_installed()) {
    BOOST_TEST_MESSAGE("skipping: Fashion-MNIST is not installed in " << kFashionRoot);
    return;
  }
  nn::FashionMNIST train(kFashionRoot, true), test(kFashionRoot, false);
  BOOST_TEST((train.data.shape() == Tensor::Shape{60000, 784}));
  BOOST_TEST((train.targets.shape() == Tensor::Shape{60000}));
  BOOST_TEST((test.data.shape() == Tensor::Shape{10000, 784}));
  BOOST_TEST((test.targets.shape() == Tensor::Shape{10000}));
  // Balanced classes: 6000 per class in train, 1000 in test.
  for (auto [set, per_class] : {std::pair{&train, 6000}, std::pair{&test, 1000}}) {
    std::vector<int> counts(10, 0);
    for (int64_t y : set->targets.to_vector<int64_t>()) counts.at(static_cast<size_t>(y))++;
    BOOST_TEST(counts == std::vector<int>(10, per_class), boost::test_tools::per_element());
  }
  // The normalisation constants are the training set's mean and std.
  auto v = train.data.to_vector<float>();
  double sum = 0, sq = 0;
  for (float x : v) sum += x, sq += double(x) * x;
  double mean = sum / v.size(), var = sq / v.size() - mean * mean;
  BOOST_TEST(std::abs(mean) < 0.01);
  BOOST_TEST(std::abs(std::sqrt(var) - 1) < 0.01);
}

BOOST_AUTO_TEST_CASE(loader_batching_and_drop_last) {
  auto ds = counting_dataset(10);
  nn::DataLoader loader(ds, 4);
  BOOST_TEST(loader.size() == 3);
  std::vector<int64_t> sizes;
  auto seen = epoch_targets(loader, &sizes);
  BOOST_TEST(sizes == (std::vector<int64_t>{4, 4, 2}), boost::test_tools::per_element());
  std::vector<int64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  BOOST_TEST(seen == all, boost::test_tools::per_element());  // no shuffle: in order

  nn::DataLoader dropping(ds, 4, false, 0, /*drop_last=*/true);
  BOOST_TEST(dropping.size() == 2);
  sizes.clear();
  seen = epoch_targets(dropping, &sizes);
  BOOST_TEST(sizes == (std::vector<int64_t>{4, 4}), boost::test_tools::per_element());
  BOOST_TEST(seen == std::vector<int64_t>(all.begin(), all.begin() + 8), boost::test_tools::per_element());

  nn::DataLoader exact(ds, 5, false, 0, true);
  BOOST_TEST(exact.size() == 2);
  nn::DataLoader empty(counting_dataset(3), 4, false, 0, true);
  BOOST_TEST(empty.size() == 0);
  BOOST_TEST(epoch_targets(empty).empty());

  tt::check_throws([&] { nn::DataLoader(ds, 0); }, {"DataLoader", "batch_size"}, "batch size 0");
  tt::check_throws([&] { nn::TensorDataset(Tensor::zeros({3, 2}, DType::f32), Tensor::zeros({4}, DType::i64)); },
                   {"TensorDataset", "same number"}, "count mismatch");
}

BOOST_AUTO_TEST_CASE(loader_shuffling_is_seeded) {
  auto ds = counting_dataset(103);
  nn::DataLoader a(ds, 16, true, 42), b(ds, 16, true, 42), c(ds, 16, true, 43);
  auto a1 = epoch_targets(a), a2 = epoch_targets(a);
  auto b1 = epoch_targets(b), b2 = epoch_targets(b);
  auto c1 = epoch_targets(c);
  BOOST_TEST(a1 == b1);  // same seed, same epochs: same order
  BOOST_TEST(a2 == b2);
  BOOST_TEST(a1 != a2);  // epochs differ
  BOOST_TEST(a1 != c1);  // seeds differ
  BOOST_TEST(a1 == a.order(0));
  BOOST_TEST(a2 == a.order(1));
  BOOST_TEST(a.epoch() == 2);
  for (const auto* order : {&a1, &a2, &c1}) {  // every sample exactly once per epoch
    std::vector<int64_t> sorted = *order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(103);
    std::iota(all.begin(), all.end(), 0);
    BOOST_TEST(sorted == all);
  }
  std::vector<int64_t> in_order(103);
  std::iota(in_order.begin(), in_order.end(), 0);
  BOOST_TEST(a1 != in_order);
}

BOOST_AUTO_TEST_CASE(loader_early_destruction) {
  auto ds = counting_dataset(2000);
  // break after one batch: the iteration's thread is stopped and joined.
  for (int round = 0; round < 20; ++round) {
    nn::DataLoader loader(ds, 7, true, static_cast<uint64_t>(round));
    int batches = 0;
    for (auto& [x, y] : loader) {
      (void)x, (void)y;
      if (++batches == 2) break;
    }
    BOOST_TEST(batches == 2);
  }
  // An iteration started and dropped at once, many times (the producer may be mid-batch).
  nn::DataLoader loader(ds, 1, false);
  for (int round = 0; round < 50; ++round) {
    auto it = loader.begin();
    BOOST_TEST((it != loader.end()));
  }
  // The loader destroyed while an iteration is alive: the iteration ends cleanly.
  auto owned = std::make_unique<nn::DataLoader>(ds, 10);
  auto it = owned->begin();
  BOOST_TEST((*it).x.size(0) == 10);
  owned.reset();
  int more = 0;
  for (; it != std::default_sentinel; ++it) ++more;
  BOOST_TEST(more < 200);
}

BOOST_AUTO_TEST_CASE(loader_over_fashion_mnist) {
  if (!fashion_installed()) {
    BOOST_TEST_MESSAGE("skipping: Fashion-MNIST is not installed in " << kFashionRoot);
    return;
  }
  nn::FashionMNIST test(kFashionRoot, false);
  nn::DataLoader loader(test, 128, true, 0);
  BOOST_TEST(loader.size() == 79);
  int64_t batches = 0, samples = 0;
  for (auto& [x, y] : loader) {
    BOOST_TEST((x.shape() == Tensor::Shape{y.size(0), 784}));
    ++batches, samples += y.size(0);
  }
  BOOST_TEST(batches == 79);
  BOOST_TEST(samples == 10000);
}


// ---- the data pipeline: datasets, samplers, workers ------------------------------------------------
namespace {

std::vector<int64_t> iota_vec(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t(0));
  return v;
}

bool is_permutation_of_range(std::vector<int64_t> v, int64_t n) {
  std::sort(v.begin(), v.end());
  return v == iota_vec(n);
}

// Sample i: data (i, i + 0.5, -i) and target i, as counting_dataset, but get() sleeps a delay
// that depends on i (0 to ~1.5 ms), so workers finish out of order; fail_at makes get throw.
class SlowDataset : public nn::Dataset {
 public:
  explicit SlowDataset(int64_t n, int64_t fail_at = -1, bool delays = true) : n_(n), fail_at_(fail_at), delays_(delays) {}
  int64_t size() const override { return n_; }
  nn::Example get(int64_t i) const override {
    if (i == fail_at_) throw std::runtime_error("sample " + std::to_string(i) + " is corrupt");
    if (delays_) std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 13 * 120));
    ++calls;
    return nn::Example{Tensor::from_vector(std::vector<float>{float(i), float(i) + 0.5f, -float(i)}, {3}, Device::cpu()),
                       Tensor::from_vector(std::vector<int64_t>{i}, {}, Device::cpu())};
  }
  mutable std::atomic<int64_t> calls{0};

 private:
  int64_t n_, fail_at_;
  bool delays_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(dataset_get_subset_and_collate) {
  std::vector<float> values;
  for (int i = 0; i < 5 * 6; ++i) values.push_back(float(i) * 0.25f - 3);
  std::vector<int64_t> labels = {4, 0, 3, 1, 2};
  nn::TensorDataset ds(Tensor::from_vector(values, {5, 2, 3}, Device::cpu()), Tensor::from_vector(labels, {5}, Device::cpu()));
  for (int64_t i = 0; i < 5; ++i) {
    nn::Example e = ds.get(i);
    BOOST_TEST((e.data.shape() == Tensor::Shape{2, 3}));
    BOOST_TEST(e.target.dim() == 0);
    BOOST_TEST(e.target.to_vector<int64_t>()[0] == labels[size_t(i)]);
    auto d = e.data.to_vector<float>();
    BOOST_TEST(d == std::vector<float>(values.begin() + 6 * i, values.begin() + 6 * (i + 1)), boost::test_tools::per_element());
  }
  // collate of samples in any order equals the rows stacked; get_batch gives the same.
  std::vector<int64_t> pick = {3, 0, 4, 3};
  std::vector<nn::Example> samples;
  for (int64_t i : pick) samples.push_back(ds.get(i));
  for (const nn::Batch& b : {nn::collate(samples), ds.get_batch(pick), ds.nn::Dataset::get_batch(pick)}) {
    BOOST_TEST((b.x.shape() == Tensor::Shape{4, 2, 3}));
    BOOST_TEST((b.y.shape() == Tensor::Shape{4}));
    auto x = b.x.to_vector<float>();
    auto y = b.y.to_vector<int64_t>();
    for (size_t r = 0; r < pick.size(); ++r) {
      BOOST_TEST(y[r] == labels[size_t(pick[r])]);
      for (int k = 0; k < 6; ++k) BOOST_TEST(x[6 * r + k] == values[size_t(6 * pick[r] + k)]);
    }
  }
  // A strided sample is stacked by value (made contiguous by a CPU kernel first).
  if (runtime::device_available(Device::cpu())) {
  Tensor wide = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, Device::cpu());
  nn::Batch tb = nn::collate({nn::Example{wide.t(), Tensor()}, nn::Example{wide.t(), Tensor()}});
  BOOST_TEST(!tb.y.defined());
  BOOST_TEST(tb.x.to_vector<float>() == (std::vector<float>{1, 4, 2, 5, 3, 6, 1, 4, 2, 5, 3, 6}), boost::test_tools::per_element());
  }

  // Subset: samples at its indices, in that order.
  auto shared = std::make_shared<nn::TensorDataset>(ds);
  nn::Subset sub(shared, {4, 1, 1});
  BOOST_TEST(sub.size() == 3);
  BOOST_TEST(sub.get(0).target.to_vector<int64_t>()[0] == labels[4]);
  BOOST_TEST(sub.get_batch({2, 0}).y.to_vector<int64_t>() == (std::vector<int64_t>{labels[1], labels[4]}), boost::test_tools::per_element());
  nn::DataLoader over_subset(sub, 2);
  std::vector<int64_t> seen;
  for (auto& [x, y] : over_subset)
    for (int64_t v : y.to_vector<int64_t>()) seen.push_back(v);
  BOOST_TEST(seen == (std::vector<int64_t>{labels[4], labels[1], labels[1]}), boost::test_tools::per_element());

  // Errors name the problem and the sample.
  tt::check_throws([&] { ds.get(5); }, {"TensorDataset::get", "index 5", "5 samples"}, "get out of range");
  tt::check_throws([&] { ds.get(-1); }, {"TensorDataset::get", "index -1"}, "negative index");
  tt::check_throws([&] { ds.get_batch({0, 7}); }, {"get_batch", "index 7"}, "get_batch out of range");
  tt::check_throws([&] { nn::Subset(shared, {0, 5}); }, {"Subset", "indices[1] = 5", "5 samples"}, "subset index");
  tt::check_throws([&] { sub.get(3); }, {"Subset::get", "index 3"}, "subset get");
  tt::check_throws([&] { nn::Subset(nullptr, {}); }, {"Subset", "null"}, "null dataset");
  Tensor a = Tensor::zeros({2, 3}, DType::f32, Device::cpu()), b = Tensor::zeros({3, 2}, DType::f32, Device::cpu());
  Tensor c = Tensor::zeros({2, 3}, DType::f64, Device::cpu()), t = Tensor::zeros({}, DType::i64, Device::cpu());
  tt::check_throws([&] { nn::collate({}); }, {"collate", "no samples"}, "empty");
  tt::check_throws([&] { nn::collate({{a, t}, {b, t}}); }, {"collate", "sample 1 data", "[3, 2]", "[2, 3]", "equal shapes"},
                   "shape mismatch");
  tt::check_throws([&] { nn::collate({{a, t}, {a, t}, {c, t}}); }, {"collate", "sample 2 data", "dtype", "f64", "f32"},
                   "dtype mismatch");
  tt::check_throws([&] { nn::collate({{a, t}, {a, Tensor()}}); }, {"collate", "sample 1", "target"}, "missing target");
  tt::check_throws([&] { nn::collate({{a, t}, {Tensor(), t}}); }, {"collate", "sample 1", "no data"}, "missing data");
}

BOOST_AUTO_TEST_CASE(samplers_sequential_random_batch) {
  nn::SequentialSampler seq(7);
  BOOST_TEST(seq.size() == 7);
  BOOST_TEST(seq.indices(3) == iota_vec(7), boost::test_tools::per_element());

  // Without replacement: a permutation per epoch, the same for the same (seed, epoch).
  nn::RandomSampler r(50, false, std::nullopt, 9), r_same(50, false, std::nullopt, 9), r_other(50, false, std::nullopt, 10);
  BOOST_TEST(r.size() == 50);
  BOOST_TEST(is_permutation_of_range(r.indices(0), 50));
  BOOST_TEST(r.indices(0) == r_same.indices(0));
  BOOST_TEST(r.indices(1) == r_same.indices(1));
  BOOST_TEST(r.indices(0) != r.indices(1));
  BOOST_TEST(r.indices(0) != r_other.indices(0));
  BOOST_TEST(r.indices(0) != iota_vec(50));
  // num_samples beyond n: whole permutations, then the start of another (PyTorch's rule).
  nn::RandomSampler longer(10, false, 25, 1);
  auto li = longer.indices(0);
  BOOST_TEST(li.size() == 25u);
  BOOST_TEST(is_permutation_of_range({li.begin(), li.begin() + 10}, 10));
  BOOST_TEST(is_permutation_of_range({li.begin() + 10, li.begin() + 20}, 10));
  std::set<int64_t> tail(li.begin() + 20, li.end());
  BOOST_TEST(tail.size() == 5u);  // the start of a permutation: no repeats
  nn::RandomSampler shorter(10, false, 4, 1);
  auto si = shorter.indices(0);
  BOOST_TEST(std::set<int64_t>(si.begin(), si.end()).size() == 4u);
  // With replacement: num_samples draws in range, with repeats, roughly uniform.
  nn::RandomSampler with(6, true, 6000, 3);
  auto wi = with.indices(0);
  BOOST_TEST(wi.size() == 6000u);
  std::vector<int> counts(6, 0);
  for (int64_t i : wi) {
    BOOST_TEST_REQUIRE((i >= 0 && i < 6));
    counts[size_t(i)]++;
  }
  for (int c : counts) BOOST_TEST(std::abs(c - 1000) < 150);
  BOOST_TEST(with.indices(0) == nn::RandomSampler(6, true, 6000, 3).indices(0));
  tt::check_throws([&] { nn::RandomSampler(5, false, 0); }, {"RandomSampler", "num_samples should be a positive integer",
                                                             "num_samples=0"}, "num_samples 0");
  tt::check_throws([&] { nn::RandomSampler(0); }, {"RandomSampler", "num_samples=0"}, "empty dataset");
  tt::check_throws([&] { nn::RandomSampler(-2, false, 3); }, {"RandomSampler", "non-negative", "-2"}, "negative size");

  // BatchSampler: groups in order, the last batch short unless drop_last.
  auto base = std::make_shared<nn::SequentialSampler>(10);
  nn::BatchSampler keep(base, 4, false), drop(base, 4, true);
  BOOST_TEST(keep.size() == 3);
  BOOST_TEST(drop.size() == 2);
  auto kb = keep.batches(0);
  BOOST_TEST_REQUIRE(kb.size() == 3u);
  BOOST_TEST(kb[2] == (std::vector<int64_t>{8, 9}), boost::test_tools::per_element());
  BOOST_TEST(drop.batches(0).size() == 2u);
  BOOST_TEST(drop.batches(0)[1] == (std::vector<int64_t>{4, 5, 6, 7}), boost::test_tools::per_element());
  tt::check_throws([&] { nn::BatchSampler(base, 0, false); }, {"BatchSampler", "batch_size should be a positive integer",
                                                                "batch_size=0"}, "batch size 0");
  tt::check_throws([&] { nn::BatchSampler(nullptr, 2, false); }, {"BatchSampler", "null"}, "null sampler");
}

BOOST_AUTO_TEST_CASE(weighted_random_sampler) {
  std::vector<double> w = {1, 2, 0, 7};
  // With replacement: frequencies follow the weights; a zero weight is never drawn.
  nn::WeightedRandomSampler with(w, 20000, true, 5);
  BOOST_TEST(with.size() == 20000);
  std::vector<double> freq(4, 0);
  for (int64_t i : with.indices(0)) freq.at(size_t(i)) += 1.0 / 20000;
  BOOST_TEST(freq[2] == 0.0);
  for (size_t i = 0; i < 4; ++i) BOOST_TEST(std::abs(freq[i] - w[i] / 10) < 0.015, "index " << i << " freq " << freq[i]);
  BOOST_TEST(with.indices(1) != with.indices(0));
  BOOST_TEST(with.indices(1) == nn::WeightedRandomSampler(w, 20000, true, 5).indices(1));
  // Without replacement: distinct indices of positive weight; the first draw follows the weights.
  nn::WeightedRandomSampler without(w, 3, false, 5);
  std::vector<double> first(4, 0);
  const int epochs = 4000;
  for (int e = 0; e < epochs; ++e) {
    auto idx = without.indices(e);
    BOOST_TEST_REQUIRE(idx.size() == 3u);
    BOOST_TEST_REQUIRE(std::set<int64_t>(idx.begin(), idx.end()).size() == 3u);
    BOOST_TEST_REQUIRE((std::find(idx.begin(), idx.end(), 2) == idx.end()));
    first[size_t(idx[0])] += 1.0 / epochs;
  }
  for (size_t i = 0; i < 4; ++i) BOOST_TEST(std::abs(first[i] - w[i] / 10) < 0.03, "index " << i << " first " << first[i]);
  // Second draw given the first: P(second = 1 | first = 3) = 2 / 3.
  int given = 0, second_one = 0;
  for (int e = 0; e < epochs; ++e) {
    auto idx = without.indices(e);
    if (idx[0] == 3) given++, second_one += idx[1] == 1;
  }
  BOOST_TEST(std::abs(double(second_one) / given - 2.0 / 3) < 0.04);

  tt::check_throws([&] { nn::WeightedRandomSampler(w, 0); }, {"WeightedRandomSampler", "num_samples=0"}, "num_samples 0");
  tt::check_throws([&] { nn::WeightedRandomSampler({}, 3); }, {"WeightedRandomSampler", "weights is empty"}, "empty");
  tt::check_throws([&] { nn::WeightedRandomSampler({1, -1}, 3); }, {"WeightedRandomSampler", "weights[1] = -1"}, "negative");
  tt::check_throws([&] { nn::WeightedRandomSampler({1, NAN}, 3); }, {"WeightedRandomSampler", "weights[1]"}, "nan");
  tt::check_throws([&] { nn::WeightedRandomSampler({0, 0}, 3); }, {"WeightedRandomSampler", "sum to 0"}, "all zero");
  tt::check_throws([&] { nn::WeightedRandomSampler(w, 4, false); }, {"WeightedRandomSampler", "cannot draw 4",
                                                                     "3 positive"}, "too many without replacement");
}

BOOST_AUTO_TEST_CASE(distributed_sampler_matches_pytorch) {
  // torch.utils.data.DistributedSampler(range(n), num_replicas, rank, shuffle=False, drop_last)
  // for every rank, listed by scripts/make_data_fixtures.py (torch 2.x).
  struct Case {
    int64_t n, replicas;
    bool drop_last;
    std::vector<std::vector<int64_t>> per_rank;
  };
  const std::vector<Case> cases = {
    {10, 3, false, {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}}},
    {10, 3, true, {{0, 3, 6}, {1, 4, 7}, {2, 5, 8}}},
    {10, 4, false, {{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}}},
    {10, 4, true, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
    {10, 5, false, {{0, 5}, {1, 6}, {2, 7}, {3, 8}, {4, 9}}},
    {10, 5, true, {{0, 5}, {1, 6}, {2, 7}, {3, 8}, {4, 9}}},
    {7, 3, false, {{0, 3, 6}, {1, 4, 0}, {2, 5, 1}}},
    {7, 3, true, {{0, 3}, {1, 4}, {2, 5}}},
    {7, 4, false, {{0, 4}, {1, 5}, {2, 6}, {3, 0}}},
    {7, 4, true, {{0}, {1}, {2}, {3}}},
    {7, 5, false, {{0, 5}, {1, 6}, {2, 0}, {3, 1}, {4, 2}}},
    {7, 5, true, {{0}, {1}, {2}, {3}, {4}}},
    {2, 3, false, {{0}, {1}, {0}}},
    {2, 3, true, {{}, {}, {}}},
    {2, 4, false, {{0}, {1}, {0}, {1}}},
    {2, 4, true, {{}, {}, {}, {}}},
    {2, 5, false, {{0}, {1}, {0}, {1}, {0}}},
    {2, 5, true, {{}, {}, {}, {}, {}}},
    {12, 3, false, {{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}}},
    {12, 3, true, {{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}}},
    {12, 4, false, {{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}},
    {12, 4, true, {{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}},
    {12, 5, false, {{0, 5, 10}, {1, 6, 11}, {2, 7, 0}, {3, 8, 1}, {4, 9, 2}}},
    {12, 5, true, {{0, 5}, {1, 6}, {2, 7}, {3, 8}, {4, 9}}},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("n " << c.n << " replicas " << c.replicas << " drop_last " << c.drop_last) {
      for (int64_t rank = 0; rank < c.replicas; ++rank) {
        nn::DistributedSampler s(c.n, c.replicas, rank, /*shuffle=*/false, 0, c.drop_last);
        BOOST_TEST(s.size() == int64_t(c.per_rank[size_t(rank)].size()));
        BOOST_TEST(s.indices(0) == c.per_rank[size_t(rank)], boost::test_tools::per_element());
      }
    }
  }
  // Shuffled: the same assignment applied to the permutation of seed + epoch; set_epoch changes
  // it, the DataLoader's epoch does not; the ranks together cover every sample.
  for (bool drop_last : {false, true}) {
    const int64_t n = 23, replicas = 4;
    std::vector<int64_t> covered;
    for (int64_t rank = 0; rank < replicas; ++rank) {
      nn::DistributedSampler s(n, replicas, rank, true, 11, drop_last);
      s.set_epoch(3);
      auto perm = nn::random_permutation(n, 11 + 3, 0);
      int64_t total = s.total_size();
      BOOST_TEST(total == (drop_last ? 20 : 24));
      for (int64_t i = 0; perm.size() < size_t(total); ++i) perm.push_back(perm[size_t(i)]);
      perm.resize(size_t(total));
      std::vector<int64_t> expected;
      for (int64_t i = rank; i < total; i += replicas) expected.push_back(perm[size_t(i)]);
      BOOST_TEST(s.indices(0) == expected, boost::test_tools::per_element());
      BOOST_TEST(s.indices(7) == expected, boost::test_tools::per_element());
      covered.insert(covered.end(), expected.begin(), expected.end());
      s.set_epoch(4);
      BOOST_TEST(s.indices(0) != expected);
    }
    std::set<int64_t> distinct(covered.begin(), covered.end());
    BOOST_TEST(distinct.size() == size_t(drop_last ? 20 : 23));
  }
  tt::check_throws([&] { nn::DistributedSampler(10, 3, 3); }, {"DistributedSampler", "Invalid rank 3", "[0, 2]"}, "rank too big");
  tt::check_throws([&] { nn::DistributedSampler(10, 3, -1); }, {"DistributedSampler", "Invalid rank -1"}, "negative rank");
  tt::check_throws([&] { nn::DistributedSampler(10, 0, 0); }, {"DistributedSampler", "num_replicas=0"}, "no replicas");
}

BOOST_AUTO_TEST_CASE(loader_workers_deliver_every_sample_once_in_order) {
  const int64_t n = 37;
  for (int workers : {0, 1, 3}) {
    for (int prefetch : {1, 3}) {
      if (workers == 0 && prefetch != 1) continue;
      BOOST_TEST_CONTEXT("num_workers " << workers << " prefetch_factor " << prefetch) {
        nn::DataLoaderOptions o{.batch_size = 4, .shuffle = true, .num_workers = workers, .seed = 17};
        if (workers > 0) o.prefetch_factor = prefetch;
        auto ds = std::make_shared<SlowDataset>(n);
        nn::DataLoader loader(ds, o);
        BOOST_TEST(loader.size() == 10);
        for (int epoch = 0; epoch < 2; ++epoch) {
          std::vector<int64_t> sizes;
          auto seen = epoch_targets(loader, &sizes);
          BOOST_TEST(seen == loader.order(epoch), boost::test_tools::per_element());  // the sampler's order
          BOOST_TEST(is_permutation_of_range(seen, n));                               // every sample once
          BOOST_TEST(sizes.back() == 1);
          // The order is the RandomSampler's of (seed, epoch), whatever the workers.
          BOOST_TEST(seen == nn::RandomSampler(n, false, std::nullopt, 17).indices(epoch), boost::test_tools::per_element());
        }
        BOOST_TEST(ds->calls.load() == 2 * n);
      }
    }
  }
  // A user sampler, a batch sampler and a collate function.
  auto ds = std::make_shared<SlowDataset>(20, -1, false);
  auto weighted = std::make_shared<nn::WeightedRandomSampler>(std::vector<double>(20, 1.0), 30, true, 2);
  nn::DataLoader by_sampler(ds, {.batch_size = 8, .sampler = weighted, .num_workers = 2, .drop_last = true});
  BOOST_TEST(by_sampler.size() == 3);
  auto got = epoch_targets(by_sampler);
  auto expected = weighted->indices(0);
  BOOST_TEST(got == std::vector<int64_t>(expected.begin(), expected.begin() + 24), boost::test_tools::per_element());

  auto batches = std::make_shared<nn::BatchSampler>(std::make_shared<nn::SequentialSampler>(20), 6, false);
  std::atomic<int> collated{0};
  // The collate function runs in the workers; it receives the batch's samples in order.
  auto tens = [&](const std::vector<nn::Example>& samples) {
    ++collated;
    nn::Batch b = nn::collate(samples);
    std::vector<int64_t> y;
    for (const auto& e : samples) y.push_back(e.target.to_vector<int64_t>()[0] * 10 + 1);
    b.y = Tensor::from_vector(y, {int64_t(y.size())}, Device::cpu());
    return b;
  };
  nn::DataLoader custom(ds, {.batch_sampler = batches, .num_workers = 2, .collate = tens});
  BOOST_TEST(custom.size() == 4);
  BOOST_TEST(custom.batch_size() == 6);
  std::vector<int64_t> ys;
  for (auto& [x, y] : custom) {
    auto xv = x.to_vector<float>();
    auto yv = y.to_vector<int64_t>();
    for (size_t r = 0; r < yv.size(); ++r) BOOST_TEST(yv[r] == int64_t(xv[3 * r]) * 10 + 1);
    ys.insert(ys.end(), yv.begin(), yv.end());
  }
  BOOST_TEST(collated.load() == 4);
  std::vector<int64_t> expected_y;
  for (int64_t i = 0; i < 20; ++i) expected_y.push_back(i * 10 + 1);
  BOOST_TEST(ys == expected_y, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(loader_worker_errors_reach_the_consumer) {
  for (int workers : {0, 1, 3}) {
    for (bool custom_collate : {false, true}) {
      BOOST_TEST_CONTEXT("num_workers " << workers << " custom collate " << custom_collate) {
        nn::DataLoaderOptions o{.batch_size = 5, .num_workers = workers};
        if (custom_collate) o.collate = [](const std::vector<nn::Example>& s) { return nn::collate(s); };
        nn::DataLoader loader(std::make_shared<SlowDataset>(30, /*fail_at=*/13), o);
        int64_t delivered = 0;
        std::string msg = tt::check_throws(
            [&] {
              for (auto& [x, y] : loader) delivered += y.size(0);
            },
            {"DataLoader", "sample 13", "batch 2 of epoch 0", "sample 13 is corrupt"}, "failing sample");
        if (workers > 0) BOOST_TEST(msg.find("worker") != std::string::npos, msg);
        BOOST_TEST(delivered == 10);  // the batches before the failing one arrived, in order
        // The next epoch runs again (and fails again at the same sample).
        tt::check_throws([&] { for (auto& b : loader) (void)b; }, {"sample 13", "epoch 1"}, "second epoch");
      }
    }
  }
  // A batch-level failure (samples of different shapes) names the batch and the problem.
  class Ragged : public nn::Dataset {
   public:
    int64_t size() const override { return 6; }
    nn::Example get(int64_t i) const override {
      return nn::Example{Tensor::zeros({i < 4 ? 2 : 3}, DType::f32, Device::cpu()), Tensor()};
    }
  };
  for (int workers : {0, 2}) {
    nn::DataLoader loader(Ragged{}, {.batch_size = 3, .num_workers = workers});
    tt::check_throws([&] { for (auto& b : loader) (void)b; },
                     {"DataLoader", "batch 1 of epoch 0", "samples [3, 4, 5]", "collate", "sample 1 data", "[3]", "[2]"},
                     "ragged batch");
  }
}

BOOST_AUTO_TEST_CASE(loader_workers_stop_early) {
  auto ds = std::make_shared<SlowDataset>(400);
  for (int workers : {1, 3}) {
    // break after two batches: the workers stop and are joined; few samples were loaded beyond.
    for (int round = 0; round < 5; ++round) {
      nn::DataLoader loader(ds, {.batch_size = 4, .shuffle = true, .num_workers = workers, .seed = uint64_t(round)});
      int batches = 0;
      for (auto& b : loader) {
        (void)b;
        if (++batches == 2) break;
      }
      BOOST_TEST(batches == 2);
    }
    // Iterations begun and dropped at once, many times (workers mid-batch).
    nn::DataLoader loader(ds, {.batch_size = 2, .num_workers = workers, .prefetch_factor = 1});
    for (int round = 0; round < 20; ++round) {
      auto it = loader.begin();
      BOOST_TEST((it != loader.end()));
    }
    // The loader destroyed while an iteration lives: the iteration ends cleanly.
    auto owned = std::make_unique<nn::DataLoader>(ds, nn::DataLoaderOptions{.batch_size = 4, .num_workers = workers});
    auto it = owned->begin();
    BOOST_TEST((*it).x.size(0) == 4);
    owned.reset();
    int more = 0;
    for (; it != std::default_sentinel; ++it) ++more;
    BOOST_TEST(more <= workers * 2 + 1);  // at most the batches already loaded
  }
  // The queue is bounded: with the consumer idle, workers load num_workers * prefetch_factor batches.
  auto counted = std::make_shared<SlowDataset>(200, -1, false);
  nn::DataLoader loader(counted, {.batch_size = 5, .num_workers = 2, .prefetch_factor = 2});
  auto it = loader.begin();  // delivers batch 0
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  BOOST_TEST(counted->calls.load() == (1 + 4) * 5);  // batch 0 and 4 ahead
}

BOOST_AUTO_TEST_CASE(loader_bad_arguments) {
  auto ds = std::make_shared<SlowDataset>(10, -1, false);
  auto sampler = std::make_shared<nn::SequentialSampler>(10);
  auto batches = std::make_shared<nn::BatchSampler>(sampler, 2, false);
  tt::check_throws([&] { nn::DataLoader(ds, {.num_workers = -1}); }, {"DataLoader", "num_workers", "non-negative", "-1"},
                   "negative workers");
  tt::check_throws([&] { nn::DataLoader(ds, {.prefetch_factor = 2}); },
                   {"DataLoader", "prefetch_factor", "num_workers > 0"}, "prefetch without workers");
  tt::check_throws([&] { nn::DataLoader(ds, {.num_workers = 1, .prefetch_factor = 0}); },
                   {"DataLoader", "prefetch_factor should be a positive integer", "prefetch_factor=0"}, "prefetch 0");
  tt::check_throws([&] { nn::DataLoader(ds, {.batch_size = 2, .batch_sampler = batches}); },
                   {"DataLoader", "batch_sampler option is mutually exclusive with batch_size"}, "batch_size and batch_sampler");
  tt::check_throws([&] { nn::DataLoader(ds, {.shuffle = true, .batch_sampler = batches}); },
                   {"batch_sampler option is mutually exclusive"}, "shuffle and batch_sampler");
  tt::check_throws([&] { nn::DataLoader(ds, {.sampler = sampler, .batch_sampler = batches}); },
                   {"batch_sampler option is mutually exclusive"}, "sampler and batch_sampler");
  tt::check_throws([&] { nn::DataLoader(ds, {.batch_sampler = batches, .drop_last = true}); },
                   {"batch_sampler option is mutually exclusive"}, "drop_last and batch_sampler");
  tt::check_throws([&] { nn::DataLoader(ds, {.shuffle = true, .sampler = sampler}); },
                   {"DataLoader", "sampler option is mutually exclusive with shuffle"}, "shuffle and sampler");
  tt::check_throws([&] { nn::DataLoader(ds, {.batch_size = 0}); }, {"DataLoader", "batch_size=0"}, "batch size 0");
  tt::check_throws([&] { nn::DataLoader(std::shared_ptr<const nn::Dataset>(), {}); }, {"DataLoader", "null"}, "null dataset");
  nn::DataLoader defaults(ds);
  BOOST_TEST(defaults.batch_size() == 1);  // PyTorch's default
  BOOST_TEST(defaults.size() == 10);
  BOOST_TEST(defaults.num_workers() == 0);
}

BOOST_AUTO_TEST_CASE(loader_pin_memory_and_device_prefetcher) {
  auto ds = counting_dataset(23);
  // pin_memory: the same batches; pinned exactly where a CUDA device makes pinning meaningful.
  for (int workers : {0, 2}) {
    nn::DataLoader pinned(ds, {.batch_size = 5, .shuffle = true, .num_workers = workers, .pin_memory = true, .seed = 4});
    int64_t batches = 0;
    for (auto& [x, y] : pinned) {
      BOOST_TEST(nn::is_pinned(x) == nn::pinned_memory_available());
      BOOST_TEST(nn::is_pinned(y) == nn::pinned_memory_available());
      BOOST_TEST(x.device().is_cpu());
      ++batches;
    }
    BOOST_TEST(batches == 5);
    nn::DataLoader again(ds, {.batch_size = 5, .shuffle = true, .num_workers = workers, .pin_memory = true, .seed = 4});
    BOOST_TEST(epoch_targets(again) == again.order(0), boost::test_tools::per_element());
  }
  Tensor host = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, Device::cpu());
  Tensor p = nn::pin_memory(host);
  BOOST_TEST(p.to_vector<float>() == (std::vector<float>{1, 2, 3, 4, 5, 6}), boost::test_tools::per_element());
  BOOST_TEST(nn::is_pinned(p) == nn::pinned_memory_available());
  BOOST_TEST(!nn::is_pinned(host));
  BOOST_TEST(nn::is_pinned(nn::pin_memory(p)) == nn::pinned_memory_available());
  if (runtime::device_available(Device::cpu()))  // a strided tensor is made contiguous by a CPU kernel
    BOOST_TEST(nn::pin_memory(host.t()).to_vector<float>() == (std::vector<float>{1, 4, 2, 5, 3, 6}),
               boost::test_tools::per_element());
  tt::check_throws([&] { nn::pin_memory(Tensor()); }, {"pin_memory", "undefined"}, "undefined");

  // The prefetcher: the loader's batches, on the device, in order (a plain pass-through on cpu).
  tt::for_each_backend([&](const tt::Backend& be) {
    if (be.device.is_cuda())
      tt::check_throws([&] { nn::pin_memory(Tensor::zeros({2}, DType::f32, be.device)); }, {"pin_memory", "not a host tensor"},
                       "device tensor");
    for (int workers : {0, 2}) {
      nn::DataLoader loader(ds, {.batch_size = 4, .shuffle = true, .num_workers = workers, .pin_memory = true, .seed = 8});
      nn::DevicePrefetcher prefetcher(loader, be.device);
      for (int epoch = 0; epoch < 2; ++epoch) {
        std::vector<int64_t> seen;
        for (auto& [x, y] : prefetcher) {
          BOOST_TEST((x.device() == be.device));
          BOOST_TEST((y.device() == be.device));
          auto xv = x.to_vector<float>();
          auto yv = y.to_vector<int64_t>();
          for (size_t r = 0; r < yv.size(); ++r) BOOST_TEST(xv[3 * r + 1] == float(yv[r]) + 0.5f);
          seen.insert(seen.end(), yv.begin(), yv.end());
        }
        BOOST_TEST(seen == loader.order(epoch), boost::test_tools::per_element());
      }
      // Stopping after one batch leaves nothing behind.
      for (auto& b : prefetcher) {
        (void)b;
        break;
      }
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
