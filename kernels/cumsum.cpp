// cumsum: FlagGems' cumsum (flagos-ai/FlagGems src/flag_gems/ops/cumsum.py, read at commit
// c7f325d7f799: get_scan_accum_type, the scan-then-fan kernels scan_part_sum_abc_kernel and
// add_base_sum_abc_kernel with scan_then_fan, the reduce-then-scan row kernels
// reduce_then_scan_block_sum_kernel_row, reduce_then_scan_root_scan_kernel_row and
// reduce_then_scan_block_scan_kernel_row with reduce_then_scan_row, and cumsum_wrapper;
// ext.program_id is src/flag_gems/utils/triton_lang_extension.py's). Apache-2.0, as FlagGems.
//
// The input is viewed as [M, N, K] around the scanned dim. K == 1 (a row scan): rows up to 16384
// are one tile each (the "persistent" root scan, a tl.cumsum); longer rows run three kernels -
// each of up to 4 x SMs programs a row sums its run of tiles, one program scans those sums, then
// each program rescans its tiles from the sum before it. K > 1 (a column scan): programs scan
// BLOCK_SIZE-long pieces of a column and store each piece's sum; when a column has several
// pieces, the sums are scanned (recursively, in place) and added back to the pieces after the
// first. Integers accumulate in int64 (the output is int64 as torch's), f16/bf16 in f32.
//
// Deviations, each for a reason:
//  - cache_modifier=".cg" on the row kernels' stores is dropped: tl::store has no cache
//    modifiers (a caching hint only; the values are the same).
//  - do_not_specialize=["part_num"]: Tritium specialises an integer argument equal to 1 (as
//    Triton does without the flag); part_num is not read by the kernels, so nothing changes.
//  - get_num_sms off CUDA is the CPU thread pool's size (a program runs on one thread).
//  - libentry (a launch cache) has no counterpart: Tritium's launches are cached anyway.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

namespace ext {
tl::tensor program_id(int axis) { return tl::program_id(axis).to(tl::int64); }
}  // namespace ext

int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

int get_num_sms(const tritium::Device& device) {
  if (device.is_cuda()) return tritium::runtime::cuda::properties(device.index).multiprocessor_count;
  return int(tritium::runtime::ThreadPool::global().size());
}

// @tl.constexpr get_scan_accum_type: f16/bf16 accumulate in f32, integers (bool included, as
// Triton's is_int) in int64, anything else in itself.
DType get_scan_accum_type(DType inp_dtype) {
  if (inp_dtype == DType::bf16 || inp_dtype == DType::f16) return tl::float32;
  if (tritium::is_int(inp_dtype) || inp_dtype == DType::i1) return tl::int64;
  return inp_dtype;
}

// The abc kernels' promotion of the loaded values: 64-bit types stay, other integers to int32,
// other floats to float32 (the `tl.constexpr(inp_vals.dtype.is_...())` chain).
tl::tensor scan_input(const tl::tensor& inp_vals) {
  const DType d = inp_vals.dtype();
  if ((d == DType::i64 || d == DType::u64) || d == DType::f64) return inp_vals;
  if (tritium::is_int(d) || d == DType::i1) return inp_vals.to(tl::int32);
  return inp_vals.to(tl::float32);
}

auto scan_part_sum_abc_kernel = tritium::kernel(
    "scan_part_sum_abc_kernel",
    [](P inp, P out, P partial_sum, tl::i32 B, tl::i32 C, tl::i32 part_num, int BLOCK_SIZE) {
      auto pid_a = ext::program_id(0);
      auto pid_b = ext::program_id(1);
      auto pid_c = ext::program_id(2);

      auto a_idx = pid_a;
      auto b_idx = pid_b * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
      auto c_idx = pid_c;

      auto offset = a_idx * B * C + b_idx * C + c_idx;
      auto base_part_offset = a_idx * part_num * C + c_idx;
      auto part_offset = base_part_offset + pid_b * C;

      auto mask = b_idx < B;
      auto inp_ptrs = inp + offset;
      auto inp_vals = scan_input(tl::load(inp_ptrs, mask));
      auto result = tl::cumsum(inp_vals, 0);

      auto part_sum_via_sum = tl::sum(inp_vals);

      auto out_ptrs = out + offset;
      tl::store(out_ptrs, result, mask);

      auto partial_sum_ptrs = partial_sum + part_offset;
      tl::store(partial_sum_ptrs, part_sum_via_sum);
    },
    {"inp", "out", "partial_sum", "B", "C", "part_num", "BLOCK_SIZE"});

