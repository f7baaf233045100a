// tritium::kernel: wraps a C++ lambda written with tl:: operations into a launchable kernel.
//
//   auto add = tritium::kernel("add", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out,
//                                        tl::i32 n, int BLOCK) { ... });
//   add[{tritium::cdiv(n, 1024)}](x, y, out, n, 1024);     // or add.launch(grid, args...)
//
// Parameters: tl::ptr<T> (pointer arguments: T*, tritium::Tensor), tl::i32/tl::f32/... (run-time
// scalars), and meta-parameters, which are compile-time values: a plain int/bool/float/double
// parameter or tl::constexpr_<T>. Each distinct combination of argument dtypes, meta values,
// pointer/integer divisibility by 16 and integers equal to 1 is traced and compiled once; later
// launches of the same specialisation cost a hash lookup.
#pragma once
#include <array>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/hash.h"
#include "dsl/tensor.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace tritium {

inline constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline constexpr int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// A meta-parameter value: an integer, a float, a bool, a dtype (Triton's `X_dtype: tl.constexpr`)
// or a string (`reduction: tl.constexpr = "mean"`).
struct MetaValue {
  enum class Kind : uint8_t { integer, floating, boolean, dtype, string } kind = Kind::integer;
  int64_t i = 0;  // integer, boolean, dtype (the DType's value)
  double f = 0;
  std::string s;  // string
  MetaValue() = default;
  template <class T>
    requires std::is_arithmetic_v<T>
  MetaValue(T v) {
    if constexpr (std::is_same_v<T, bool>) kind = Kind::boolean, i = v;
    else if constexpr (std::is_floating_point_v<T>) kind = Kind::floating, f = v;
    else kind = Kind::integer, i = static_cast<int64_t>(v);
  }
  MetaValue(DType d) : kind(Kind::dtype), i(static_cast<int64_t>(d)) {}
  MetaValue(std::string v) : kind(Kind::string), s(std::move(v)) {}
  MetaValue(const char* v) : kind(Kind::string), s(v) {}
  DType dtype() const { return static_cast<DType>(i); }
  bool operator==(const MetaValue&) const = default;
  std::string str() const;
};

// Named meta-parameter values: given at launch for parameters not passed by position, and
// handed to grid functions.
class Meta {
 public:
  Meta() = default;
  Meta(std::initializer_list<std::pair<std::string, MetaValue>> items) : items_(items) {}
  void set(const std::string& name, MetaValue v);
  const MetaValue* find(const std::string& name) const;
  int64_t operator[](const std::string& name) const;  // integer value; errors if absent or not a number
  const std::vector<std::pair<std::string, MetaValue>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, MetaValue>> items_;
};

struct Grid {
  int64_t x = 1, y = 1, z = 1;
  Grid(int64_t x_ = 1, int64_t y_ = 1, int64_t z_ = 1) : x(x_), y(y_), z(z_) {}
};

// A grid, or a function of the meta-parameters returning one (as Triton's `grid = lambda META: ...`).
// It is made where the launch is written (`k[{n}](...)`, `k.launch(grid, ...)`), so it keeps that
// place: errors raised by the launch (arguments, grid) name the user's file:line.
struct GridSpec {
  Grid grid;
  std::function<Grid(const Meta&)> fn;
  SourceLoc loc;
  GridSpec(Grid g, std::source_location l = std::source_location::current()) : grid(g), loc(SourceLoc::from(l)) {}
  GridSpec(int64_t x, std::source_location l = std::source_location::current()) : grid(x), loc(SourceLoc::from(l)) {}
  GridSpec(int x, std::source_location l = std::source_location::current()) : grid(x), loc(SourceLoc::from(l)) {}
  GridSpec(std::initializer_list<int64_t> dims, std::source_location l = std::source_location::current());
  template <class F>
    requires std::is_invocable_r_v<Grid, F, const Meta&>
  GridSpec(F f, std::source_location l = std::source_location::current()) : fn(std::move(f)), loc(SourceLoc::from(l)) {}
};

// Launch options, passed as an extra argument anywhere after the kernel's arguments.
// Every member has a default member initializer: g++ (-Wextra) warns about a member a designated
// initializer such as `Options{.num_warps = 8}` leaves out unless it has one.
struct Options {
  int num_warps = 4;
  int num_stages = 3;
  // Default: where the Tensor arguments live; with raw pointers only, default_device().
  std::optional<runtime::Device> device = std::nullopt;
};

