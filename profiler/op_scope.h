// The dispatch's hook (nn/dispatch.cpp): an RAII scope around one op call, recorded with the
// inputs' shapes and dtypes when the profile asks for them. One flag check when no profile records.
#pragma once
#include <string_view>
#include <vector>

#include "profiler/hooks.h"
#include "runtime/tensor.h"

namespace tritium::profiler {

class OpScope {
 public:
  OpScope(std::string_view name, const std::vector<Tensor>& inputs) {
    if (detail::recording()) begin(name, inputs);
  }
  ~OpScope() {
    if (scope_.id >= 0) detail::end_scope(scope_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  void begin(std::string_view name, const std::vector<Tensor>& inputs);  // profiler/op_scope.cpp
  detail::OpenScope scope_;
};

// "[[64, 784], [], [10]]" and "[float32, -, float32]" (an undefined tensor is [] and -).
std::string shapes_text(const std::vector<Tensor>& inputs);
std::string dtypes_text(const std::vector<Tensor>& inputs);

}  // namespace tritium::profiler
