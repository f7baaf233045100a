#include "nn/dataset.h"

#include <cstring>

#include "common/error.h"
#include "ops/ops.h"

namespace tritium::nn {

namespace {

std::string shape_str(const Tensor::Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Stacks one field (data or target) of every sample along a new leading dim. A copy of bytes:
// the samples are host tensors and the batch is a fresh host tensor, so no kernel is needed.
Tensor stack_field(const std::vector<Example>& samples, Tensor Example::*field, const char* name) {
  const Tensor& first = samples[0].*field;
  Tensor::Shape shape = first.shape();
  shape.insert(shape.begin(), static_cast<int64_t>(samples.size()));
  Tensor out = Tensor::empty(shape, first.dtype(), Device::cpu());
  const size_t bytes = static_cast<size_t>(first.nbytes());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor& t = samples[i].*field;
    if (!t.device().is_cpu()) fail("collate: sample {} {} is on {}; samples must be host tensors", i, name, t.device().str());
    if (t.shape() != first.shape())
      fail("collate: sample {} {} has shape {} but sample 0's has {}; samples of a batch must have equal shapes", i,
           name, shape_str(t.shape()), shape_str(first.shape()));
    if (t.dtype() != first.dtype())
      fail("collate: sample {} {} has dtype {} but sample 0's has {}", i, name, dtype_name(t.dtype()),
           dtype_name(first.dtype()));
    Tensor c = t.is_contiguous() ? t : ops::contiguous(t);
    std::memcpy(dst + i * bytes, c.raw_data(), bytes);
  }
  return out;
}

// Rows `indices` of a contiguous host tensor [N, ...], gathered into a new [len(indices), ...].
Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& indices) {
  Tensor::Shape shape = src.shape();
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor out = Tensor::empty(shape, src.dtype(), Device::cpu());
  const size_t row_bytes = static_cast<size_t>(src.size(0) ? src.nbytes() / src.size(0) : 0);
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  const auto* base = static_cast<const uint8_t*>(src.raw_data());
  for (size_t r = 0; r < indices.size(); ++r)
    std::memcpy(dst + r * row_bytes, base + static_cast<size_t>(indices[r]) * row_bytes, row_bytes);
  return out;
}

void check_index(const char* who, int64_t index, int64_t size) {
  if (index < 0 || index >= size)
    fail("{}: index {} is out of range for a dataset of {} samples", who, index, size);
}

}  // namespace

Batch collate(const std::vector<Example>& samples) {
  if (samples.empty()) fail("collate: no samples to stack");
  for (size_t i = 0; i < samples.size(); ++i)
    if (!samples[i].data.defined()) fail("collate: sample {} has no data (an undefined tensor)", i);
  const bool targets = samples[0].target.defined();
  for (size_t i = 1; i < samples.size(); ++i)
    if (samples[i].target.defined() != targets)
      fail("collate: sample {} {} a target but sample 0 {}; either every sample has one or none", i,
           targets ? "has no" : "has", targets ? "has one" : "has none");
  Batch batch;
  batch.x = stack_field(samples, &Example::data, "data");
  if (targets) batch.y = stack_field(samples, &Example::target, "target");
  return batch;
}

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Example> samples;
  samples.reserve(indices.size());
  for (int64_t i : indices) samples.push_back(get(i));
  return collate(samples);
}

// ---- TensorDataset -------------------------------------------------------------------------------

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

Example TensorDataset::get(int64_t index) const {
  check_index("TensorDataset::get", index, size());
  auto row = [&](const Tensor& t) {
    Tensor::Shape shape(t.shape().begin() + 1, t.shape().end()), strides(t.strides().begin() + 1, t.strides().end());
    return t.as_strided(shape, strides, t.storage_offset() + index * t.stride(0));
  };
  return Example{row(data), row(targets)};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  if (indices.empty()) fail("TensorDataset::get_batch: no indices");
  for (int64_t i : indices) check_index("TensorDataset::get_batch", i, size());
  return Batch{gather_rows(data, indices), gather_rows(targets, indices)};
}

// ---- Subset -----------------------------------------------------------------------------------------

Subset::Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  if (!dataset_) fail("Subset: the dataset is null");
  const int64_t n = dataset_->size();
  for (size_t i = 0; i < indices_.size(); ++i)
    if (indices_[i] < 0 || indices_[i] >= n)
      fail("Subset: indices[{}] = {} is out of range for a dataset of {} samples", i, indices_[i], n);
}

Example Subset::get(int64_t index) const {
  check_index("Subset::get", index, size());
  return dataset_->get(indices_[static_cast<size_t>(index)]);
}

Batch Subset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> inner;
  inner.reserve(indices.size());
  for (int64_t i : indices) {
    check_index("Subset::get_batch", i, size());
    inner.push_back(indices_[static_cast<size_t>(i)]);
  }
  return dataset_->get_batch(inner);
}

}  // namespace tritium::nn
