// batched_matmul: FlagGems' bmm (flagos-ai/FlagGems src/flag_gems/ops/bmm.py, read at commit
// 0b15beb789b3: bmm_kernel and the wrapper bmm; its configs are the "bmm" entry of
// src/flag_gems/runtime/backend/_nvidia/tune_configs.yaml, its heuristics bmm_heur_divisible_m/n/k
// of .../_nvidia/heuristics_config_utils.py, and ext.program_id / ext.num_programs come from
// src/flag_gems/utils/triton_lang_extension.py). Apache-2.0, as FlagGems.
//
// O[b] = A[b] @ B[b]: the batch is the grid's third axis, programs are re-ordered GROUP_M tile rows
// at a time, and the DIVISIBLE_M/N/K heuristics drop the masks a dimension does not need; the
// accumulator is fp32 (fp64 for fp64 inputs) and tl.dot runs with allow_tf32=False.
//
// Deviations, each for a reason:
//  - FlagGems' libtuner buckets its key (M, N, K log2-rounded, the strides aligned to 32) so that
//    near shapes share a tuning; tritium::autotune keys on the exact values of the same arguments.
//    libentry (a launch cache) has no counterpart: Tritium's launches are cached anyway.
//  - tl.dot(a, b, allow_tf32=False) is input_precision "ieee" (Triton's meaning of that flag).
//  - On the CPU the configs are two CPU-sized tiles (one with GROUP_M = 2, so the re-ordering
//    runs); on CUDA they are FlagGems' twelve.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::Config;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

// flag_gems.utils.triton_lang_extension: program ids as int64 (offsets of large batches).
namespace ext {
tl::tensor program_id(int axis) { return tl::program_id(axis).to(tl::int64); }
tl::tensor num_programs(int axis) { return tl::num_programs(axis).to(tl::int64); }
}  // namespace ext

// runtime.get_tuned_config("bmm"): tune_configs.yaml's list (num_warps 4, stages 2 and 3).
std::vector<Config> get_tuned_config(const tritium::Device& device) {
  auto c = [](int tm, int tn, int tk, int gm, int warps, int stages) {
    return Config(Meta{{"TILE_M", tm}, {"TILE_N", tn}, {"TILE_K", tk}, {"GROUP_M", gm}}, warps, stages);
  };
  if (device.is_cpu()) return {c(32, 32, 32, 1, 4, 1), c(64, 64, 32, 2, 4, 1)};
  std::vector<Config> configs;
  for (int stages : {2, 3})
    for (auto [tm, tn, gm] : {std::array<int, 3>{32, 32, 1}, {64, 32, 2}, {64, 64, 2}, {128, 32, 2}, {128, 64, 2}, {128, 128, 2}})
      configs.push_back(c(tm, tn, 32, gm, 4, stages));
  return configs;
}

