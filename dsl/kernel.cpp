// Kernel launch: argument checking, the specialisation key, the in-memory map from key to
// compiled kernel, and tracing on a miss.
#include "dsl/kernel.h"

#include <atomic>
#include <cmath>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "common/hash.h"
#include "dsl/early_exit.h"
#include "dsl/trace.h"
#include "ir/printer.h"
#include "jit/compiled_kernel.h"
#include "jit/passes/index_width.h"
#include "jit/passes/pipeline.h"
#include "profiler/hooks.h"
#include "runtime/launch_queue.h"
#include "runtime/streams.h"
#include "common/env.h"

namespace tritium {

std::string MetaValue::str() const {
  switch (kind) {
    case Kind::integer: return std::to_string(i);
    case Kind::floating: return fmt::format("{}", f);
    case Kind::boolean: return i ? "true" : "false";
    case Kind::dtype: return dtype_name(dtype());
    case Kind::string: return fmt::format("\"{}\"", s);
  }
  return "?";
}

void Meta::set(const std::string& name, MetaValue v) {
  for (auto& [k, old] : items_)
    if (k == name) {
      old = v;
      return;
    }
  items_.emplace_back(name, v);
}

const MetaValue* Meta::find(const std::string& name) const {
  for (auto& [k, v] : items_)
    if (k == name) return &v;
  return nullptr;
}

int64_t Meta::operator[](const std::string& name) const {
  const MetaValue* v = find(name);
  if (!v) {
    std::string names;
    for (auto& [k, _] : items_) names += (names.empty() ? "" : ", ") + k;
    fail("Meta: no meta-parameter named '{}' (have: {})", name, names.empty() ? "none" : names);
  }
  if (v->kind == MetaValue::Kind::dtype || v->kind == MetaValue::Kind::string)
    fail("Meta: meta-parameter '{}' is {}, not a number; read it with Meta::find", name, v->str());
  return v->kind == MetaValue::Kind::floating ? static_cast<int64_t>(v->f) : v->i;
}

GridSpec::GridSpec(std::initializer_list<int64_t> dims, std::source_location l) : loc(SourceLoc::from(l)) {
  if (dims.size() < 1 || dims.size() > 3) fail(loc, "grid: expected 1 to 3 dimensions, got {}", dims.size());
  auto it = dims.begin();
  grid.x = *it++;
  if (it != dims.end()) grid.y = *it++;
  if (it != dims.end()) grid.z = *it++;
}

namespace detail {

namespace {

const char* arg_kind_name(const ArgValue& a) {
  switch (a.kind) {
    case ArgValue::Kind::pointer: return "a pointer";
    case ArgValue::Kind::integer: return "an integer";
    case ArgValue::Kind::floating: return "a floating-point number";
    case ArgValue::Kind::boolean: return "a bool";
    case ArgValue::Kind::meta: return "a tl::constexpr_ value";
  }
  return "?";
}

bool fits(int64_t v, bool is_unsigned_src, DType to) {
  if (to == DType::i1) return v == 0 || v == 1;
  int bits = dtype_bits(to);
  if (is_unsigned_src && v < 0) return to == DType::u64;  // a u64 above INT64_MAX
  if (is_unsigned_int(to)) return v >= 0 && (bits == 64 || v < (int64_t(1) << bits));
  if (bits == 64) return true;
  return v >= -(int64_t(1) << (bits - 1)) && v < (int64_t(1) << (bits - 1));
}

// The C++ type a meta-parameter was declared with, as users write it.
const char* meta_type_name(DType t) {
  switch (t) {
    case DType::i1: return "bool";
    case DType::i8: return "int8_t";
    case DType::i16: return "int16_t";
    case DType::i32: return "int";
    case DType::i64: return "int64_t";
    case DType::u8: return "uint8_t";
    case DType::u16: return "uint16_t";
    case DType::u32: return "unsigned";
    case DType::u64: return "uint64_t";
    case DType::f32: return "float";
    case DType::f64: return "double";
    default: return "?";
  }
}

std::string describe_meta(const MetaValue& m, bool unsigned_src) {
  switch (m.kind) {
    case MetaValue::Kind::integer:
      return fmt::format("the integer {}", unsigned_src ? std::to_string(static_cast<uint64_t>(m.i)) : std::to_string(m.i));
    case MetaValue::Kind::floating: return fmt::format("the floating-point value {}", m.f);
    case MetaValue::Kind::boolean: return fmt::format("the bool {}", m.i ? "true" : "false");
    case MetaValue::Kind::dtype: return fmt::format("the dtype {}", dtype_name(m.dtype()));
    case MetaValue::Kind::string: return fmt::format("the string \"{}\"", m.s);
  }
  return "?";
}

// What a meta-parameter declared as `p` takes, as users write it.
std::string meta_param_type(const ParamInfo& p) {
  switch (p.meta_kind) {
    case MetaKind::dtype: return "tl::constexpr_<DType>";
    case MetaKind::string: return "tl::constexpr_<std::string>";
    case MetaKind::number: break;
  }
  return fmt::format("C++ {}", meta_type_name(p.meta_type));
}

// Whether a value of kind `k` may be given for a meta-parameter holding `mk` (numbers convert
// among themselves under fit_meta's rules; dtypes and strings only match themselves).
bool meta_kind_matches(MetaValue::Kind k, MetaKind mk) {
  switch (mk) {
    case MetaKind::dtype: return k == MetaValue::Kind::dtype;
    case MetaKind::string: return k == MetaValue::Kind::string;
    case MetaKind::number: return k != MetaValue::Kind::dtype && k != MetaValue::Kind::string;
  }
  return false;
}

// Puts a launch value for a meta-parameter of C++ type `type` in that type's kind (so the key
// and the traced value agree); false when the type cannot hold it (a float for an int, 2 for a
// bool, 2^40 for an int, 2^60 + 1 for a double...). `unsigned_src`: an integer from an unsigned
// C++ type.
bool fit_meta(MetaValue& m, bool unsigned_src, DType type) {
  using K = MetaValue::Kind;
  if (m.kind == K::integer && type == DType::i32 && !unsigned_src)  // the common case (an int BLOCK)
    return m.i >= INT32_MIN && m.i <= INT32_MAX;
  if (type == DType::invalid) return true;
  if (type == DType::i1) {
    if (m.kind == K::boolean) return true;
    if (m.kind != K::integer || (m.i != 0 && m.i != 1)) return false;
    m = MetaValue(m.i != 0);
    return true;
  }
  if (is_float(type)) {
    if (m.kind == K::floating) return !(type == DType::f32 && std::isfinite(m.f) && !std::isfinite(static_cast<float>(m.f)));
    if (m.kind != K::integer) return false;
    double d = unsigned_src ? static_cast<double>(static_cast<uint64_t>(m.i)) : static_cast<double>(m.i);
    bool exact = unsigned_src ? d < 0x1p64 && static_cast<uint64_t>(d) == static_cast<uint64_t>(m.i)
                              : d < 0x1p63 && static_cast<int64_t>(d) == m.i;
    if (!exact) return false;
    m = MetaValue(d);
    return true;
  }
  if (m.kind == K::floating || !fits(m.i, unsigned_src && m.kind == K::integer, type)) return false;
  m.kind = K::integer;  // a bool gives 0 or 1
  return true;
}

// Elements a tensor argument reaches from its first element: 1 + its largest element offset.
int64_t element_span(const runtime::Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (size_t d = 0; d < t.shape().size(); ++d) last += (t.shape()[d] - 1) * std::abs(t.strides()[d]);
  return last + 1;
}

// Whether a tensor argument reaches past element offset 2^31 - 1. A view cannot reach beyond its
// storage, so the shape walk runs only for storage of more than 2^31 elements (launches stay cheap).
bool reaches_past_int32(const runtime::Tensor& t) {
  if (t.storage()->nbytes() / static_cast<size_t>(t.element_size()) <= (size_t(1) << 31)) return false;
  return element_span(t) > (int64_t(1) << 31);
}

// Launches (and traces) nested inside one another on a thread, at most: grid functions and kernel
// bodies may launch kernels, and each level holds stack and bound arguments.
constexpr size_t kMaxNestedLaunches = 32;

}  // namespace

class KernelImpl;

// Traces in progress on this thread, innermost last: a kernel body may launch (and so trace)
// other kernels, or its own kernel with other meta-parameters; the same specialisation again
// could never end.
struct ActiveTrace {
  const KernelImpl* kernel;
  const std::vector<uint64_t>* key;
};
static thread_local std::vector<ActiveTrace> g_active_traces;

// A compile running on a worker (runtime/launch_queue.h): *result is set when `done` is ready.
struct BackgroundCompile {
  std::shared_future<void> done;
  std::shared_ptr<std::shared_ptr<jit::CompiledKernel>> result;
};

// One compiled specialisation.
struct Specialization {
  std::vector<uint64_t> key;
  Meta meta;  // the meta-parameter values, for grid functions
  // Compiled where it was traced, or in the background (then `job` until the first kernel() after
  // it is done). kernel() waits for it and throws its error.
  std::shared_ptr<BackgroundCompile> job;
  bool ready() const { return is_ready.load(std::memory_order_acquire); }
  const std::shared_ptr<jit::CompiledKernel>& kernel() {
    if (!ready()) {
      std::shared_future<void> done = job->done;  // (own copy: get() from several threads)
      done.get();
      std::call_once(published, [&] {
        compiled = *job->result;
        is_ready.store(true, std::memory_order_release);
      });
    }
    return compiled;
  }
  void set(std::shared_ptr<jit::CompiledKernel> k) {
    compiled = std::move(k);
    is_ready.store(true, std::memory_order_release);
  }
  // By run-time parameter: where the kernel adds a 32-bit offset computed at run time to a
  // pointer from that parameter (jit/passes/index_width.h); a mask of those parameters.
  std::vector<SourceLoc> narrow_offsets;
  uint64_t narrow_mask = 0;

