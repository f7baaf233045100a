// The C++ spelling of x[...] (libtorch's at::indexing): Tensor::index({...}) and
// Tensor::index_put_({...}, values) take a list of TensorIndex, each an integer (select), a
// Slice (start, stop, step; None for an open end), None (a new dim of size 1), Ellipsis (the
// dims not named), a C++ bool (true: a new dim; false: a new empty dim), or a tensor (integer:
// advanced indexing; bool: a mask). PyTorch's rules: docs/ops.md, "Indexing".
//
//   using namespace tritium::indexing;
//   y = x.index({Slice(1, None), 0, None, Ellipsis, idx});   // x[1:, 0, None, ..., idx]
//   x.index_put_({mask}, 0.0);                                // x[mask] = 0
#pragma once
#include <cstdint>
#include <optional>
#include <type_traits>
#include <variant>

#include "runtime/tensor.h"

namespace tritium::indexing {

inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  Slice(std::optional<int64_t> start_ = std::nullopt, std::optional<int64_t> stop_ = std::nullopt, int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};

class TensorIndex {
 public:
  TensorIndex(std::nullopt_t) : value_(std::nullopt) {}
  TensorIndex(EllipsisIndexType) : value_(EllipsisIndexType{}) {}
  TensorIndex(Slice s) : value_(s) {}
  TensorIndex(bool b) : value_(b) {}
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  TensorIndex(T i) : value_(static_cast<int64_t>(i)) {}
  TensorIndex(runtime::Tensor t) : value_(std::move(t)) {}

  bool is_none() const { return std::holds_alternative<std::nullopt_t>(value_); }
  bool is_ellipsis() const { return std::holds_alternative<EllipsisIndexType>(value_); }
  bool is_integer() const { return std::holds_alternative<int64_t>(value_); }
  bool is_boolean() const { return std::holds_alternative<bool>(value_); }
  bool is_slice() const { return std::holds_alternative<Slice>(value_); }
  bool is_tensor() const { return std::holds_alternative<runtime::Tensor>(value_); }
  int64_t integer() const { return std::get<int64_t>(value_); }
  bool boolean() const { return std::get<bool>(value_); }
  const Slice& slice() const { return std::get<Slice>(value_); }
  const runtime::Tensor& tensor() const { return std::get<runtime::Tensor>(value_); }

 private:
  std::variant<std::nullopt_t, EllipsisIndexType, int64_t, bool, Slice, runtime::Tensor> value_;
};

}  // namespace tritium::indexing
