// IDX reading (plain and gzip; errors for missing, corrupt and truncated files), Fashion-MNIST,
// and the DataLoader (batching, drop_last, seeded shuffling, the background thread's shutdown).
#include <algorithm>
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

BOOST_AUTO_TEST_SUITE_END()