 private:
  std::shared_ptr<jit::CompiledKernel> compiled;
  std::atomic<bool> is_ready{false};
  std::once_flag published;
};

// Whether a kernel's compile may run in the background and its launch wait in the queue: CUDA
// only (CPU kernels run on the calling thread anyway), not in debug mode and not with device_print
// (their failures and output belong to the launch that made them), not while the profiler records
// (it times each launch where it is made).
bool compiles_in_background(const ir::Function& f, const runtime::Device& device, bool debug) {
  if (device.kind != runtime::Device::Kind::cuda || debug || !runtime::launch_queue::enabled()) return false;
  bool prints = false;
  const_cast<ir::Function&>(f).walk([&](ir::Op* op) { prints |= op->kind == ir::OpKind::Print; });
  return !prints;
}

class KernelImpl {
 public:
  std::string name;
  std::vector<ParamInfo> params;
  std::function<void(TraceArgs&)> body;
  size_t runtime_params = 0;

  std::shared_mutex mutex;
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<Specialization>>> cache;

  // Matched launch arguments.
  struct Bound {
    // One per runtime parameter; in debug mode (TRITIUM_DEBUG) then two per pointer parameter, the
    // bounds of its argument's allocation (jit/passes/debug_checks.h).
    std::array<uint64_t, 3 * 64> slots;
    std::vector<uint64_t> key;
    std::vector<MetaValue> metas;  // by parameter index
    runtime::Device device;
    // Run-time parameters given a Tensor whose elements reach past what a 32-bit offset
    // addresses (element_span > 2^31): checked against the kernel's narrow offsets.
    uint64_t wide_tensors = 0;
  };