namespace detail {

enum class ParamKind : uint8_t { pointer, scalar, meta };
// What a meta-parameter holds: a number (of meta_type), a DType or a std::string.
enum class MetaKind : uint8_t { number, dtype, string };
struct ParamInfo {
  ParamKind kind;
  DType dtype;  // pointee for pointers, value type for scalars, invalid for metas
  std::string name;
  DType meta_type = DType::invalid;  // numeric metas: the C++ type's (bool i1, int i32, float f32, ...)
  MetaKind meta_kind = MetaKind::number;
};

template <class T> constexpr MetaKind meta_kind_of() {
  if constexpr (std::is_same_v<T, DType>) return MetaKind::dtype;
  else if constexpr (std::is_same_v<T, std::string>) return MetaKind::string;
  else return MetaKind::number;
}

// The dtype standing for a meta-parameter's C++ type, whose values a launch must fit.
template <class T> constexpr DType meta_dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::i1;
  else if constexpr (std::is_floating_point_v<T>) return sizeof(T) == 4 ? DType::f32 : DType::f64;
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1 ? DType::i8 : sizeof(T) == 2 ? DType::i16 : sizeof(T) == 4 ? DType::i32 : DType::i64;
  else return sizeof(T) == 1 ? DType::u8 : sizeof(T) == 2 ? DType::u16 : sizeof(T) == 4 ? DType::u32 : DType::u64;
}

// A launch argument before it is matched against the parameters.
struct ArgValue {
  enum class Kind : uint8_t { pointer, integer, floating, boolean, meta } kind;
  DType dtype = DType::invalid;  // pointee or value type; invalid for void*
  uint64_t bits = 0;             // pointer address, int64 value, double bits
  bool is_unsigned = false;
  const runtime::Tensor* tensor = nullptr;  // when the argument is a Tensor
  bool none = false;                         // a pointer that is None: nullptr, null, an undefined Tensor
  MetaValue meta;                            // Kind::meta
};

// What the tracer hands to the user's function.
struct TraceArgs {
  std::vector<tl::tensor> handles;  // by parameter index (empty for metas)
  std::vector<MetaValue> metas;     // by parameter index
};

class KernelImpl;

template <class T> struct param_traits {
  static_assert(sizeof(T) == 0,
                "tritium::kernel parameters must be tl::ptr<T>, a tl:: scalar (tl::i32, tl::f32, ...), "
                "tl::constexpr_<T> or a plain int/bool/float/double/DType/std::string meta-parameter");
};
template <class E> struct param_traits<tl::ptr<E>> {
  static constexpr ParamKind kind = ParamKind::pointer;
  static DType dtype() {  // invalid for tl::ptr<tl::any>: taken from the argument
    if constexpr (std::is_same_v<std::remove_cv_t<E>, tl::any>) return DType::invalid;
    else return dtype_of<std::remove_cv_t<E>>();
  }
  static tl::ptr<E> make(TraceArgs& t, size_t i) { return tl::ptr<E>(t.handles[i]); }
};
template <DType D> struct param_traits<tl::scalar<D>> {
  static constexpr ParamKind kind = ParamKind::scalar;
  static DType dtype() { return D; }
  static tl::scalar<D> make(TraceArgs& t, size_t i) { return tl::scalar<D>(t.handles[i]); }
};
template <class T> struct param_traits<tl::constexpr_<T>> {
  static constexpr ParamKind kind = ParamKind::meta;
  static DType dtype() { return DType::invalid; }
  static DType meta_type() {
    if constexpr (std::is_arithmetic_v<T>) return meta_dtype_of<T>();
    else return DType::invalid;
  }
  static constexpr MetaKind meta_kind() { return meta_kind_of<T>(); }
  static tl::constexpr_<T> make(TraceArgs& t, size_t i) { return {meta_as<T>(t.metas[i])}; }
  template <class U> static U meta_as(const MetaValue& m) {
    if constexpr (std::is_same_v<U, DType>) return m.dtype();
    else if constexpr (std::is_same_v<U, std::string>) return m.s;
    else return m.kind == MetaValue::Kind::floating ? static_cast<U>(m.f) : static_cast<U>(m.i);
  }
};
// A plain DType or std::string parameter is a meta-parameter too, as constexpr_<DType> /
// constexpr_<std::string>.
template <> struct param_traits<DType> {
  static constexpr ParamKind kind = ParamKind::meta;
  static DType dtype() { return DType::invalid; }
  static DType meta_type() { return DType::invalid; }
  static constexpr MetaKind meta_kind() { return MetaKind::dtype; }
  static DType make(TraceArgs& t, size_t i) { return t.metas[i].dtype(); }
};
template <> struct param_traits<std::string> {
  static constexpr ParamKind kind = ParamKind::meta;
  static DType dtype() { return DType::invalid; }
  static DType meta_type() { return DType::invalid; }
  static constexpr MetaKind meta_kind() { return MetaKind::string; }
  static std::string make(TraceArgs& t, size_t i) { return t.metas[i].s; }
};
template <class T>
  requires std::is_arithmetic_v<T>
