#include "nn/data.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include <zlib.h>

#include <tritium/tritium.h>

#include "ops/ops.h"

namespace tritium::nn {
namespace tl = tritium::tl;

// ---- IDX files -------------------------------------------------------------------------------------
namespace {

constexpr uint32_t kImagesMagic = 0x00000803, kLabelsMagic = 0x00000801;

// The whole (decompressed) content. gzread reads plain files as they are.
std::vector<uint8_t> read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: no such file", path);
  if (std::filesystem::is_directory(path, ec)) fail("{}: is a directory, not an IDX file", path);
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail("{}: cannot open: {}", path, std::strerror(errno));
  std::vector<uint8_t> data;
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    int got = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);
      gzclose(f);
      fail("{}: read error (corrupt or truncated gzip data?): {}", path, msg);
    }
    if (got == 0) break;
    data.insert(data.end(), chunk.begin(), chunk.begin() + got);
  }
  // A gzip stream cut short reads as a short file with Z_BUF_ERROR on close or in gzerror.
  int code = 0;
  std::string msg = gzerror(f, &code);
  if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);  // zlib prefixes the path
  int closed = gzclose(f);
  if (code != Z_OK || closed != Z_OK)
    fail("{}: truncated or corrupt gzip data ({})", path, code != Z_OK ? msg : std::string("gzclose failed"));
  return data;
}

uint32_t be32(const std::vector<uint8_t>& d, size_t at) {
  return (uint32_t(d[at]) << 24) | (uint32_t(d[at + 1]) << 16) | (uint32_t(d[at + 2]) << 8) | uint32_t(d[at + 3]);
}

// Checks the magic and the size; returns the dims of the header.
std::vector<int64_t> parse_header(const std::string& path, const std::vector<uint8_t>& d, uint32_t magic,
                                  int ndims, const char* what) {
  size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (d.size() < 4) fail("{}: truncated IDX file: {} bytes, too short for a header", path, d.size());
  uint32_t got = be32(d, 0);
  if (got != magic)
    fail("{}: wrong magic number 0x{:08x} for an IDX {} file (expected 0x{:08x})", path, got, what, magic);
  if (d.size() < header) fail("{}: truncated IDX file: {} bytes, the header needs {}", path, d.size(), header);
  std::vector<int64_t> dims;
  int64_t total = 1;
  for (int i = 0; i < ndims; ++i) {
    dims.push_back(be32(d, 4 + 4 * static_cast<size_t>(i)));
    total *= dims.back();  // each < 2^32; the product of 3 is checked below
    if (total > (int64_t(1) << 40)) fail("{}: implausible IDX dimensions", path);
  }
  size_t expected = header + static_cast<size_t>(total);
  if (d.size() < expected)
    fail("{}: truncated IDX file: {} bytes, the header announces {} {} ({} bytes)", path, d.size(), dims[0], what,
         expected);
  if (d.size() > expected)
    fail("{}: {} unexpected byte(s) after the {} {} the header announces", path, d.size() - expected, dims[0], what);
  return dims;
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  std::vector<uint8_t> d = read_file(path);
  auto dims = parse_header(path, d, kImagesMagic, 3, "images");
  IdxImages out;
  out.count = dims[0], out.rows = dims[1], out.cols = dims[2];
  out.pixels.assign(d.begin() + 16, d.end());
  return out;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  std::vector<uint8_t> d = read_file(path);
  parse_header(path, d, kLabelsMagic, 1, "labels");
  return std::vector<uint8_t>(d.begin() + 8, d.end());
}

// ---- datasets --------------------------------------------------------------------------------------

TensorDataset::TensorDataset(Tensor d, Tensor t) {
  if (!d.defined() || !t.defined()) fail("TensorDataset: data and targets must be defined tensors");
  if (!d.device().is_cpu() || !t.device().is_cpu())
    fail("TensorDataset: data ({}) and targets ({}) must be host tensors", d.str(), t.str());
  if (d.dim() < 1 || t.dim() != 1 || d.size(0) != t.size(0))
    fail("TensorDataset: data {} and targets {} must hold the same number of samples (targets 1-D)", d.str(),
         t.str());
  data = ops::contiguous(d);
  targets = ops::contiguous(t);
}

FashionMNIST::FashionMNIST(const std::string& root, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  auto find = [&](const std::string& name) {
    std::string plain = root + "/" + prefix + "-" + name;
    std::error_code ec;
    if (std::filesystem::exists(plain, ec)) return plain;
    return plain + ".gz";  // read_file names it if missing
  };
  std::string images_path = find("images-idx3-ubyte"), labels_path = find("labels-idx1-ubyte");
  IdxImages images = read_idx_images(images_path);
  std::vector<uint8_t> labels = read_idx_labels(labels_path);
  if (images.count != static_cast<int64_t>(labels.size()))
    fail("FashionMNIST: {} holds {} images but {} holds {} labels", images_path, images.count, labels_path,
         labels.size());
  if (images.rows != 28 || images.cols != 28)
    fail("FashionMNIST: {} holds {}x{} images, expected 28x28", images_path, images.rows, images.cols);
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= 10) fail("FashionMNIST: {}: label {} of sample {} is not in [0, 10)", labels_path, labels[i], i);

  int64_t n = images.count, features = images.rows * images.cols;
  // The data set lives in host memory whatever the default device; batches move (DataLoader).
  // Normalised once while loading, on the host as torchvision's transforms do: a build without
  // the CPU backend (the GPU machines) still reads its data.
  std::vector<float> pixels(images.pixels.size());
  const float mean = static_cast<float>(kMean), std = static_cast<float>(kStd);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = (static_cast<float>(images.pixels[i]) / 255.0f - mean) / std;
  data = Tensor::from_vector(pixels, {n, features}, Device::cpu());
  targets = Tensor::from_vector(std::vector<int64_t>(labels.begin(), labels.end()), {n}, Device::cpu());
}