  std::string signature() const {
    std::string s;
    for (auto& p : params) s += (s.empty() ? "" : ", ") + p.name;
    return s;
  }

  std::string meta_names() const {
    std::string s;
    for (auto& p : params)
      if (p.kind == ParamKind::meta) s += (s.empty() ? "" : ", ") + p.name;
    return s.empty() ? "none" : s;
  }

  [[noreturn]] void bad_arg(const SourceLoc& loc, size_t i, const std::string& what) const {
    fail(loc, "kernel {}: argument {} ({}) {}", name, i, params[i].name, what);
  }

  // Names in a tritium::Meta must be meta-parameters not also given by position, each once.
  void check_named(const SourceLoc& loc, const ArgValue* args, size_t n, const Meta& named) const {
    const auto& items = named.items();
    for (size_t j = 0; j < items.size(); ++j) {
      const std::string& key = items[j].first;
      size_t i = 0;
      while (i < params.size() && params[i].name != key) ++i;
      if (i == params.size())
        fail(loc, "kernel {}: tritium::Meta names '{}', which is not a meta-parameter of the kernel (meta-parameters: {})",
             name, key, meta_names());
      if (params[i].kind != ParamKind::meta)
        fail(loc, "kernel {}: tritium::Meta names '{}', a run-time argument (argument {}); pass it by position", name,
             key, i);
      if (i < n)
        fail(loc, "kernel {}: meta-parameter {} (argument {}) is given both by position ({}) and by name ({}); give it once",
             name, key, i, describe_meta(meta_of(args[i]), args[i].is_unsigned), describe_meta(items[j].second, false));
      for (size_t k = 0; k < j; ++k)
        if (items[k].first == key)
          fail(loc, "kernel {}: tritium::Meta gives '{}' twice ({} and {})", name, key,
               describe_meta(items[k].second, false), describe_meta(items[j].second, false));
    }
  }

  // A positional argument as a meta value (the kind check comes later).
  static MetaValue meta_of(const ArgValue& a) {
    switch (a.kind) {
      case ArgValue::Kind::meta: return a.meta;
      case ArgValue::Kind::boolean: return MetaValue(a.bits != 0);
      case ArgValue::Kind::floating: {
        double d;
        std::memcpy(&d, &a.bits, 8);
        return MetaValue(d);
      }
      default: return MetaValue(static_cast<int64_t>(a.bits));
    }
  }

