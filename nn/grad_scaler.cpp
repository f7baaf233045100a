#include "nn/grad_scaler.h"

#include <cmath>
#include <limits>

#include <tritium/tritium.h>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "ops/ops.h"

namespace tritium::nn {
namespace tl = tritium::tl;

namespace {

constexpr int kBlock = 1024;
// The multi-tensor table: one row (gradient address, first offset, end offset) per kChunk
// elements of a gradient, as the optimisers' multi-tensor kernels (nn/optim_kernels.h).
constexpr int kUnscaleRow = 3;
constexpr int64_t kChunk = 65536;

}  // namespace

namespace detail {

// PyTorch's _amp_foreach_non_finite_check_and_unscale_: every gradient of an optimiser in one
// launch. Program r reads row r of the table and, over its chunk, g /= scale in place (times the
// f32 reciprocal, PyTorch's) and found_inf = 1 when an element is inf or NaN (x * 0 is 0 only for
// finite x; every program that finds one stores the same 1, so the race is benign).
tritium::Kernel& unscale_kernel() {
  static tritium::Kernel k = tritium::kernel(
    "amp_foreach_unscale_and_check",
    [](tl::ptr<int64_t> table, tl::ptr<float> scale_ptr, tl::ptr<float> found_inf_ptr, int BLOCK) {
      auto row = table + tl::program_id(0) * kUnscaleRow;
      auto first = tl::load(row + 1);
      auto g_ptr = tl::load(row).to(tl::pointer_type(DType::f32)) + first;
      auto count = (tl::load(row + 2) - first).to(tl::int32);
      auto inv_scale = 1.0f / tl::load(scale_ptr);
      for (auto o : tl::range(0, count, BLOCK)) {
        auto offs = o + tl::arange(0, BLOCK);
        auto mask = offs < count;
        auto g = tl::load(g_ptr + offs, mask, 0.0f);
        tl::store(g_ptr + offs, g * inv_scale, mask);
        auto bad = tl::max(tl::where((g * 0.0f) == 0.0f, 0.0f, 1.0f), 0);
        tl::if_(bad > 0.0f, [&] { tl::store(found_inf_ptr, 1.0f); });
      }
    },
    {"table", "scale_ptr", "found_inf_ptr", "BLOCK"});
  return k;
}

// PyTorch's _amp_update_scale_, one program: on found_inf the scale backs off and the tracker
// restarts; otherwise the tracker counts the clean step and, at growth_interval, restarts while
// the scale grows (unless growing would overflow f32).
tritium::Kernel& update_scale_kernel() {
  static tritium::Kernel k = tritium::kernel(
    "amp_update_scale",
    [](tl::ptr<float> scale_ptr, tl::ptr<int32_t> tracker_ptr, tl::ptr<float> found_inf_ptr, tl::f32 growth_factor,
       tl::f32 backoff_factor, tl::i32 growth_interval) {
      auto scale = tl::load(scale_ptr);
      auto successful = tl::load(tracker_ptr) + 1;
      auto found = tl::load(found_inf_ptr) != 0.0f;
      auto grow = successful >= growth_interval;
      auto grown = scale * growth_factor;
      auto grown_ok = tl::abs(grown) < std::numeric_limits<float>::infinity();
      auto clean_scale = tl::where(grow && grown_ok, grown, scale);
      tl::store(scale_ptr, tl::where(found, scale * backoff_factor, clean_scale));
      tl::store(tracker_ptr, tl::where(found || grow, 0, successful));
    },
    {"scale_ptr", "tracker_ptr", "found_inf_ptr", "growth_factor", "backoff_factor", "growth_interval"});
  return k;
}

}  // namespace detail

namespace {

void check_factor(const char* what, double value, bool above_one) {
  if (!std::isfinite(value) || (above_one ? !(value > 1.0) : !(value > 0.0 && value < 1.0)))
    fail("GradScaler: {} must be {}, got {}", what, above_one ? "above 1" : "in (0, 1)", value);
}

}  // namespace

GradScaler::GradScaler(Device device, double init_scale, double growth_factor, double backoff_factor,
                       int growth_interval, bool enabled)
    : device_(device), growth_factor_(growth_factor), backoff_factor_(backoff_factor),
      growth_interval_(growth_interval), enabled_(enabled) {
  if (!std::isfinite(init_scale) || !(init_scale > 0)) fail("GradScaler: init_scale must be a positive number, got {}", init_scale);
  check_factor("growth_factor", growth_factor, true);
  check_factor("backoff_factor", backoff_factor, false);
  if (growth_interval <= 0) fail("GradScaler: growth_interval must be a positive integer, got {}", growth_interval);
  if (!enabled_) return;
  scale_ = ops::full({}, init_scale, DType::f32, device_);
  growth_tracker_ = ops::zeros({}, DType::i32, device_);
}

GradScaler::PerOptimizer& GradScaler::per(const Optimizer& optimizer) { return optimizers_[&optimizer]; }

Tensor GradScaler::scale(const Tensor& loss) {
  if (!enabled_) return loss;
  if (!loss.defined()) fail("GradScaler::scale: the loss is an undefined tensor");
  if (!is_float(loss.dtype())) fail("GradScaler::scale: the loss must be floating, got {}", loss.str());
  if (!(loss.device() == device_))
    fail("GradScaler::scale: the loss is on {} but the scaler on {}", loss.device().str(), device_.str());
  return tritium::mul(loss, scale_);  // recorded: backward gives scaled gradients
}

void GradScaler::unscale_(Optimizer& optimizer) {
  if (!enabled_) return;
  PerOptimizer& st = per(optimizer);
  if (st.stage == Stage::unscaled)
    fail("GradScaler::unscale_: unscale_() has already been called on this optimizer since the last update()");
  if (st.stage == Stage::stepped) fail("GradScaler::unscale_: unscale_() is being called after step()");
  NoGradGuard no_grad;
  Tensor found_inf = ops::zeros({}, DType::f32, device_);
  const std::vector<Tensor>& params = optimizer.params();
  // Non-contiguous gradients (a user's .grad) are unscaled in a contiguous copy and copied back.
  std::vector<std::pair<Tensor, Tensor>> copied_back;  // (the .grad, its contiguous copy)
  std::vector<int64_t> rows;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = params[i].grad();
    if (!g.defined()) continue;
    if (g.dtype() != DType::f32)
      fail("GradScaler::unscale_: parameter {} has a {} gradient; unscaling needs f32 gradients (keep f32 master "
           "parameters and let autocast cast them)",
           i, dtype_name(g.dtype()));
    if (!(g.device() == device_))
      fail("GradScaler::unscale_: parameter {}'s gradient is on {} but the scaler on {}", i, g.device().str(),
           device_.str());
    Tensor flat = g.is_contiguous() ? g : ops::contiguous(g);
    if (!g.is_contiguous()) copied_back.emplace_back(g, flat);
    const int64_t n = g.numel(), address = reinterpret_cast<int64_t>(flat.raw_data());
    for (int64_t first = 0; first < n; first += kChunk)
      rows.insert(rows.end(), {address, first, std::min(n, first + kChunk)});
    g.storage()->bump_version();
  }
  if (!rows.empty()) {
    Tensor table = Tensor::from_vector(rows, {static_cast<int64_t>(rows.size())}, device_);
    detail::unscale_kernel()[{static_cast<int64_t>(rows.size()) / kUnscaleRow}](table, scale_, found_inf, kBlock,
                                                                                tritium::Options{.device = device_});
  }
  for (auto& [g, flat] : copied_back) ops::copy_(g, flat);
  st.found_inf = found_inf;
  st.stage = Stage::unscaled;
}

