// Loss scaling for f16 training, as PyTorch's torch.amp.GradScaler: the loss is multiplied by a
// scale before backward so that small f16 gradients do not flush to zero; before the optimiser
// step the gradients are divided by it again, and a step whose gradients hold an inf or a NaN is
// skipped and the scale halved (backoff_factor); after growth_interval clean steps in a row the
// scale doubles (growth_factor). Everything that depends on the gradients' values runs on the
// device without a host synchronisation: the scale, the growth tracker and found_inf are device
// tensors, the check-and-unscale and the update are Tritium kernels, and the optimiser's update
// kernels read found_inf and leave parameters and state unchanged when it is set
// (Optimizer::skip_if, as PyTorch's fused optimisers). Parameters and gradients are f32
// (master weights; autocast casts them per op).
//
//   nn::GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);                         // optional: e.g. to clip the true gradients
//   nn::clip_grad_norm_(model.parameters(), 1.0);
//   scaler.step(opt);                             // skipped on the device if a gradient is inf/NaN
//   scaler.update();
//
// Deviation from PyTorch: optimisers that count steps on the host (Adam, AdamW, Adagrad's
// learning-rate decay) count a skipped step too, so their bias correction runs one step ahead
// per skipped step (PyTorch's fused optimisers keep the count on the device and take it back).
#pragma once
#include <map>
#include <optional>
#include <string>

#include "io/safetensors.h"
#include "nn/optim.h"
#include "nn/state_dict.h"
#include "runtime/tensor.h"

namespace tritium {
class Kernel;  // dsl/kernel.h
}

namespace tritium::nn {

// A GradScaler's state as PyTorch's state_dict(): tensors "scale" (0-dim f32) and
// "_growth_tracker" (0-dim i32), metadata "growth_factor", "backoff_factor", "growth_interval".
struct GradScalerState {
  StateDict tensors;
  io::Metadata metadata;
};

class GradScaler {
 public:
  // device: where the scale lives (the gradients' device). A disabled scaler passes everything
  // through: scale returns the loss, step calls optimizer.step(), update does nothing.
  explicit GradScaler(Device device = default_device(), double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int growth_interval = 2000, bool enabled = true);

  // loss * scale (recorded: backward then gives scaled gradients). loss must be floating and on
  // the scaler's device.
  Tensor scale(const Tensor& loss);
  // Divides every gradient of the optimiser's parameters by the scale, in place, and records on
  // the device whether any of them holds an inf or a NaN. At most once per optimiser between
  // two update() calls (an error otherwise, as PyTorch's); step() calls it if you did not.
  void unscale_(Optimizer& optimizer);
  // unscale_ (if not done) then optimizer.step(), which leaves every parameter and its state
  // unchanged when found_inf is set. At most once per optimiser between two update() calls.
  void step(Optimizer& optimizer);
  // The scale for the next iteration, on the device: halved if any optimiser stepped since the
  // last update found an inf/NaN (the growth tracker restarts), else the tracker counts one more
  // clean step and the scale grows after growth_interval of them. With new_scale the scale is
  // set to it instead. Resets the per-optimiser stages.
  void update(std::optional<double> new_scale = std::nullopt);

  bool is_enabled() const { return enabled_; }
  // The scale as a 0-dim f32 device tensor (no synchronisation), and read back (synchronises).
  const Tensor& scale_tensor() const { return scale_; }
  double get_scale() const;
  int64_t growth_tracker() const;  // synchronises
  // The found_inf flag (0-dim f32, 1 when a gradient was inf/NaN) of an optimiser unscaled since
  // the last update; undefined when none.
  Tensor found_inf(const Optimizer& optimizer) const;
  double growth_factor() const { return growth_factor_; }
  double backoff_factor() const { return backoff_factor_; }
  int growth_interval() const { return growth_interval_; }

  GradScalerState state_dict() const;
  // Restores what state_dict() gave (checked: both tensors present, 0-dim, of their dtypes; the
  // three hyperparameters valid numbers).
  void load_state_dict(const GradScalerState& state);

 private:
  enum class Stage { ready, unscaled, stepped };
  struct PerOptimizer {
    Stage stage = Stage::ready;
    Tensor found_inf;  // 0-dim f32 on the device
  };
  PerOptimizer& per(const Optimizer& optimizer);

  Device device_;
  double growth_factor_, backoff_factor_;
  int growth_interval_;
  bool enabled_;
  Tensor scale_;           // 0-dim f32
  Tensor growth_tracker_;  // 0-dim i32
  std::map<const Optimizer*, PerOptimizer> optimizers_;
};

namespace detail {
// The scaler's kernels (for tests/test_amp_codegen.cpp, which generates their CUDA code):
// amp_foreach_unscale_and_check(table, scale, found_inf, BLOCK) (a table row per chunk of a
// gradient: address, first, end offsets; every gradient of an optimiser in one launch) and
// amp_update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval).
tritium::Kernel& unscale_kernel();
tritium::Kernel& update_scale_kernel();
}  // namespace detail

}  // namespace tritium::nn