  void bind(const ArgValue* args, size_t n, const Meta* named, const Options& options, Bound& out,
            const SourceLoc& loc = {}) const {
    if (n > params.size())
      fail(loc, "kernel {}: takes {} arguments ({}), got {}", name, params.size(), signature(), n);
    if (named && !named->items().empty()) check_named(loc, args, n, *named);
    out.key.clear();
    out.key.reserve(params.size() + 3);
    out.metas.assign(params.size(), MetaValue{});
    out.wide_tensors = 0;
    // Explicit device, else the tensors' device, else the default device (raw pointers).
    out.device = options.device.value_or(runtime::default_device());
    bool device_from_tensor = false;
    size_t slot = 0;
    const bool debug = env().debug;
    std::array<std::pair<uint64_t, uint64_t>, 64> extents;  // debug mode: by pointer parameter
    size_t num_extents = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const ParamInfo& p = params[i];
      if (p.kind == ParamKind::meta) {
        MetaValue m;
        bool unsigned_src = false;
        if (i < n) {
          const ArgValue& a = args[i];
          if (a.kind == ArgValue::Kind::pointer)
            bad_arg(loc, i, fmt::format("is a meta-parameter and needs a number, got {}", arg_kind_name(a)));
          m = meta_of(a);
          unsigned_src = a.kind == ArgValue::Kind::integer && a.is_unsigned;
        } else if (const MetaValue* v = named ? named->find(p.name) : nullptr) {
          m = *v;
        } else {
          fail(loc,
               "kernel {}: meta-parameter {} (parameter {}) is missing at launch; pass it by position or in a "
               "tritium::Meta{{{{\"{}\", value}}}}",
               name, p.name, i, p.name);
        }
        // (m is unchanged when it does not fit)
        if (!meta_kind_matches(m.kind, p.meta_kind) || (p.meta_kind == MetaKind::number && !fit_meta(m, unsigned_src, p.meta_type)))
          fail(loc, "kernel {}: meta-parameter {} (argument {}) is a {}, which cannot hold {} given at launch", name,
               p.name, i, meta_param_type(p), describe_meta(m, unsigned_src));
        out.key.push_back(0x4d00000000000000ull | static_cast<uint64_t>(m.kind));
        uint64_t bits = static_cast<uint64_t>(m.i);
        if (m.kind == MetaValue::Kind::floating) std::memcpy(&bits, &m.f, 8);
        if (m.kind == MetaValue::Kind::string) {  // the characters themselves: keys compare exactly
          bits = m.s.size();
          for (size_t at = 0; at < m.s.size(); at += 8) {
            uint64_t chunk = 0;
            std::memcpy(&chunk, m.s.data() + at, std::min<size_t>(8, m.s.size() - at));
            out.key.push_back(chunk);
          }
        }
        out.key.push_back(bits);
        out.metas[i] = std::move(m);
        continue;
      }
      if (i >= n)
        fail(loc, "kernel {}: takes {} arguments ({}), got {}; argument {} ({}) is missing", name, params.size(),
             signature(), n, i, p.name);
      const ArgValue& a = args[i];
      uint64_t& s = out.slots[slot++];
      if (p.kind == ParamKind::pointer) {
        const bool any = p.dtype == DType::invalid;  // tl::ptr<tl::any>
        if (a.kind != ArgValue::Kind::pointer)
          bad_arg(loc, i, fmt::format("must be a pointer to {}, got {}", any ? "any type" : dtype_name(p.dtype), arg_kind_name(a)));
        // None: nullptr (or a null void*) and an undefined Tensor; a null typed pointer stays a
        // pointer (traced as one: tests trace kernels with them). Part of the key; the body tests
        // it with is_none().
        if (a.none && (a.tensor || a.dtype == DType::invalid)) {
          s = 0;
          out.key.push_back(4);
          continue;
        }
        if (any && a.dtype == DType::invalid)
          bad_arg(loc, i, "is a tl::ptr<tl::any> and needs a typed pointer or a Tensor (its element type is taken from the "
                          "argument), got void*");
        if (!any && a.dtype != DType::invalid && a.dtype != p.dtype)
          bad_arg(loc, i, fmt::format("must point to {}, got a pointer to {}", dtype_name(p.dtype), dtype_name(a.dtype)));
        if (a.tensor) {
          if (options.device && a.tensor->device() != *options.device)
            bad_arg(loc, i, fmt::format("is on {} but the launch options ask for {}", a.tensor->device().str(),
                                        options.device->str()));
          if (device_from_tensor && a.tensor->device() != out.device)
            bad_arg(loc, i, fmt::format("is on {} but earlier tensor arguments are on {}", a.tensor->device().str(),
                                        out.device.str()));
          if (!options.device) out.device = a.tensor->device();
          device_from_tensor = true;
          if (reaches_past_int32(*a.tensor)) out.wide_tensors |= uint64_t(1) << (slot - 1);
        }
        s = a.bits;
        if (debug) {
          // A Tensor's allocation is its storage (a view may reach anywhere in it); a raw pointer's
          // is unknown and unchecked.
          if (a.tensor) {
            auto begin = reinterpret_cast<uint64_t>(a.tensor->storage()->data());
            extents[num_extents++] = {begin, begin + a.tensor->storage()->nbytes()};
          } else {
            extents[num_extents++] = {0, static_cast<uint64_t>(INT64_MAX)};
          }
        }
        // Divisibility of the address by 16 bytes; the element type for tl::ptr<tl::any>.
        out.key.push_back((a.bits % 16 == 0 ? 1 : 0) | (any ? static_cast<uint64_t>(a.dtype) << 8 : 0));
      } else {  // run-time scalar
        DType d = p.dtype;
        if (a.kind == ArgValue::Kind::pointer || a.kind == ArgValue::Kind::meta)
          bad_arg(loc, i, fmt::format("must be a {} scalar, got {}", dtype_name(d), arg_kind_name(a)));
        if (is_float(d)) {
          double v;
          if (a.kind == ArgValue::Kind::floating) std::memcpy(&v, &a.bits, 8);
          else v = a.is_unsigned ? static_cast<double>(a.bits) : static_cast<double>(static_cast<int64_t>(a.bits));
          if (d == DType::f64) std::memcpy(&s, &v, 8);
          else {
            float f = static_cast<float>(v);
            uint32_t u;
            std::memcpy(&u, &f, 4);
            s = u;
          }
          if (is_narrow_float(d))
            bad_arg(loc, i, fmt::format("has type {}; f16, bf16 and fp8 scalar arguments are not supported, use tl::f32", dtype_name(d)));
          out.key.push_back(0);
        } else {
          if (a.kind == ArgValue::Kind::floating)
            bad_arg(loc, i, fmt::format("must be an integer ({}), got a floating-point number", dtype_name(d)));
          int64_t v = static_cast<int64_t>(a.bits);
          if (!fits(v, a.is_unsigned, d))
            bad_arg(loc, i, fmt::format("value {} does not fit in {}", a.is_unsigned ? fmt::format("{}", a.bits) : fmt::format("{}", v), dtype_name(d)));
          s = static_cast<uint64_t>(v);
          // Specialise on divisibility by 16 and on the value 1, as Triton does.
          out.key.push_back((v % 16 == 0 ? 1 : 0) | (v == 1 ? 2 : 0));
        }
      }
    }
    out.key.push_back(static_cast<uint64_t>(options.num_warps) << 32 | static_cast<uint32_t>(options.num_stages));
    out.key.push_back(static_cast<uint64_t>(out.device.kind) << 32 | static_cast<uint32_t>(out.device.index));
    out.key.push_back(debug ? 1 : 0);
    for (size_t e = 0; e < num_extents; ++e) {
      out.slots[slot++] = extents[e].first;
      out.slots[slot++] = extents[e].second;
    }
  }

