// Data: IDX files (the MNIST family's format) and Fashion-MNIST; this header also brings the
// data pipeline (datasets, samplers, the DataLoader and its workers, pinned memory and the
// device prefetcher), as torch.utils.data. docs/data.md describes it.
//
//   nn::FashionMNIST train(nn::FashionMNIST::default_root(), /*train=*/true);
//   nn::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 1, .seed = 0});
//   for (auto& [x, y] : loader) { ... }       // x [B, 784] f32, y [B] i64
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "nn/data_loader.h"
#include "nn/dataset.h"
#include "nn/device_prefetcher.h"
#include "nn/pinned_memory.h"
#include "nn/sampler.h"
#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

// ---- IDX files -------------------------------------------------------------------------------------
// Big-endian header: magic 0x00000803 (u8 images: count, rows, cols) or 0x00000801 (u8 labels:
// count), then the bytes. Files compressed with gzip (".gz" or not: the content decides) are
// read through zlib. A missing or unreadable file, a wrong magic, a truncated file or trailing
// data is a tritium::Error naming the path and what is wrong.
struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};
IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);

// ---- datasets --------------------------------------------------------------------------------------
// Fashion-MNIST from `root` ({train,t10k}-{images-idx3,labels-idx1}-ubyte, optionally .gz):
// data [N, 784] f32 normalised as (x / 255 - 0.2860) / 0.3530, targets [N] i64 in [0, 10).
// Train: 60000 samples, test: 10000. Inconsistent image and label counts are an error.
class FashionMNIST : public TensorDataset {
 public:
  static constexpr double kMean = 0.2860, kStd = 0.3530;
  FashionMNIST(const std::string& root, bool train);
  // Where Debian's dataset-fashion-mnist package installs the files.
  static std::string default_root() { return "/usr/share/datasets/fashion-mnist"; }
  static const char* class_name(int64_t label);  // "T-shirt/top", "Trouser", ...
};

}  // namespace tritium::nn
