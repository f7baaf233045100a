#include "nn/autocast.h"

#include <unordered_map>
#include <utility>

#include "nn/autograd.h"

namespace tritium::nn {
namespace {

struct DeviceTypeState {
  bool enabled = false;
  DType dtype;
};

// A cached low-precision copy of a parameter: valid while the parameter lives and its storage
// has not been modified in place since the cast.
struct CachedCast {
  std::weak_ptr<AutogradMeta> source;
  uint64_t version = 0;
  Tensor cast;
};

struct AutocastState {
  DeviceTypeState cpu{false, DType::bf16}, cuda{false, DType::f16};
  int nesting = 0;            // open scopes; the cache is dropped when the outermost one ends
  bool cache_enabled = true;  // the innermost scope's choice
  int active = 0;             // scopes with enabled = true (the dispatch's fast check)
  std::unordered_map<const AutogradMeta*, CachedCast> cache[2];  // [0] f16, [1] bf16
};

AutocastState& state() {
  thread_local AutocastState s;
  return s;
}

DeviceTypeState& of(Device::Kind kind) { return kind == Device::Kind::cuda ? state().cuda : state().cpu; }

Device::Kind parse_device_type(std::string_view text) {
  if (text == "cpu") return Device::Kind::cpu;
  if (text == "cuda" || text.starts_with("cuda:")) return Device::Kind::cuda;
  fail("autocast: unknown device_type '{}' (expected 'cpu' or 'cuda')", text);
}

// PyTorch's eligibility: floating and not f64 (f64 is never cast by autocast).
bool eligible(const Tensor& t) { return t.defined() && is_float(t.dtype()) && t.dtype() != DType::f64; }

Tensor cast(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  AutocastState& s = state();
  // The cache holds low-precision casts of f32 parameters (leaves that require grad), made while
  // recording, so the one cast node serves every use of the parameter in the forward.
  const bool cacheable = s.cache_enabled && to != DType::f32 && t.dtype() == DType::f32 && t.is_leaf() &&
                         t.requires_grad() && grad_enabled();
  if (!cacheable) return t.to(to);
  auto& cache = s.cache[to == DType::bf16 ? 1 : 0];
  const AutogradMeta* key = t.autograd().get();
  if (auto it = cache.find(key); it != cache.end()) {
    if (!it->second.source.expired() && it->second.version == t._version()) return it->second.cast;
    cache.erase(it);
  }
  Tensor c = t.to(to);
  cache[key] = CachedCast{t.autograd(), t._version(), c};
  return c;
}

}  // namespace

autocast::autocast(Device::Kind device_type, std::optional<DType> dtype, bool enabled, bool cache_enabled)
    : device_type_(device_type) {
  DeviceTypeState& d = of(device_type);
  if (dtype && *dtype != DType::bf16 && *dtype != DType::f16)
    fail("autocast: dtype {} is not supported; autocast runs lower_precision_fp ops in bf16 or f16",
         dtype_name(*dtype));
  AutocastState& s = state();
  previous_enabled_ = d.enabled;
  previous_dtype_ = d.dtype;
  previous_cache_enabled_ = s.cache_enabled;
  d.enabled = enabled;
  if (dtype) d.dtype = *dtype;
  s.cache_enabled = cache_enabled;
  ++s.nesting;
  if (enabled) ++s.active;
}

autocast::autocast(std::string_view device_type, std::optional<DType> dtype, bool enabled, bool cache_enabled)
    : autocast(parse_device_type(device_type), dtype, enabled, cache_enabled) {}

autocast::~autocast() {
  AutocastState& s = state();
  DeviceTypeState& d = of(device_type_);
  if (d.enabled) --s.active;
  d.enabled = previous_enabled_;
  d.dtype = previous_dtype_;
  s.cache_enabled = previous_cache_enabled_;
  if (--s.nesting == 0) clear_autocast_cache();
}

bool is_autocast_enabled(Device::Kind device_type) { return of(device_type).enabled; }
DType get_autocast_dtype(Device::Kind device_type) { return of(device_type).dtype; }

void clear_autocast_cache() {
  for (auto& c : state().cache) c.clear();
}

size_t autocast_cache_size() { return state().cache[0].size() + state().cache[1].size(); }

std::vector<Tensor> autocast_inputs(const ops::OpDecl& op, std::vector<Tensor> inputs) {
  AutocastState& s = state();
  if (s.active == 0 || op.autocast == ops::AutocastClass::none) return inputs;
  const Tensor* first = nullptr;  // the device type is the first defined input's
  for (const Tensor& t : inputs)
    if (t.defined()) {
      first = &t;
      break;
    }
  if (!first) return inputs;
  const DeviceTypeState& d = of(first->device().kind);
  if (!d.enabled) return inputs;

  DType to = DType::f32;
  switch (op.autocast) {
    case ops::AutocastClass::lower_precision_fp: to = d.dtype; break;
    case ops::AutocastClass::fp32: to = DType::f32; break;
    case ops::AutocastClass::promote:
      // The widest eligible input: f32 wins over the low precision (f64 inputs are left alone).
      to = d.dtype;
      for (const Tensor& t : inputs)
        if (eligible(t) && t.dtype() == DType::f32) to = DType::f32;
      break;
    case ops::AutocastClass::none: return inputs;
  }
  for (Tensor& t : inputs)
    if (eligible(t) && t.device().kind == first->device().kind) t = cast(t, to);
  return inputs;
}

}  // namespace tritium::nn