  // A launch that would address a tensor past 2^31 elements through 32-bit offsets (a tensor in
  // b.wide_tensors that the kernel indexes with narrow offsets), refused.
  [[noreturn]] void refuse_narrow_offsets(const Specialization& spec, const Bound& b, const ArgValue* args,
                                          const SourceLoc& loc) const {
    uint64_t bad = b.wide_tensors & spec.narrow_mask;
    size_t slot = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].kind == ParamKind::meta) continue;
      if (bad >> slot & 1) {
        const runtime::Tensor& t = *args[i].tensor;
        fail(loc,
             "kernel {}: argument {} ({}) is a tensor whose elements reach offset {} (shape {}), but the kernel adds "
             "32-bit offsets computed at run time to it ({}), which wrap past 2^31 - 1 = 2147483647; compute the "
             "offsets in 64 bits, e.g. tl::program_id(0).to(tl::int64) * BLOCK (docs/language.md, \"64-bit offsets\")",
             name, i, params[i].name, element_span(t) - 1, ir::shape_str(t.shape()), spec.narrow_offsets[slot].str());
      }
      ++slot;
    }
    fail(loc, "kernel {}: internal: no argument matches the refused offsets", name);
  }

  // "N=16, BLOCK=64": the meta-parameters of a specialisation, for errors.
  std::string metas_str(const Bound& b) const {
    std::string s;
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].kind == ParamKind::meta) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", params[i].name, b.metas[i].str());
    return s.empty() ? "no meta-parameters" : s;
  }

  // Traces the user's function for one specialisation into `f`. `loc`: the launch that asked.
  void trace(ir::Function& f, const Bound& b, const SourceLoc& loc = {}) {
    for (const ActiveTrace& a : g_active_traces)
      if (a.kernel == this && *a.key == b.key)
        fail(loc,
             "kernel {}: launched itself with the same specialisation ({}) while being traced; its body runs only "
             "while it is traced, so that launch could never be compiled (a kernel may launch itself at trace time "
             "only with other meta-parameters)",
             name, metas_str(b));
    if (g_active_traces.size() >= kMaxNestedLaunches)
      fail(loc, "kernel {}: traced inside {} other traces on this thread (kernel bodies launching kernels); at most {} may nest",
           name, g_active_traces.size(), kMaxNestedLaunches);
    g_active_traces.push_back({this, &b.key});
    struct Pop {
      ~Pop() { g_active_traces.pop_back(); }
    } pop;
    dsl::TraceContext ctx(f);
    TraceArgs t;
    t.handles.resize(params.size());
    t.metas = b.metas;
    size_t key_at = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const ParamInfo& p = params[i];
      if (p.kind == ParamKind::meta) {
        // bind() keys a meta-parameter as a kind word and its bits, with a string's characters
        // (8 a word) between them: skip them all, or the run-time parameters after a string would
        // read its words as their own specialisation (a scalar after "sum" traced as the constant 1).
        const MetaValue& m = b.metas[i];
        key_at += 2 + (m.kind == MetaValue::Kind::string ? (m.s.size() + 7) / 8 : 0);
        continue;
      }
      uint64_t spec = b.key[key_at++];
      ir::Param param;
      param.name = p.name;
      const bool none = p.kind == ParamKind::pointer && (spec & 4);
      DType pointee = p.dtype != DType::invalid ? p.dtype : none ? DType::i8 : static_cast<DType>((spec >> 8) & 0xff);
      param.type = p.kind == ParamKind::pointer ? ir::Type::pointer(pointee) : ir::Type::scalar(p.dtype);
      if (spec & 1) param.divisibility = 16;
      f.params.push_back(param);
      ir::Value* arg = f.add_block_arg(f.body, param.type);
      if (p.kind == ParamKind::scalar && (spec & 2)) {
        ctx.builder.loc = SourceLoc{};
        t.handles[i] = tl::tensor(ctx.builder.constant_int(1, param.type));  // specialised: equal to 1
      } else {
        t.handles[i] = tl::tensor(arg);
        if (none) t.handles[i].set_none(p.name.c_str());
      }
    }
    body(t);
    dsl::exit_close_all(loc);
  }

  Specialization& specialize(const Bound& b, uint64_t h, const Options& options, const SourceLoc& loc = {}) {
    auto f = std::make_unique<ir::Function>(name);
    trace(*f, b, loc);
    std::vector<SourceLoc> narrow = jit::narrow_offsets(*f);
    jit::CompileOptions co;
    co.num_warps = options.num_warps;
    co.num_stages = options.num_stages;
    co.debug = b.key.back() != 0;
    auto spec = std::make_unique<Specialization>();
    spec->key = b.key;
    if (compiles_in_background(*f, b.device, co.debug)) {
      auto job = std::make_shared<BackgroundCompile>();
      job->result = std::make_shared<std::shared_ptr<jit::CompiledKernel>>();
      std::shared_ptr<ir::Function> traced(std::move(f));
      job->done = runtime::launch_queue::run_compile(
          [result = job->result, traced, device = b.device, co] { *result = jit::compile(*traced, device, co); });
      spec->job = std::move(job);
    } else {
      spec->set(jit::compile(*f, b.device, co));
    }
    for (size_t i = 0; i < narrow.size() && i < 64; ++i)
      if (narrow[i].known()) spec->narrow_mask |= uint64_t(1) << i;
    spec->narrow_offsets = std::move(narrow);
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].kind == ParamKind::meta) spec->meta.set(params[i].name, b.metas[i]);
    std::unique_lock lock(mutex);
    auto& bucket = cache[h];
    for (auto& s : bucket)
      if (s->key == b.key) return *s;  // another thread won the race
    bucket.push_back(std::move(spec));
    return *bucket.back();
  }

  Specialization* lookup(const std::vector<uint64_t>& key, uint64_t h) {
    std::shared_lock lock(mutex);
    auto it = cache.find(h);
    if (it == cache.end()) return nullptr;
    for (auto& s : it->second)
      if (s->key == key) return s.get();
    return nullptr;
  }
};

}  // namespace detail