struct param_traits<T> {
  static constexpr ParamKind kind = ParamKind::meta;
  static DType dtype() { return DType::invalid; }
  static DType meta_type() { return meta_dtype_of<T>(); }
  static constexpr MetaKind meta_kind() { return MetaKind::number; }
  static T make(TraceArgs& t, size_t i) {
    const MetaValue& m = t.metas[i];
    return m.kind == MetaValue::Kind::floating ? static_cast<T>(m.f) : static_cast<T>(m.i);
  }
};

template <class T> struct signature;
template <class C, class R, class... A> struct signature<R (C::*)(A...) const> { using args = std::tuple<std::remove_cvref_t<A>...>; };
template <class C, class R, class... A> struct signature<R (C::*)(A...)> { using args = std::tuple<std::remove_cvref_t<A>...>; };
template <class R, class... A> struct signature<R (*)(A...)> { using args = std::tuple<std::remove_cvref_t<A>...>; };

template <class F> struct callable_args { using args = typename signature<decltype(&F::operator())>::args; };
template <class R, class... A> struct callable_args<R (*)(A...)> { using args = std::tuple<std::remove_cvref_t<A>...>; };

template <class P> DType param_meta_type() {
  if constexpr (param_traits<P>::kind == ParamKind::meta) return param_traits<P>::meta_type();
  else return DType::invalid;
}
template <class P> constexpr MetaKind param_meta_kind() {
  if constexpr (param_traits<P>::kind == ParamKind::meta) return param_traits<P>::meta_kind();
  else return MetaKind::number;
}

template <class Tuple, size_t... I>
std::vector<ParamInfo> param_infos(std::index_sequence<I...>) {
  return {ParamInfo{param_traits<std::tuple_element_t<I, Tuple>>::kind,
                    param_traits<std::tuple_element_t<I, Tuple>>::dtype(), "",
                    param_meta_type<std::tuple_element_t<I, Tuple>>(),
                    param_meta_kind<std::tuple_element_t<I, Tuple>>()}...};
}

template <class F, class Tuple, size_t... I>
void invoke(F& f, TraceArgs& t, std::index_sequence<I...>) {
  f(param_traits<std::tuple_element_t<I, Tuple>>::make(t, I)...);
}