auto add_base_sum_abc_kernel = tritium::kernel(
    "add_base_sum_abc_kernel",
    [](P out, P partial_sum, tl::i32 B, tl::i32 C, tl::i32 part_num, int BLOCK_SIZE) {
      auto pid_a = ext::program_id(0);
      auto pid_b = ext::program_id(1);
      auto pid_c = ext::program_id(2);

      auto a_idx = pid_a;
      auto b_idx = pid_b * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
      auto c_idx = pid_c;

      auto base_offset = a_idx * B * C + c_idx;
      auto offset = base_offset + b_idx * C;
      auto base_part_offset = a_idx * part_num * C + c_idx;
      auto last_part_offset = base_part_offset + (pid_b - 1) * C;

      auto mask = b_idx < B;
      auto out_ptrs = out + offset;
      auto out_vals = tl::load(out_ptrs, mask);

      tl::if_(pid_b > 0, [&] {
        auto partial_sum_ptrs = partial_sum + last_part_offset;
        auto last_part_sum_via_sum = tl::load(partial_sum_ptrs);

        auto final_vals = out_vals + last_part_sum_via_sum;
        tl::store(out_ptrs, final_vals.to(out_vals.dtype()), mask);
      });
    },
    {"out", "partial_sum", "B", "C", "part_num", "BLOCK_SIZE"});

auto reduce_then_scan_block_sum_kernel_row = tritium::kernel(
    "reduce_then_scan_block_sum_kernel_row",
    [](P in_ptr, P block_sum_ptr, tl::i32 N, tl::i32 tiles_per_cta, int TILE_SIZE) {
      // The same kernel as the block sum in parallel reduce
      auto pid_n = tl::program_id(1).to(tl::int64);
      auto pid_m = tl::program_id(0).to(tl::int64);
      auto num_programs_n = tl::num_programs(1);
      auto block_offset = pid_n * (tiles_per_cta * TILE_SIZE);
      auto block_end = tl::minimum(block_offset + tiles_per_cta * TILE_SIZE, N);  // Python's min

      const DType acc_dtype = get_scan_accum_type(in_ptr.type().pointee);
      auto acc = tl::zeros({TILE_SIZE}, acc_dtype);
      for (auto start : tl::range(block_offset, block_end, TILE_SIZE)) {
        auto offsets = start + tl::arange(0, TILE_SIZE);
        auto x = tl::load(in_ptr + pid_m * N + offsets, offsets < N).to(acc_dtype);
        acc += x;
      }
      auto block_sum = tl::sum(acc, 0);
      tl::store(block_sum_ptr + pid_m * num_programs_n + pid_n, block_sum);  // cache_modifier=".cg"
    },
    {"in_ptr", "block_sum_ptr", "N", "tiles_per_cta", "TILE_SIZE"});

auto reduce_then_scan_root_scan_kernel_row = tritium::kernel(
    "reduce_then_scan_root_scan_kernel_row",
    [](P in_ptr, P out_ptr, tl::i32 N, int TILE_SIZE) {
      // Almost The same kernel as the persistent scan kernel
      auto pid = tl::program_id(0).to(tl::int64);
      auto offsets = tl::arange(0, TILE_SIZE);
      auto mask = offsets < N;
      const DType acc_dtype = get_scan_accum_type(in_ptr.type().pointee);
      auto x = tl::load(in_ptr + pid * N + offsets, mask, 0).to(acc_dtype);
      auto out = tl::cumsum(x, 0);
      tl::store(out_ptr + pid * N + offsets, out, mask);
    },
    {"in_ptr", "out_ptr", "N", "TILE_SIZE"});

auto reduce_then_scan_block_scan_kernel_row = tritium::kernel(
    "reduce_then_scan_block_scan_kernel_row",
    [](P in_ptr, P previous_sum_ptr, P out_ptr, tl::i32 N, tl::i32 num_tiles_n, tl::i32 tiles_per_cta, int TILE_SIZE) {
      auto pid_m = tl::program_id(0).to(tl::int64);
      auto pid_n = tl::program_id(1).to(tl::int64);
      auto block_offset = pid_n * (tiles_per_cta * TILE_SIZE);
      auto block_end = tl::minimum(block_offset + tiles_per_cta * TILE_SIZE, N);
      const DType acc_dtype = get_scan_accum_type(in_ptr.type().pointee);

      auto prefix = tl::load(previous_sum_ptr + pid_m * num_tiles_n + pid_n - 1, pid_n > 0, 0).to(acc_dtype);
      for (auto start : tl::range(block_offset, block_end, TILE_SIZE)) {
        auto offsets = start + tl::arange(0, TILE_SIZE);
        auto mask = offsets < N;
        auto x = tl::load(in_ptr + pid_m * N + offsets, mask).to(acc_dtype);
        auto tile_scan = prefix + tl::cumsum(x, 0);
        prefix += tl::sum(x, 0);
        tl::store(out_ptr + pid_m * N + offsets, tile_scan, mask);  // cache_modifier=".cg"
      }
    },
    {"in_ptr", "previous_sum_ptr", "out_ptr", "N", "num_tiles_n", "tiles_per_cta", "TILE_SIZE"});