Kernel::Kernel(std::string name, std::vector<detail::ParamInfo> params, std::function<void(detail::TraceArgs&)> body)
    : impl_(std::make_shared<detail::KernelImpl>()) {
  impl_->name = std::move(name);
  impl_->params = std::move(params);
  impl_->body = std::move(body);
  for (size_t i = 0; i < impl_->params.size(); ++i) {
    impl_->params[i].name = fmt::format("arg{}", i);
    if (impl_->params[i].kind != detail::ParamKind::meta) ++impl_->runtime_params;
  }
  if (impl_->runtime_params > 64) fail("kernel {}: at most 64 run-time parameters are supported", impl_->name);
}

const std::string& Kernel::name() const { return impl_->name; }
const std::vector<detail::ParamInfo>& Kernel::params() const { return impl_->params; }

Kernel& Kernel::arg_names(std::vector<std::string> names) {
  if (names.size() != impl_->params.size())
    fail("kernel {}: {} argument names given for {} parameters", impl_->name, names.size(), impl_->params.size());
  for (size_t i = 0; i < names.size(); ++i) impl_->params[i].name = std::move(names[i]);
  return *this;
}

size_t Kernel::num_specializations() const {
  std::shared_lock lock(impl_->mutex);
  size_t n = 0;
  for (auto& [_, v] : impl_->cache) n += v.size();
  return n;
}

