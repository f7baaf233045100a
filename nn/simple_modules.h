// torch.nn's argument-light modules that are not activations: Identity, Flatten, Unflatten,
// Softmax, LogSoftmax and Dropout2d (channel-wise dropout). str() is PyTorch's repr.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"

namespace tritium::nn {

class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  // Any number of inputs, returned as they came.
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override { return inputs; }
  std::string type_name() const override { return "Identity"; }
};

// flatten(x, start_dim, end_dim): a view where the strides allow.
class Flatten : public Module {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Flatten"; }
  int start_dim, end_dim;
};

// unflatten(x, dim, sizes): dim becomes `sizes` (one of them may be -1).
class Unflatten : public Module {
 public:
  Unflatten(int dim, std::vector<int64_t> unflattened_size);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Unflatten"; }
  int dim;
  std::vector<int64_t> unflattened_size;
};

// The dim is required (PyTorch's dim=None picks one by an old rule and warns).
class Softmax : public Module {
 public:
  explicit Softmax(int dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Softmax"; }
  int dim;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "LogSoftmax"; }
  int dim;
};

// In training mode zeroes whole channels (x[n, c, ...]) with probability p and scales the rest
// by 1/(1-p); the identity in eval mode. Input of at least 2 dims ([N, C, H, W], or [N, C, L] as
// PyTorch treats 3-D input); the mask, one value per (n, c), is drawn from `gen` (which must
// outlive the module) and multiplies x by broadcasting, so the gradient is the same mask.
class Dropout2d : public Module {
 public:
  explicit Dropout2d(double p = 0.5, Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Dropout2d"; }
  double p;

 private:
  Generator* gen_;
};

// torch.nn.functional.dropout2d (the function Dropout2d calls).
Tensor dropout2d(const Tensor& x, double p, bool training, Generator& gen = ops::default_generator());

}  // namespace tritium::nn
