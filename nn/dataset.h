// Datasets as torch.utils.data's map-style ones: a size and get(index) -> one sample, plus
// collate, which stacks samples into a batch.
//
// A sample is a type-erased Example {data, target} of tensors rather than a template parameter
// (libtorch's Dataset<Self, Example<Data, Target>>): the samplers, the DataLoader and its worker
// threads then stay ordinary (non-template) code in one .cpp, a user dataset is one small class
// with two virtual functions, and every workload here (images and labels, token windows and their
// shifted targets) is a pair of tensors. A dataset without targets leaves `target` undefined.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

struct Example {
  Tensor data, target;  // target may be undefined (unsupervised data)
};

struct Batch {
  Tensor x, y;  // x: the samples' data stacked [B, ...]; y: their targets stacked (or undefined)
};

// Stacks samples into a batch: x = stack of the data, y = stack of the targets. Every sample's
// data must have the same shape and dtype (likewise the targets), live on the host, and either
// all samples have a target or none. Errors name the sample and what differs.
Batch collate(const std::vector<Example>& samples);
using CollateFn = std::function<Batch(const std::vector<Example>& samples)>;

// A map-style dataset. get() is called from the DataLoader's worker threads concurrently, so it
// must be safe to call from several threads at once (const and free of unsynchronised state).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example get(int64_t index) const = 0;
  // The batch of samples `indices`, collated (PyTorch's __getitems__): the DataLoader calls this
  // when no collate function is given, so a dataset can fetch a batch in one go. The default
  // gets each sample and collates them.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
};

// Samples are rows: data [N, ...] and targets [N] (host tensors, contiguous).
class TensorDataset : public Dataset {
 public:
  Tensor data, targets;
  TensorDataset() = default;
  TensorDataset(Tensor data, Tensor targets);  // errors: undefined, not host, count mismatch
  int64_t size() const override { return data.defined() ? data.size(0) : 0; }
  Example get(int64_t index) const override;  // views of row `index`; out of range: an error
  Batch get_batch(const std::vector<int64_t>& indices) const override;  // gathers rows directly
};

// The samples of `dataset` at `indices` (PyTorch's Subset), in that order; an index outside the
// dataset is an error at construction.
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::vector<int64_t> indices_;
};

}  // namespace tritium::nn