namespace {

// The launches in progress on this thread. The outermost binds its arguments into `outermost`,
// kept between launches so a launch allocates nothing; a launch made by a grid function, or by a
// kernel body while it is traced, binds into its own object and leaves the outer launch's
// arguments alone. One thread_local object: one TLS lookup per launch.
struct LaunchStack {
  size_t depth = 0;
  detail::KernelImpl::Bound outermost;
};
thread_local LaunchStack g_launches;

class LaunchSlot {
 public:
  LaunchSlot(const std::string& kernel, const SourceLoc& loc) : stack_(g_launches) {
    if (stack_.depth >= detail::kMaxNestedLaunches)
      fail(loc,
           "kernel {}: launches nested {} deep on this thread (a grid function or a kernel body that launches "
           "kernels, perhaps its own, again and again?); at most {} may nest",
           kernel, stack_.depth + 1, detail::kMaxNestedLaunches);
    if (stack_.depth > 0) nested_ = std::make_unique<detail::KernelImpl::Bound>();
    ++stack_.depth;
  }
  ~LaunchSlot() { --stack_.depth; }
  LaunchSlot(const LaunchSlot&) = delete;
  LaunchSlot& operator=(const LaunchSlot&) = delete;
  detail::KernelImpl::Bound& bound() { return nested_ ? *nested_ : stack_.outermost; }

 private:
  LaunchStack& stack_;
  std::unique_ptr<detail::KernelImpl::Bound> nested_;
};

}  // namespace

void Kernel::launch_impl(const GridSpec& grid, const detail::ArgValue* args, size_t n, const Meta* named,
                         const Options& options) {
  if (!impl_) fail(grid.loc, "launch of an empty tritium::Kernel");
  LaunchSlot slot(impl_->name, grid.loc);
  detail::KernelImpl::Bound& b = slot.bound();
  impl_->bind(args, n, named, options, b, grid.loc);
  uint64_t h = hash64(b.key.data(), b.key.size() * sizeof(uint64_t));
  detail::Specialization* spec = impl_->lookup(b.key, h);
  auto check_grid = [&](const Grid& g) {
    if (g.x < 0 || g.y < 0 || g.z < 0 || g.x > INT32_MAX || g.y > 65535 || g.z > 65535)
      fail(grid.loc, "kernel {}: invalid grid ({}, {}, {}); x must be in [0, 2^31), y and z in [0, 65535]", impl_->name,
           g.x, g.y, g.z);
  };
  Grid g;
  if (!spec) {
    // A bad grid is reported before the specialisation is compiled, not after.
    Meta m;
    for (size_t i = 0; i < impl_->params.size(); ++i)
      if (impl_->params[i].kind == detail::ParamKind::meta) m.set(impl_->params[i].name, b.metas[i]);
    g = grid.fn ? grid.fn(m) : grid.grid;
    check_grid(g);
    spec = &impl_->specialize(b, h, options, grid.loc);
  } else {
    g = grid.fn ? grid.fn(spec->meta) : grid.grid;
    check_grid(g);
  }
  if (b.wide_tensors & spec->narrow_mask) impl_->refuse_narrow_offsets(*spec, b, args, grid.loc);
  if (g.x == 0 || g.y == 0 || g.z == 0) {
    if (!spec->ready()) spec->kernel();  // nothing to launch: the compile's errors are this call's
    return;
  }
  runtime::launch_queue::rethrow_error();  // a queued launch failed since the last check
  // A specialisation compiled in the background launches from the queue while its compile runs or
  // other launches wait there (a copy of the arguments and the launching thread's stream:
  // runtime/launch_queue.h). Every other launch is made here; cuLaunchKernel issues the queue
  // first (runtime/cuda_driver.cpp), so debug-mode and device_print kernels, and launches the
  // profiler times, still come after what was launched before them.
  if (spec->job && (!spec->ready() || runtime::launch_queue::pending()) && !profiler::detail::recording()) {
    static const std::shared_future<void> compiled = [] {
      std::promise<void> p;
      p.set_value();
      return p.get_future().share();
    }();
    std::shared_future<void> ready = spec->ready() ? compiled : spec->job->done;
    runtime::launch_queue::enqueue(
        std::move(ready), [impl = impl_, spec, slots = b.slots, grid = jit::LaunchGrid{g.x, g.y, g.z},
                           stream = runtime::current_stream(b.device)] {
          runtime::StreamGuard on(stream);
          spec->kernel()->launch(slots.data(), grid);
        });
    return;
  }
  profiler::detail::KernelScope profiled(impl_->name, g.x, g.y, g.z);  // one flag check when off
  spec->kernel()->launch(b.slots.data(), jit::LaunchGrid{g.x, g.y, g.z});
}