// C++ launch argument -> ArgValue.
template <class T> ArgValue to_arg(const T& v) {
  using U = std::remove_cvref_t<T>;
  ArgValue a{};
  if constexpr (std::is_same_v<U, DType>) {  // a dtype meta-parameter: tl::float16
    a.kind = ArgValue::Kind::meta;
    a.meta = MetaValue(v);
  } else if constexpr (std::is_same_v<U, std::string> || std::is_same_v<U, std::string_view> ||
                       std::is_same_v<U, const char*> || std::is_same_v<U, char*> ||
                       (std::is_array_v<U> && std::is_same_v<std::remove_cv_t<std::remove_extent_t<U>>, char>)) {
    a.kind = ArgValue::Kind::meta;  // a string meta-parameter: "mean"
    a.meta = MetaValue(std::string(v));
  } else if constexpr (std::is_pointer_v<U>) {
    using E = std::remove_cv_t<std::remove_pointer_t<U>>;
    a.kind = ArgValue::Kind::pointer;
    if constexpr (!std::is_void_v<E>) a.dtype = dtype_of<E>();
    a.bits = reinterpret_cast<uint64_t>(v);
    a.none = v == nullptr;
  } else if constexpr (std::is_same_v<U, std::nullptr_t>) {
    a.kind = ArgValue::Kind::pointer;
    a.none = true;
  } else if constexpr (std::is_same_v<U, runtime::Tensor>) {
    a.kind = ArgValue::Kind::pointer;
    a.tensor = &v;
    if (!v.defined()) {
      a.none = true;
      return a;
    }
    a.dtype = v.dtype();
    a.bits = reinterpret_cast<uint64_t>(v.raw_data());
  } else if constexpr (std::is_same_v<U, bool>) {
    a.kind = ArgValue::Kind::boolean;
    a.dtype = DType::i1;
    a.bits = v;
  } else if constexpr (std::is_integral_v<U>) {
    a.kind = ArgValue::Kind::integer;
    a.dtype = dtype_of<std::conditional_t<std::is_signed_v<U>, std::make_signed_t<U>, std::make_unsigned_t<U>>>();
    a.is_unsigned = std::is_unsigned_v<U>;
    a.bits = static_cast<uint64_t>(v);
  } else if constexpr (std::is_floating_point_v<U>) {
    a.kind = ArgValue::Kind::floating;
    a.dtype = dtype_of<U>();
    double d = static_cast<double>(v);
    std::memcpy(&a.bits, &d, 8);
  } else if constexpr (requires { typename U::value_type; v.value; }) {
    a.kind = ArgValue::Kind::meta;
    a.meta = MetaValue(v.value);
  } else {
    static_assert(sizeof(U) == 0, "unsupported launch argument type: pass pointers, tritium::Tensor or numbers");
  }
  return a;
}

}  // namespace detail

// Launch arguments already sorted out (what Kernel::launch builds from a C++ argument list):
// positional values, named meta-parameters and options. Autotuners and heuristics hold these to
// launch one kernel with several configs. Tensor arguments are referenced, not copied: a
// LaunchArgs is valid while the tensors it was collected from are.
struct LaunchArgs {
  std::vector<detail::ArgValue> values;
  Meta named;
  Options options;

  template <class... A> static LaunchArgs collect(const A&... args) {
    LaunchArgs l;
    l.values.reserve(sizeof...(A));
    (l.add(args), ...);
    return l;
  }

 private:
  template <class T> void add(const T& v) {
    if constexpr (std::is_same_v<T, Meta>) {
      for (const auto& [k, m] : v.items()) named.set(k, m);
    } else if constexpr (std::is_same_v<T, Options>) {
      options = v;
    } else {
      values.push_back(detail::to_arg(v));
    }
  }
};

class Kernel {
 public:
  Kernel() = default;
  Kernel(std::string name, std::vector<detail::ParamInfo> params, std::function<void(detail::TraceArgs&)> body);

  const std::string& name() const;
  const std::vector<detail::ParamInfo>& params() const;
  // Parameter names (for errors, Meta lookups, autotuning keys); default arg0, arg1, ...
  Kernel& arg_names(std::vector<std::string> names);

  // Errors raised here (arguments, grid, tracing) are tritium::Errors naming grid.loc, the
  // launch's file:line, or for trace errors the kernel body's line.
  template <class... A> void launch(const GridSpec& grid, const A&... args) {
    Collected<count_args<A...>()> c(args...);
    launch_impl(grid, c.values.data(), c.n, c.named, c.options);
  }

  // add[grid](args...)
  struct Launcher {
    Kernel& kernel;
    GridSpec grid;
    template <class... A> void operator()(const A&... args) { kernel.launch(grid, args...); }
  };
  Launcher operator[](GridSpec grid) { return Launcher{*this, std::move(grid)}; }

  // Trace without compiling or launching: the IR text for the given arguments (tests, debugging).
  template <class... A> std::string ir(const A&... args) {
    Collected<count_args<A...>()> c(args...);
    return ir_impl(c.values.data(), c.n, c.named, c.options, false);
  }
  // IR after the optimisation passes (what the backend compiles).
  template <class... A> std::string optimized_ir(const A&... args) {
    Collected<count_args<A...>()> c(args...);
    return ir_impl(c.values.data(), c.n, c.named, c.options, true);
  }