void GradScaler::step(Optimizer& optimizer) {
  if (!enabled_) return optimizer.step();
  PerOptimizer& st = per(optimizer);
  if (st.stage == Stage::stepped) fail("GradScaler::step: step() has already been called since the last update()");
  if (st.stage == Stage::ready) unscale_(optimizer);
  optimizer.skip_if(st.found_inf);
  try {
    optimizer.step();
  } catch (...) {
    optimizer.skip_if(Tensor());
    throw;
  }
  optimizer.skip_if(Tensor());
  st.stage = Stage::stepped;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  if (new_scale) {
    if (!std::isfinite(*new_scale) || !(*new_scale > 0))
      fail("GradScaler::update: new_scale must be a positive number, got {}", *new_scale);
    ops::fill_(scale_, *new_scale);
  } else {
    // found_inf of every optimiser unscaled since the last update, summed on the device.
    Tensor found;
    for (auto& [opt, st] : optimizers_)
      if (st.found_inf.defined()) found = found.defined() ? ops::add(found, st.found_inf) : st.found_inf;
    if (!found.defined())
      fail("GradScaler::update: no inf checks were recorded prior to update() (call step() or unscale_() first)");
    detail::update_scale_kernel()[tritium::Grid(1)](scale_, growth_tracker_, found, float(growth_factor_), float(backoff_factor_),
                                    growth_interval_, tritium::Options{.device = device_});
  }
  optimizers_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_.to(Device::cpu()).to_vector<float>()[0];
}