void Kernel::precompile(const LaunchArgs& args) { warmup(args); }

namespace {

// The specialisation collected arguments select, traced (and its compile started) on a miss.
detail::Specialization& specialization_of(const std::shared_ptr<detail::KernelImpl>& impl, const LaunchArgs& args) {
  if (!impl) fail("compile of an empty tritium::Kernel");
  detail::KernelImpl::Bound b;
  impl->bind(args.values.data(), args.values.size(), &args.named, args.options, b);
  uint64_t h = hash64(b.key.data(), b.key.size() * sizeof(uint64_t));
  detail::Specialization* spec = impl->lookup(b.key, h);
  return spec ? *spec : impl->specialize(b, h, args.options);
}

}  // namespace

void Kernel::start_compile(const LaunchArgs& args) { specialization_of(impl_, args); }

Kernel::Info Kernel::warmup(const LaunchArgs& args) {
  const jit::CompiledKernel& c = *specialization_of(impl_, args).kernel();
  return Info{c.name, c.hash, c.registers_per_thread, c.threads_per_program, c.shared_bytes};
}

Hash128 Kernel::specialization_hash(const LaunchArgs& args) {
  if (!impl_) fail("trace of an empty tritium::Kernel");
  detail::KernelImpl::Bound b;
  impl_->bind(args.values.data(), args.values.size(), &args.named, args.options, b);
  uint64_t h = hash64(b.key.data(), b.key.size() * sizeof(uint64_t));
  if (detail::Specialization* spec = impl_->lookup(b.key, h)) return spec->kernel()->hash;
  ir::Function f(impl_->name);
  impl_->trace(f, b);
  jit::CompileOptions co;
  co.num_warps = args.options.num_warps;
  co.num_stages = args.options.num_stages;
  co.debug = b.key.back() != 0;
  return jit::content_hash(f, b.device, co);
}

Meta Kernel::meta_values(const LaunchArgs& args) {
  if (!impl_) fail("trace of an empty tritium::Kernel");
  detail::KernelImpl::Bound b;
  impl_->bind(args.values.data(), args.values.size(), &args.named, args.options, b);
  Meta m;
  for (size_t i = 0; i < impl_->params.size(); ++i)
    if (impl_->params[i].kind == detail::ParamKind::meta) m.set(impl_->params[i].name, b.metas[i]);
  return m;
}

std::string Kernel::ir_impl(const detail::ArgValue* args, size_t n, const Meta* named, const Options& options,
                            bool optimized) {
  detail::KernelImpl::Bound b;
  impl_->bind(args, n, named, options, b);
  ir::Function f(impl_->name);
  impl_->trace(f, b);
  if (optimized) jit::run_passes(f, "");
  return ir::print(f);
}

std::unique_ptr<ir::Function> Kernel::function_impl(const detail::ArgValue* args, size_t n, const Meta* named,
                                                    const Options& options) {
  if (!impl_) fail("trace of an empty tritium::Kernel");
  detail::KernelImpl::Bound b;
  impl_->bind(args, n, named, options, b);
  auto f = std::make_unique<ir::Function>(impl_->name);
  impl_->trace(*f, b);
  jit::run_passes(*f, "");
  return f;
}

}  // namespace tritium