auto bmm_kernel = tritium::kernel(
    "bmm_kernel",
    [](P A, P B, P O,  //
       tl::i32 M, tl::i32 N, tl::i32 K,  //
       tl::i32 stride_ab, tl::i32 stride_am, tl::i32 stride_ak,  //
       tl::i32 stride_bb, tl::i32 stride_bk, tl::i32 stride_bn,  //
       tl::i32 stride_ob, tl::i32 stride_om, tl::i32 stride_on,  //
       int TILE_M, int TILE_N, int TILE_K, int GROUP_M,  //
       bool DIVISIBLE_M, bool DIVISIBLE_N, bool DIVISIBLE_K,  //
       bool IS_FP64) {
      // batch offsets
      auto pid_b = ext::program_id(2);
      A += pid_b * stride_ab;
      B += pid_b * stride_bb;
      O += pid_b * stride_ob;

      auto pidx = ext::program_id(0);
      auto pidy = ext::program_id(1);

      tl::tensor pid_m, pid_n;
      if (GROUP_M == 1) {
        pid_m = pidx, pid_n = pidy;
      } else {
        // reorder CTAs
        auto gridx = ext::num_programs(0);
        auto gridy = ext::num_programs(1);
        auto pid = pidx + pidy * gridx;

        auto num_CTA_per_group = gridy * GROUP_M;

        auto group_id = pid / num_CTA_per_group;  // Triton's `//`
        auto inner_group_id = pid % num_CTA_per_group;
        auto GROUP_SIZE = tl::where((group_id * GROUP_M + GROUP_M) > gridx, gridx % GROUP_M, GROUP_M);
        pid_m = group_id * GROUP_M + inner_group_id % GROUP_SIZE;
        pid_n = inner_group_id / GROUP_SIZE;
      }

      auto offs_m = pid_m * TILE_M + tl::arange(0, TILE_M);
      auto offs_n = pid_n * TILE_N + tl::arange(0, TILE_N);
      auto offs_k = tl::arange(0, TILE_K);

      tl::tensor mask_m, mask_n;
      if (!DIVISIBLE_M) mask_m = offs_m < M;
      if (!DIVISIBLE_N) mask_n = offs_n < N;

      auto a_ptrs = A + offs_m(tl::_, tl::None) * stride_am + offs_k(tl::None, tl::_) * stride_ak;
      auto b_ptrs = B + offs_k(tl::_, tl::None) * stride_bk + offs_n(tl::None, tl::_) * stride_bn;
      auto o_ptrs = O + offs_m(tl::_, tl::None) * stride_om + offs_n(tl::None, tl::_) * stride_on;

      auto num_iters = tl::cdiv(K, TILE_K);
      tl::tensor o;
      if (IS_FP64)
        o = tl::zeros({TILE_M, TILE_N}, tl::float64);
      else
        o = tl::zeros({TILE_M, TILE_N}, tl::float32);
      for ([[maybe_unused]] auto _ : tl::range(num_iters)) {
        std::optional<tl::operand> mask_a, mask_b;  // Python's None: no mask
        if (DIVISIBLE_K) {
          if (DIVISIBLE_M)
            mask_a = std::nullopt;
          else
            mask_a = mask_m(tl::_, tl::None);
          if (DIVISIBLE_N)
            mask_b = std::nullopt;
          else
            mask_b = mask_n(tl::None, tl::_);
        } else {
          auto mask_k = offs_k < K;
          if (DIVISIBLE_M)
            mask_a = mask_k(tl::None, tl::_);
          else
            mask_a = mask_m(tl::_, tl::None) & mask_k(tl::None, tl::_);
          if (DIVISIBLE_N)
            mask_b = mask_k(tl::_, tl::None);
          else
            mask_b = mask_k(tl::_, tl::None) & mask_n(tl::None, tl::_);
        }

        auto a = tl::load(a_ptrs, mask_a);
        auto b = tl::load(b_ptrs, mask_b);

        offs_k += TILE_K;
        a_ptrs += TILE_K * stride_ak;
        b_ptrs += TILE_K * stride_bk;

        o += tl::dot(a, b, std::nullopt, std::nullopt, "ieee");  // allow_tf32=False
      }

      std::optional<tl::operand> mask_c;
      if (DIVISIBLE_M && DIVISIBLE_N)
        mask_c = std::nullopt;
      else if (DIVISIBLE_M && !DIVISIBLE_N)
        mask_c = mask_n(tl::None, tl::_);
      else if (!DIVISIBLE_M && DIVISIBLE_N)
        mask_c = mask_m(tl::_, tl::None);
      else
        mask_c = mask_m(tl::_, tl::None) & mask_n(tl::None, tl::_);
      tl::store(o_ptrs, o, mask_c);
    },
    {"A", "B", "O", "M", "N", "K", "stride_ab", "stride_am", "stride_ak", "stride_bb", "stride_bk", "stride_bn",
     "stride_ob", "stride_om", "stride_on", "TILE_M", "TILE_N", "TILE_K", "GROUP_M", "DIVISIBLE_M", "DIVISIBLE_N",
     "DIVISIBLE_K", "IS_FP64"});

// @libtuner(configs=runtime.get_tuned_config("bmm"), key=["M", "N", "K", "stride_am", "stride_bk"], ...)
// @triton.heuristics(runtime.get_heuristic_config("bmm")): one tuner per backend.
tritium::Autotuner& bmm_tuner(const tritium::Device& device) {
  auto make = [](const tritium::Device& d) {
    tritium::AutotuneOptions options;
    options.key = {"M", "N", "K", "stride_am", "stride_bk"};
    options.heuristics = {
        {"DIVISIBLE_M", [](const tritium::ArgView& args) { return args.integer("M") % args.integer("TILE_M") == 0; }},
        {"DIVISIBLE_N", [](const tritium::ArgView& args) { return args.integer("N") % args.integer("TILE_N") == 0; }},
        {"DIVISIBLE_K", [](const tritium::ArgView& args) { return args.integer("K") % args.integer("TILE_K") == 0; }},
    };
    return tritium::autotune(bmm_kernel, get_tuned_config(d), options);
  };
  if (device.is_cpu()) {
    static tritium::Autotuner cpu = make(tritium::Device::cpu());
    return cpu;
  }
  static tritium::Autotuner cuda = make(tritium::Device::cuda());
  return cuda;
}