  // The traced and optimised function itself, without compiling it (backend tests, tools).
  template <class... A> std::unique_ptr<ir::Function> optimized_function(const A&... args) {
    Collected<count_args<A...>()> c(args...);
    return function_impl(c.values.data(), c.n, c.named, c.options);
  }

  size_t num_specializations() const;  // compiled specialisations held in memory

  // The same on collected arguments (autotuners, heuristics, tools).
  void launch(const GridSpec& grid, const LaunchArgs& args) {
    launch_impl(grid, args.values.data(), args.values.size(), &args.named, args.options);
  }
  // Compiles (or loads from the disk cache) the specialisation `args` select, without launching
  // it: candidates of an autotuner compile ahead, in parallel. Thread-safe.
  void precompile(const LaunchArgs& args);
  // The same without waiting where compiles run in the background (CUDA, TRITIUM_ASYNC_COMPILE on:
  // runtime/launch_queue.h): the specialisation's first launch waits in the queue, and a compile
  // error is thrown by a later launch or checked driver call. Elsewhere it is precompile().
  void start_compile(const LaunchArgs& args);
  // What a compiled specialisation uses per program, as Triton's kernel.warmup(...) gives
  // (n_regs, metadata.shared): for occupancy calculations such as a persistent grid's size.
  struct Info {
    std::string name;
    Hash128 hash;            // the content hash (disk cache key)
    int n_regs = 0;          // registers per thread (GPU; 0 on the CPU)
    int num_threads = 1;     // threads per program (32 * num_warps on a GPU)
    int64_t shared_bytes = 0;  // shared memory per program (GPU)
  };
  // Compiles (or loads from the caches) the specialisation the arguments select, without
  // launching it, and describes it. Arguments as for a launch (tensors, scalars, Meta, Options).
  template <class... A> Info warmup(const A&... args) { return warmup(LaunchArgs::collect(args...)); }
  Info warmup(const LaunchArgs& args);
  // The content hash of that specialisation (its optimised IR, backend, target, toolchain and
  // options: the disk cache's key) without compiling it.
  Hash128 specialization_hash(const LaunchArgs& args);
  // The meta-parameter values a launch with `args` would use, by name (positional and named).
  Meta meta_values(const LaunchArgs& args);

 private:
  template <class... A> static constexpr size_t count_args() {
    return (size_t(0) + ... + (std::is_same_v<std::remove_cvref_t<A>, Meta> || std::is_same_v<std::remove_cvref_t<A>, Options> ? 0 : 1));
  }
  // Launch arguments sorted out: positional values, named meta-parameters, options.
  template <size_t N> struct Collected {
    std::array<detail::ArgValue, N> values{};
    size_t n = 0;
    const Meta* named = nullptr;
    Options options;
    template <class... A> explicit Collected(const A&... args) { (add(args), ...); }
    template <class T> void add(const T& v) {
      if constexpr (std::is_same_v<T, Meta>) named = &v;
      else if constexpr (std::is_same_v<T, Options>) options = v;
      else values[n++] = detail::to_arg(v);
    }
  };
  void launch_impl(const GridSpec& grid, const detail::ArgValue* args, size_t n, const Meta* named, const Options& options);
  std::string ir_impl(const detail::ArgValue* args, size_t n, const Meta* named, const Options& options, bool optimized);
  std::unique_ptr<ir::Function> function_impl(const detail::ArgValue* args, size_t n, const Meta* named,
                                              const Options& options);

  std::shared_ptr<detail::KernelImpl> impl_;
};

// Builds a kernel from a lambda or function whose parameters are listed in kernel.h's header.
template <class F> Kernel kernel(std::string name, F f, std::vector<std::string> arg_names = {}) {
  using Args = typename detail::callable_args<F>::args;
  constexpr size_t N = std::tuple_size_v<Args>;
  auto params = detail::param_infos<Args>(std::make_index_sequence<N>{});
  auto body = [f](detail::TraceArgs& t) mutable { detail::invoke<F, Args>(f, t, std::make_index_sequence<N>{}); };
  Kernel k(std::move(name), std::move(params), std::move(body));
  if (!arg_names.empty()) k.arg_names(std::move(arg_names));
  return k;
}

}  // namespace tritium