int64_t GradScaler::growth_tracker() const {
  if (!enabled_) return 0;
  return growth_tracker_.to(Device::cpu()).to_vector<int32_t>()[0];
}

Tensor GradScaler::found_inf(const Optimizer& optimizer) const {
  auto it = optimizers_.find(&optimizer);
  return it == optimizers_.end() ? Tensor() : it->second.found_inf;
}

GradScalerState GradScaler::state_dict() const {
  GradScalerState s;
  if (!enabled_) return s;  // PyTorch: an empty dict
  s.tensors.insert("scale", scale_.to(Device::cpu()));
  s.tensors.insert("_growth_tracker", growth_tracker_.to(Device::cpu()));
  s.metadata["growth_factor"] = fmt::format("{}", growth_factor_);
  s.metadata["backoff_factor"] = fmt::format("{}", backoff_factor_);
  s.metadata["growth_interval"] = fmt::format("{}", growth_interval_);
  return s;
}

void GradScaler::load_state_dict(const GradScalerState& state) {
  if (!enabled_) fail("GradScaler::load_state_dict: the scaler is disabled");
  if (state.tensors.size() == 0) fail("GradScaler::load_state_dict: the state is empty (of a disabled scaler?)");
  auto tensor = [&](const char* name, DType dtype) {
    if (!state.tensors.contains(name)) fail("GradScaler::load_state_dict: missing '{}'", name);
    const Tensor& t = state.tensors.at(name);
    if (t.dim() != 0 || t.dtype() != dtype)
      fail("GradScaler::load_state_dict: '{}' must be a 0-dim {} tensor, got {}", name, dtype_name(dtype), t.str());
    return t;
  };
  auto number = [&](const char* name) {
    auto it = state.metadata.find(name);
    if (it == state.metadata.end()) fail("GradScaler::load_state_dict: missing '{}'", name);
    try {
      size_t used = 0;
      double v = std::stod(it->second, &used);
      if (used == it->second.size()) return v;
    } catch (const std::exception&) {
    }
    fail("GradScaler::load_state_dict: '{}' is not a number: '{}'", name, it->second);
  };
  Tensor scale = tensor("scale", DType::f32), tracker = tensor("_growth_tracker", DType::i32);
  double growth = number("growth_factor"), backoff = number("backoff_factor"), interval = number("growth_interval");
  check_factor("growth_factor", growth, true);
  check_factor("backoff_factor", backoff, false);
  if (!(interval >= 1 && interval <= std::numeric_limits<int>::max() && interval == std::floor(interval)))
    fail("GradScaler::load_state_dict: growth_interval must be a positive integer, got {}", interval);
  growth_factor_ = growth;
  backoff_factor_ = backoff;
  growth_interval_ = static_cast<int>(interval);
  // Copies, so the scaler never shares storage with the state it was loaded from.
  ops::copy_(scale_, scale.to(device_));
  ops::copy_(growth_tracker_, tracker.to(device_));
}

}  // namespace tritium::nn