bool g_poison = false;  // while checking: the output starts as NaN

// `only`: launch that config (its DIVISIBLE_* as the tuner's heuristics give them) instead of the
// autotuner's choice - the CPU check runs every config once, each checked.
Tensor bmm(const Tensor& A, const Tensor& B, const Config* only = nullptr) {
  if (A.dim() != 3 || B.dim() != 3) tritium::fail("bmm: expects 3-D tensors, got {} and {}", A.str(), B.str());
  if (A.size(0) != B.size(0)) tritium::fail("bmm: Batch dim mismatch: {} and {}", A.size(0), B.size(0));
  if (A.size(2) != B.size(1)) tritium::fail("bmm: K dim mismatch: A is {}, B is {}", A.str(), B.str());
  if (A.dtype() != B.dtype() || !tritium::is_float(A.dtype()) || tritium::is_fp8(A.dtype()))
    tritium::fail("bmm: A and B must share a dtype among f16, bf16, f32 and f64, got {} and {}",
                  tritium::dtype_name(A.dtype()), tritium::dtype_name(B.dtype()));
  if (A.device() != B.device()) tritium::fail("bmm: A is on {} and B on {}", A.device().str(), B.device().str());
  const int64_t batch = A.size(0), M = A.size(1), K = A.size(2), N = B.size(2);
  Tensor out = g_poison ? tritium::ops::full({batch, M, N}, NAN, A.dtype(), A.device())
                        : Tensor::empty({batch, M, N}, A.dtype(), A.device());
  if (batch == 0 || M == 0 || N == 0) return out;
  for (const Tensor* t : {&A, &B, static_cast<const Tensor*>(&out)})
    for (int d = 0; d < 3; ++d)
      if (t->stride(d) > INT32_MAX || t->size(d) > INT32_MAX)
        tritium::fail("bmm: sizes and strides must fit in int32 (the kernel's integer arguments), got {}", t->str());

  auto grid_fn = [=](const Meta& meta) {
    return tritium::Grid(tritium::cdiv(M, meta["TILE_M"]), tritium::cdiv(N, meta["TILE_N"]), batch);
  };
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  if (only) {
    Meta meta = only->meta;
    meta.set("DIVISIBLE_M", M % meta["TILE_M"] == 0);
    meta.set("DIVISIBLE_N", N % meta["TILE_N"] == 0);
    meta.set("DIVISIBLE_K", K % meta["TILE_K"] == 0);
    meta.set("IS_FP64", A.dtype() == DType::f64);
    bmm_kernel[grid_fn(meta)](A, B, out, i32(M), i32(N), i32(K), i32(A.stride(0)), i32(A.stride(1)), i32(A.stride(2)),
                              i32(B.stride(0)), i32(B.stride(1)), i32(B.stride(2)), i32(out.stride(0)),
                              i32(out.stride(1)), i32(out.stride(2)), meta,
                              tritium::Options{.num_warps = only->num_warps, .num_stages = only->num_stages,
                                               .device = A.device()});
    return out;
  }
  bmm_tuner(A.device())[grid_fn](A, B, out,  //
                                 i32(M), i32(N), i32(K),  //
                                 i32(A.stride(0)), i32(A.stride(1)), i32(A.stride(2)),  //
                                 i32(B.stride(0)), i32(B.stride(1)), i32(B.stride(2)),  //
                                 i32(out.stride(0)), i32(out.stride(1)), i32(out.stride(2)),  //
                                 Meta{{"IS_FP64", A.dtype() == DType::f64}});
  return out;
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// ||O - A @ B|| / ||A @ B|| for random A [batch, M, K], B [batch, K, N] (B a transposed view of
// [batch, N, K] when b_t), the reference in float64 from the rounded inputs.
double relative_error(const tritium::Device& device, int64_t batch, int64_t M, int64_t N, int64_t K, DType dtype,
                      bool b_t, uint32_t seed, const Config* config) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> ha(size_t(batch * M * K)), hb(size_t(batch * K * N));
  for (auto& v : ha) v = normal(rng);
  for (auto& v : hb) v = normal(rng);
  Tensor a = Tensor::from_vector(ha, {batch, M, K}, device).to(dtype);
  Tensor b = b_t ? Tensor::from_vector(hb, {batch, N, K}, device).to(dtype).transpose(1, 2)
                 : Tensor::from_vector(hb, {batch, K, N}, device).to(dtype);
  ha = host(a), hb = host(b);
  g_poison = true;
  Tensor o = bmm(a, b, config);
  g_poison = false;
  std::vector<double> got = host(o);
  std::vector<double> ref(size_t(batch * M * N), 0.0);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j)
          ref[size_t((z * M + i) * N + j)] += ha[size_t((z * M + i) * K + k)] * hb[size_t((z * K + k) * N + j)];
  // suite::rel_error in double (it takes floats, which would cap fp64 results at 6e-8).
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    d2 += (got[i] - ref[i]) * (got[i] - ref[i]), r2 += ref[i] * ref[i];
  }
  return std::sqrt(d2 / std::max(r2, 1e-300));
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t batch, M, N, K;
    DType dtype;
    bool b_t;
  };
  // Sizes off the tiles (every mask), sizes on them (the DIVISIBLE_* paths without masks), a
  // transposed B (other strides, another tuning key), and each dtype bmm takes.
  const std::vector<Case> cases = {{3, 77, 50, 45, DType::f16, false}, {2, 128, 64, 96, DType::f16, true},
                                   {2, 70, 130, 64, DType::bf16, false}, {2, 33, 65, 70, DType::f32, true},
                                   {2, 40, 24, 37, DType::f64, false}};
  bool ok = true;
  std::string detail;
  double worst_f16 = 0;
  // On the CPU every config of get_tuned_config once, each checked (the tuner would time them all
  // and check the fastest: most of the 2 s the suite allows a CPU check); on a GPU the tuner's
  // choice, as the original runs.
  std::vector<Config> configs;
  if (device.is_cpu()) configs = get_tuned_config(device);
  for (const Case& c : cases) {
    const uint32_t seed = uint32_t(c.M * 7 + c.K);
    double rel = configs.empty() ? relative_error(device, c.batch, c.M, c.N, c.K, c.dtype, c.b_t, seed, nullptr) : 0.0;
    for (const Config& config : configs)
      rel = std::max(rel, relative_error(device, c.batch, c.M, c.N, c.K, c.dtype, c.b_t, seed, &config));
    // DESIGN.md: fp16 1e-3, bf16 1e-2, fp32 (allow_tf32=False: ieee) 1e-5; fp64 is held to 1e-12.
    const double bound = c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : c.dtype == DType::f32 ? 1e-5 : 1e-12;
    ok = ok && rel <= bound;
    if (c.dtype == DType::f16) worst_f16 = std::max(worst_f16, rel);
    detail += fmt::format("{}{} {}x{}x{}x{}{} {:.1e}", detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype), c.batch,
                          c.M, c.N, c.K, c.b_t ? " B^T" : "", rel);
  }
  detail += configs.empty() ? std::string("; the autotuned config") : fmt::format("; the worst of {} configs each", configs.size());
  detail += "; bounds f16 1e-3, bf16 1e-2, f32 1e-5, f64 1e-12)";
  return suite::report("batched_matmul", device, ok ? worst_f16 : INFINITY, 1e-3, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// FlagGems' BlasBenchmark shapes (benchmark/core_shapes.yaml, "B, M, N, K") in f16 and bf16.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<std::array<int64_t, 4>> shapes;
  std::vector<DType> dtypes;
  if (device.is_cuda()) {
    shapes = {{2, 384, 384, 384}, {2, 4096, 4096, 4096}, {16, 1024, 1024, 1024}, {16, 2048, 2048, 2048}, {16, 4096, 4096, 4096}};
    dtypes = {DType::f16, DType::bf16};
  } else {
    shapes = {{2, 256, 256, 256}};
    dtypes = {DType::f16};
  }
  std::vector<suite::Row> rows;
  for (DType dtype : dtypes)
    for (auto [batch, M, N, K] : shapes) {
      Tensor a = tritium::ops::randn({batch, M, K}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      Tensor b = tritium::ops::randn({batch, K, N}, tritium::ops::default_generator(), DType::f32, device).to(dtype);
      const double ms = tritium::do_bench([&] { bmm(a, b); }, device).median_ms;
      std::string shape = M == N && N == K ? fmt::format("B={} M=N=K={} {}", batch, M, tritium::dtype_name(dtype))
                                           : fmt::format("B={} M={} N={} K={} {}", batch, M, N, K, tritium::dtype_name(dtype));
      rows.push_back({shape, ms, 2.0 * double(batch * M) * double(N) * double(K) * 1e-12 / (ms * 1e-3), "TFLOP/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "batched_matmul",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/bmm.py",
                                    .category = "dot",
                                    .check = check,
                                    .bench = bench});

}  // namespace