bool g_poison = false;  // while checking: outputs and scratch start as NaN (integers: -1)

Tensor empty(Tensor::Shape shape, DType dtype, tritium::Device device) {
  if (!g_poison) return Tensor::empty(shape, dtype, device);
  return tritium::ops::full(shape, tritium::is_float(dtype) ? NAN : -1.0, dtype, device);
}

void scan_then_fan(const Tensor& inp, const Tensor& out, int64_t A, int64_t B, int64_t C, DType dtype) {
  // TODO(all): tune on target board
  int64_t BLOCK_SIZE = 1024;
  if (B <= 1024 * 4) BLOCK_SIZE = next_power_of_2(B);
  const int64_t part_num = tritium::cdiv(B, BLOCK_SIZE);
  Tensor partial_sum = empty({A, part_num, C}, dtype, inp.device());

  const tritium::Grid grid(A, part_num, C);
  scan_part_sum_abc_kernel[grid](inp, out, partial_sum, B, C, part_num, int(BLOCK_SIZE));

  if (part_num >= 2) {
    scan_then_fan(partial_sum, partial_sum, A, part_num, C, dtype);
    add_base_sum_abc_kernel[grid](out, partial_sum, B, C, part_num, int(BLOCK_SIZE));
  }
}

void reduce_then_scan_row(const Tensor& x, const Tensor& out, int64_t M, int64_t N, DType compute_dtype) {
  const tritium::Options warps4{.num_warps = 4, .num_stages = 3, .device = std::nullopt};
  const tritium::Options warps8{.num_warps = 8, .num_stages = 3, .device = std::nullopt};
  if (N <= 16384) {  // persistent
    const int64_t TILE_SIZE = next_power_of_2(N);
    reduce_then_scan_root_scan_kernel_row[tritium::Grid(M, 1, 1)](x, out, N, int(TILE_SIZE),
                                                                  TILE_SIZE > 2048 ? warps8 : warps4);
    return;
  }
  const int64_t TILE_SIZE = std::min<int64_t>(4096, next_power_of_2(N));
  const tritium::Options& num_warps = TILE_SIZE > 2048 ? warps8 : warps4;
  const int64_t num_tiles = tritium::cdiv(N, TILE_SIZE);
  const int64_t max_ctas = int64_t(get_num_sms(x.device())) * 4;
  const int64_t num_ctas = std::min(num_tiles, max_ctas);
  const int64_t ROOT_SCAN_TILE_SIZE = next_power_of_2(num_ctas);
  const int64_t tiles_per_cta = tritium::cdiv(num_tiles, num_ctas);
  Tensor block_sums = empty({M, num_ctas}, compute_dtype, x.device());
  Tensor block_inclusive_prefix = empty({M, num_ctas}, compute_dtype, x.device());

  // 3-kernel implementation
  reduce_then_scan_block_sum_kernel_row[tritium::Grid(M, num_ctas, 1)](x, block_sums, N, tiles_per_cta, int(TILE_SIZE),
                                                                        num_warps);
  reduce_then_scan_root_scan_kernel_row[tritium::Grid(M, 1, 1)](block_sums, block_inclusive_prefix, num_ctas,
                                                                int(ROOT_SCAN_TILE_SIZE), num_warps);
  reduce_then_scan_block_scan_kernel_row[tritium::Grid(M, num_ctas, 1)](x, block_inclusive_prefix, out, N, num_ctas,
                                                                        tiles_per_cta, int(TILE_SIZE), num_warps);
}

// cumsum_wrapper(inp, dim): integers (and bool) give int64, floats their own dtype.
Tensor cumsum(const Tensor& inp_in, int dim) {
  if (dim < -inp_in.dim() || dim >= inp_in.dim()) tritium::fail("cumsum: Invalid dim {} for {}", dim, inp_in.str());
  dim = (dim + inp_in.dim()) % inp_in.dim();
  Tensor inp = inp_in.contiguous();
  DType dtype = inp.dtype();
  if (tritium::is_int(dtype) || dtype == DType::i1) dtype = DType::i64;
  Tensor out = empty(inp.shape(), dtype, inp.device());
  if (inp.numel() == 0) return out;

  int64_t M = 1;
  const int64_t N = inp.size(dim);
  for (int i = 0; i < dim; ++i) M *= inp.size(i);
  const int64_t K = inp.numel() / M / N;
  DType compute_dtype = out.dtype();
  if (inp.dtype() == DType::f16 || inp.dtype() == DType::bf16) compute_dtype = DType::f32;

  if (K == 1)  // row scan
    reduce_then_scan_row(inp, out, M, N, compute_dtype);
  else  // col scan
    scan_then_fan(inp, out, M, N, K, compute_dtype);
  return out;
}

// ---- check ------------------------------------------------------------------------------------