const char* FashionMNIST::class_name(int64_t label) {
  static const char* names[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  if (label < 0 || label >= 10) fail("FashionMNIST::class_name: label {} is not in [0, 10)", label);
  return names[label];
}

// ---- DataLoader --------------------------------------------------------------------------------------

// One epoch: the producer thread assembles batches in order into a queue of at most kDepth.
struct DataLoader::Epoch {
  static constexpr size_t kDepth = 2;

  TensorDataset dataset;
  std::vector<int64_t> order;
  int64_t batch_size = 0, num_batches = 0;

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Batch> queue;
  bool stop = false, finished = false;
  std::exception_ptr error;
  std::thread thread;

  void start() {
    thread = std::thread([this] { produce(); });
  }

  ~Epoch() {
    request_stop();
    if (thread.joinable()) thread.join();
  }

  void request_stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    changed.notify_all();
  }

  Batch make_batch(int64_t b) const {
    int64_t lo = b * batch_size, hi = std::min<int64_t>(lo + batch_size, static_cast<int64_t>(order.size()));
    int64_t rows = hi - lo;
    auto gather = [&](const Tensor& src) {
      Tensor::Shape shape = src.shape();
      shape[0] = rows;
      Tensor out = Tensor::empty(shape, src.dtype(), src.device());
      size_t row_bytes = static_cast<size_t>(src.size(0) ? src.nbytes() / src.size(0) : 0);
      auto* dst = static_cast<uint8_t*>(out.raw_data());
      const auto* base = static_cast<const uint8_t*>(src.raw_data());
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(dst + r * row_bytes, base + static_cast<size_t>(order[lo + r]) * row_bytes, row_bytes);
      return out;
    };
    return Batch{gather(dataset.data), gather(dataset.targets)};
  }

  void produce() {
    try {
      for (int64_t b = 0; b < num_batches; ++b) {
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return stop || queue.size() < kDepth; });
          if (stop) return;
        }
        Batch batch = make_batch(b);  // outside the lock: this is the work that overlaps training
        {
          std::lock_guard<std::mutex> lock(mutex);
          queue.push_back(std::move(batch));
        }
        changed.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      finished = true;
    }
    changed.notify_all();
  }

  // The next batch; false at the end of the epoch or after a stop.
  bool next(Batch& out) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return stop || !queue.empty() || finished; });
    if (!queue.empty() && !stop) {
      out = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      changed.notify_all();
      return true;
    }
    if (error) {
      auto e = error;
      error = nullptr;
      std::rethrow_exception(e);
    }
    return false;
  }
};

DataLoader::DataLoader(TensorDataset dataset, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last)
    : dataset_(std::move(dataset)), batch_size_(batch_size), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
  if (batch_size <= 0) fail("DataLoader: batch_size must be positive, got {}", batch_size);
}

DataLoader::~DataLoader() {
  for (auto& weak : live_)
    if (auto epoch = weak.lock()) epoch->request_stop();
}

int64_t DataLoader::size() const {
  int64_t n = dataset_.size();
  return drop_last_ ? n / batch_size_ : tritium::cdiv(n, batch_size_);
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  std::vector<int64_t> idx(static_cast<size_t>(dataset_.size()));
  std::iota(idx.begin(), idx.end(), int64_t(0));
  if (!shuffle_) return idx;
  // Fisher-Yates with a generator seeded from (seed, epoch): the same on every platform.
  std::seed_seq seq{uint32_t(seed_), uint32_t(seed_ >> 32), uint32_t(epoch), uint32_t(uint64_t(epoch) >> 32)};
  std::mt19937_64 rng(seq);
  for (size_t i = idx.size(); i > 1; --i) {
    size_t j = static_cast<size_t>(rng() % i);
    std::swap(idx[i - 1], idx[j]);
  }
  return idx;
}

DataLoader::iterator DataLoader::begin() {
  auto epoch = std::make_shared<Epoch>();
  epoch->dataset = dataset_;
  epoch->order = order(epoch_++);
  epoch->batch_size = batch_size_;
  epoch->num_batches = size();
  std::erase_if(live_, [](const std::weak_ptr<Epoch>& w) { return w.expired(); });
  live_.push_back(epoch);
  epoch->start();
  return iterator(std::move(epoch));
}

DataLoader::iterator::iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)), done_(false) {
  ++*this;
}

DataLoader::iterator& DataLoader::iterator::operator++() {
  if (done_ || !epoch_) {
    done_ = true;
    return *this;
  }
  current_ = Batch{};  // release the previous batch before waiting
  if (!epoch_->next(current_)) {
    done_ = true;
    epoch_.reset();  // joins the thread
  }
  return *this;
}

}  // namespace tritium::nn
