// Automatic mixed precision, as PyTorch's torch.autocast: inside an enabled scope every op that
// goes through the generic dispatch (nn/dispatch.h) runs in the precision its declaration's
// autocast class names (ops/decl/op_decl.h, PyTorch's lists):
//  - lower_precision_fp (matmul, linear, conv, bmm, attention, ...): floating inputs are cast to
//    the scope's dtype (bf16 or f16);
//  - fp32 (exp, log, pow, softmax, log_softmax, sums, norms, losses, ...): floating inputs are
//    cast to f32;
//  - promote (dot, vdot, ...): floating inputs are cast to the widest among them (f32 if any is
//    f32, else the scope's dtype);
//  - none: inputs are left as they are (type promotion then decides).
// f64 inputs are never cast (PyTorch's rule), nor integer or bool ones. The casts are recorded
// (Tensor::to), so gradients flow back to f32 leaves in f32. The state is per thread and per
// device type (a cpu scope does not touch cuda ops); scopes nest, and an inner scope may disable
// autocast or change its dtype. PyTorch's cast cache: within the outermost scope, a leaf f32
// tensor that requires grad (a parameter) is cast to the low precision once, however often it
// is used; the cache is dropped when the outermost scope ends (and an entry when the parameter
// is modified in place, e.g. by an optimiser step inside the scope).
//
//   {
//     nn::autocast amp(Device::Kind::cuda, DType::bf16);
//     loss = criterion(model.forward(x), y);   // matmuls in bf16, the loss in f32
//   }
//   loss.backward();                           // outside the scope, as PyTorch recommends
#pragma once
#include <optional>
#include <vector>

#include "ops/decl/op_decl.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

class autocast {
 public:
  // dtype: bf16 or f16 (an error otherwise); by default PyTorch's: f16 on cuda, bf16 on cpu.
  // cache_enabled: whether parameters' casts are cached within the scope.
  explicit autocast(Device::Kind device_type, std::optional<DType> dtype = std::nullopt, bool enabled = true,
                    bool cache_enabled = true);
  // "cpu" or "cuda" (PyTorch's device_type strings; "cuda:1" names the type cuda).
  explicit autocast(std::string_view device_type, std::optional<DType> dtype = std::nullopt, bool enabled = true,
                    bool cache_enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  Device::Kind device_type_;
  bool previous_enabled_, previous_cache_enabled_;
  DType previous_dtype_;
};

bool is_autocast_enabled(Device::Kind device_type);
// The dtype lower_precision_fp ops run in on device_type (also when autocast is off there).
DType get_autocast_dtype(Device::Kind device_type);
// Drops every cached cast of this thread (PyTorch's torch.clear_autocast_cache).
void clear_autocast_cache();
// How many casts the cache holds now (for tests and diagnostics).
size_t autocast_cache_size();

// The dispatch's hook: the op's inputs cast as its autocast class says, when autocast is enabled
// for their device type on this thread (the inputs unchanged otherwise).
std::vector<Tensor> autocast_inputs(const ops::OpDecl& op, std::vector<Tensor> inputs);

}  // namespace tritium::nn
