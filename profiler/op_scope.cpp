#include "profiler/op_scope.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::profiler {

std::string shapes_text(const std::vector<Tensor>& inputs) {
  std::string s = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    s += inputs[i].defined() ? fmt::format("[{}]", fmt::join(inputs[i].shape(), ", ")) : "[]";
  }
  return s + "]";
}

std::string dtypes_text(const std::vector<Tensor>& inputs) {
  std::string s = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    s += inputs[i].defined() ? std::string(dtype_name(inputs[i].dtype())) : "-";
  }
  return s + "]";
}

void OpScope::begin(std::string_view name, const std::vector<Tensor>& inputs) {
  if (detail::recording_shapes()) scope_ = detail::begin_op(name, shapes_text(inputs), dtypes_text(inputs));
  else scope_ = detail::begin_op(name, {}, {});
}

}  // namespace tritium::profiler