std::vector<double> host(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// ||cumsum(x, dim) - ref|| / ||ref|| for x of `shape` (normal values; integers in [-50, 50]).
double relative_error(const tritium::Device& device, const Tensor::Shape& shape, int dim, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_int_distribution<int> integer(-50, 50);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> hx(static_cast<size_t>(n));
  for (auto& v : hx) v = tritium::is_float(dtype) ? normal(rng) : double(integer(rng));
  Tensor x = Tensor::from_vector(hx, shape, device).to(dtype);
  hx = host(x);
  g_poison = true;
  Tensor y = cumsum(x, dim);
  g_poison = false;
  if (y.dtype() != (tritium::is_float(dtype) ? dtype : DType::i64)) return INFINITY;
  const std::vector<double> got = host(y);
  dim = (dim + int(shape.size())) % int(shape.size());
  int64_t M = 1, K = 1;
  for (int i = 0; i < dim; ++i) M *= shape[size_t(i)];
  for (size_t i = size_t(dim) + 1; i < shape.size(); ++i) K *= shape[i];
  const int64_t N = shape[size_t(dim)];
  std::vector<double> ref(hx.size());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      double acc = 0;
      for (int64_t j = 0; j < N; ++j) {
        const size_t i = size_t((m * N + j) * K + k);
        acc += hx[i];
        ref[i] = acc;
      }
    }
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    d2 += (got[i] - ref[i]) * (got[i] - ref[i]), r2 += ref[i] * ref[i];
  }
  return std::sqrt(d2 / std::max(r2, 1e-300));
}

bool check(const tritium::Device& device) {
  struct Case {
    Tensor::Shape shape;
    int dim;
    DType dtype;
  };
  // Row scans: one tile (sizes off the power of two), and past 16384 (the three row kernels, each
  // program over several tiles, the last one partial). Column scans: one piece a column, and
  // columns of more than 4096 (pieces of 1024, their sums scanned recursively and added back).
  // Integers are exact (int64 output).
  const std::vector<Case> cases = {{{3, 1000}, 1, DType::f32},       {{2, 40000}, -1, DType::f16},
                                   {{4, 333}, 1, DType::bf16},       {{2, 777}, 1, DType::i32},
                                   {{3, 100, 5}, 1, DType::f32},     {{5000, 3}, 0, DType::f16},
                                   {{2, 50, 7}, 1, DType::i32},      {{2, 3, 20000}, 2, DType::i16}};
  bool ok = true;
  std::string detail;
  double worst = 0;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c.shape, c.dim, c.dtype, uint32_t(c.shape[0] * 31 + c.shape.back()));
    // Integers exact; f32 1e-5; f16 1e-3 and bf16 1e-2 (f32 sums, each output rounded once).
    const double bound = tritium::is_float(c.dtype) ? (c.dtype == DType::bf16 ? 1e-2 : c.dtype == DType::f16 ? 1e-3 : 1e-5) : 0.0;
    if (!(rel <= bound)) ok = false;
    if (bound > 0) worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {} dim {} {:.1e}", detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype),
                          fmt::join(c.shape, "x"), c.dim, rel);
  }
  detail += "; bounds integers 0, f32 1e-5, f16 1e-3, bf16 1e-2; reported: worst error / bound)";
  return suite::report("cumsum", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// FlagGems' benchmark/test_cumsum.py: GenericBenchmark2DOnly's shapes (benchmark/core_shapes.yaml),
// dim 1, its float dtypes and int32.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<std::array<int64_t, 2>> shapes;
  if (device.is_cuda())
    shapes = {{64, 64}, {256, 256}, {1024, 1024}, {4096, 4096}, {1024, 65536}};
  else
    shapes = {{64, 64}, {256, 256}, {16, 65536}};
  std::vector<suite::Row> rows;
  for (DType dtype : {DType::f16, DType::f32, DType::bf16, DType::i32})
    for (auto [M, N] : shapes) {
      Tensor x = tritium::is_float(dtype)
                     ? tritium::ops::randn({M, N}, tritium::ops::default_generator(), DType::f32, device).to(dtype)
                     : tritium::ops::randint(-100, 100, {M, N}, tritium::ops::default_generator(), dtype, device);
      const double ms = tritium::do_bench([&] { cumsum(x, 1); }, device).median_ms;
      const double out_bytes = tritium::is_float(dtype) ? double(tritium::dtype_bytes(dtype)) : 8.0;
      const double bytes = double(M * N) * (double(tritium::dtype_bytes(dtype)) + out_bytes);
      rows.push_back({fmt::format("{}x{} {}", M, N, tritium::dtype_name(dtype)), ms, bytes * 1e-9 / (ms * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "cumsum",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/cumsum.py",
                                    .category = "scan",
                                    .check = check,
                                    .bench = bench});

}  // namespace
