// Tutorial 02: fused softmax, ported line by line from Triton's second tutorial.
// It shows reductions (tl::max, tl::sum) over a block, loads whose masked-off lanes take a value
// (`other` = -inf, so padding never wins the max nor adds to the sum), and a persistent kernel: a
// fixed number of programs, each walking over rows with a run-time loop (tl::range).
//
// A naive softmax y = exp(x - max(x)) / sum(exp(x - max(x))) written as separate row operations
// reads the matrix from memory about five times and writes it three times. Here one program keeps
// a whole row in registers: it reads each element once and writes each result once, so the kernel
// moves 2 * rows * cols * 4 bytes and is bound by memory bandwidth.
//
//   ./02-fused-softmax            checks the kernel against a float64 softmax on the host
//   ./02-fused-softmax --bench    prints GB/s for 4096 rows x N columns: on the CPU for N in
//                                 {256, 1024, 4096} beside a plain C++ loop, on --backend cuda for
//                                 N in {1024, 4096, 16384} (bench/compare_gpu.py adds Triton)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "autotune/do_bench.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "tutorial.h"

namespace tl = tritium::tl;

// Each program starts at the row of its id and steps by the number of programs, so the rows are
// dealt out round-robin to a grid that is sized to fill the machine once (a "persistent" grid)
// rather than one program per row.
auto softmax_kernel = tritium::kernel(
    "softmax_kernel",
    [](tl::ptr<float> output_ptr, tl::ptr<float> input_ptr, tl::i32 input_row_stride, tl::i32 output_row_stride,
       tl::i32 n_rows, tl::i32 n_cols, int BLOCK_SIZE) {
      auto row_start = tl::program_id(0);
      auto row_step = tl::num_programs(0);
      // A run-time loop (Triton: tl.range(row_start, n_rows, row_step, num_stages=...); Tritium's
      // tl::range has no per-loop num_stages, the launch's Options::num_stages stands for it).
      for (auto row_idx : tl::range(row_start, n_rows, row_step)) {
        // The row stride is how far the pointer moves from one row to the next.
        auto row_start_ptr = input_ptr + row_idx * input_row_stride;
        // BLOCK_SIZE is the next power of two >= n_cols: one block holds a whole row.
        auto col_offsets = tl::arange(0, BLOCK_SIZE);
        auto input_ptrs = row_start_ptr + col_offsets;
        // Lanes past the end of the row read -inf: they do not change the max, and exp(-inf) = 0
        // does not change the sum.
        auto mask = col_offsets < n_cols;
        auto row = tl::load(input_ptrs, mask, -INFINITY);
        // Shift by the row's maximum so that exp never overflows (softmax is shift-invariant).
        auto row_minus_max = row - tl::max(row, 0);
        auto numerator = tl::exp(row_minus_max);
        auto denominator = tl::sum(numerator, 0);
        auto softmax_output = numerator / denominator;
        // Write the row back.
        auto output_row_start_ptr = output_ptr + row_idx * output_row_stride;
        auto output_ptrs = output_row_start_ptr + col_offsets;
        tl::store(output_ptrs, softmax_output, mask);
      }
    },
    {"output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_rows", "n_cols", "BLOCK_SIZE"});

// The host side: y[i, :] = softmax(x[i, :]) for a 2-D x and y of the same shape (rows may be
// strided, columns contiguous).
//
// As Triton's tutorial: the kernel is compiled first (warmup) so that its register and shared
// memory use give the occupancy - how many programs fit on one SM at once - and the persistent
// grid is that many programs per SM. On the CPU one program runs on one thread at a time; a few
// programs per thread of the pool let the pool balance the work when rows do not divide evenly.
void softmax(const tritium::Tensor& x, tritium::Tensor& y) {
  int n_rows = static_cast<int>(x.size(0)), n_cols = static_cast<int>(x.size(1));
  // The smallest power of two that holds a row.
  int BLOCK_SIZE = static_cast<int>(tritium::next_power_of_2(n_cols));
  // Triton's tutorial takes 8 warps whatever the row length. On the GPU rows run faster at 32
  // elements a thread (H100, 4096 x 4096: 4 warps 1.02-1.05 of Triton's GB/s against 1.01-1.02
  // with 8; 4096 x 16384: 16 warps 1.00 against 0.99; 4096 x 1024: one warp 2052-2158 GB/s
  // against 1975-2064 with 8, the reductions then shuffles alone). The CPU backend keeps 8.
  int num_warps = 8;
  if (x.device().is_cuda()) num_warps = std::clamp(BLOCK_SIZE / 1024, 1, 32);
  tritium::Options options{.num_warps = num_warps, .device = x.device()};
  int num_programs;
  if (x.device().is_cuda()) {
    const auto& props = tritium::runtime::cuda::properties(x.device().index);
    auto kernel = softmax_kernel.warmup(y, x, static_cast<int>(x.stride(0)), static_cast<int>(y.stride(0)), n_rows,
                                        n_cols, BLOCK_SIZE, options);
    // Programs per SM by the register file (max_registers_per_block is a whole SM's file on every
    // architecture since Volta) and by shared memory; Triton's formula, plus the 2048 resident
    // threads and resident CTAs per SM it leaves out (light kernels would otherwise ask for more
    // than fit).
    int occupancy = props.max_registers_per_block / (std::max(1, kernel.n_regs) * props.warp_size * num_warps);
    if (kernel.shared_bytes > 0)
      occupancy = std::min<int64_t>(occupancy, props.max_shared_memory_per_multiprocessor / kernel.shared_bytes);
    occupancy = std::clamp(occupancy, 1, std::min(2048 / (props.warp_size * num_warps), props.max_blocks_per_multiprocessor));
    num_programs = props.multiprocessor_count * occupancy;
  } else {
    num_programs = static_cast<int>(tritium::runtime::ThreadPool::global().size()) * 4;
  }
  num_programs = std::min(num_programs, n_rows);
  softmax_kernel[{num_programs}](y, x, static_cast<int>(x.stride(0)), static_cast<int>(y.stride(0)), n_rows, n_cols,
                                 BLOCK_SIZE, options);
}

// The reference for --bench: the same three passes per row as a plain loop (max; exp and sum;
// divide), compiled -O3 -march=native, rows spread over the same thread pool.
void softmax_plain(const float* x, float* y, int64_t n_rows, int64_t n_cols) {
  tritium::runtime::ThreadPool::global().parallel_for(n_rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* in = x + r * n_cols;
      float* out = y + r * n_cols;
      float m = -INFINITY;
      for (int64_t c = 0; c < n_cols; ++c) m = std::max(m, in[c]);
      float s = 0;
      for (int64_t c = 0; c < n_cols; ++c) s += (out[c] = std::exp(in[c] - m));
      for (int64_t c = 0; c < n_cols; ++c) out[c] = out[c] / s;
    }
  });
}

// Runs the kernel on a random n_rows x n_cols matrix whose rows are padded to a longer stride
// (input padding holds huge values, output padding NaN), and compares with a float64 softmax.
// Returns the largest relative error, or infinity when an element was not written or the
// padding of the output was touched.
double check(const tutorial::Args& args, int n_rows, int n_cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0, 1);
  const int pad = 13;  // an odd stride: rows are not aligned
  const int stride = n_cols + pad;
  std::vector<float> hx(static_cast<size_t>(n_rows) * stride, 1e30f);  // read by an unmasked load: wins the max
  for (int r = 0; r < n_rows; ++r)
    for (int c = 0; c < n_cols; ++c) hx[static_cast<size_t>(r) * stride + c] = normal(rng);
  auto x_buf = tritium::Tensor::from_vector(hx, {n_rows, stride}, args.device);
  auto y_buf = tritium::Tensor::from_vector(std::vector<float>(hx.size(), NAN), {n_rows, stride}, args.device);
  auto x = x_buf.slice(1, 0, n_cols), y = y_buf.slice(1, 0, n_cols);
  softmax(x, y);
  std::vector<float> result = y_buf.to_vector<float>();

  double max_rel = 0;
  std::vector<double> ref(n_cols);
  for (int r = 0; r < n_rows; ++r) {
    const float* in = &hx[static_cast<size_t>(r) * stride];
    const float* out = &result[static_cast<size_t>(r) * stride];
    double m = -INFINITY, s = 0;
    for (int c = 0; c < n_cols; ++c) m = std::max(m, double(in[c]));
    for (int c = 0; c < n_cols; ++c) s += ref[c] = std::exp(double(in[c]) - m);
    for (int c = 0; c < n_cols; ++c) {
      double rel = std::abs(double(out[c]) - ref[c] / s) / (ref[c] / s);
      if (!(rel <= 1.0)) return INFINITY;  // NaN: never written
      max_rel = std::max(max_rel, rel);
    }
    for (int c = n_cols; c < stride; ++c)
      if (!std::isnan(out[c])) return INFINITY;  // a store past the end of the row
  }
  return max_rel;
}

int run_tutorial(const tutorial::Args& args) {
  std::mt19937 rng(0);
  // float32 softmax: the inputs are rounded once, exp is accurate to a few ulp (approximate on
  // GPUs, like __expf), and the sum of n_cols terms adds at most ~log2(n_cols) roundings in a
  // tree reduction; 1e-5 relative leaves a wide margin over the ~1e-6 measured.
  const double tolerance = 1e-5;
  bool ok = true;
  // On the GPU (32 elements a thread) these rows take 1, 2, 4, 16 and 32 warps.
  for (auto [n_rows, n_cols] :
       {std::pair{1823, 781}, std::pair{257, 1500}, std::pair{1, 3001}, std::pair{5, 15000}, std::pair{3, 20000}}) {
    double err = check(args, n_rows, n_cols, rng);
    bool pass = err <= tolerance;
    std::printf("softmax of %d x %d on %s: max relative error = %g  %s%s\n", n_rows, n_cols, args.device.str().c_str(),
                err, pass ? "OK" : "FAILED",
                std::isinf(err) ? " (an output was not written, or a store went past the end of a row)" : "");
    ok = ok && pass;
  }
  if (!ok) return 1;
  if (!args.bench) return 0;

  bool cpu = args.device.is_cpu();
  const int M = 4096;
  std::vector<int64_t> columns =
      tutorial::bench_sizes(args, cpu ? std::vector<int64_t>{256, 1024, 4096} : std::vector<int64_t>{1024, 4096, 16384});
  if (cpu) std::printf("\n%6s %6s %14s %14s %8s\n", "M", "N", "Tritium GB/s", "plain GB/s", "ratio");
  else std::printf("\n%6s %6s %14s\n", "M", "N", "Tritium GB/s");
  std::normal_distribution<float> normal(0, 1);
  for (int64_t n_cols : columns) {
    const int N = static_cast<int>(n_cols);
    std::vector<float> hx(static_cast<size_t>(M) * N), hy(hx.size());
    for (auto& v : hx) v = normal(rng);
    auto x = tritium::Tensor::from_vector(hx, {M, N}, args.device);
    auto y = tritium::Tensor::empty({M, N}, tritium::DType::f32, args.device);
    double bytes = 2.0 * M * N * 4;
    double gt = bytes / (tritium::do_bench([&] { softmax(x, y); }, args.device).median_ms * 1e6);
    if (!cpu) {
      std::printf("%6d %6d %14.1f\n", M, N, gt);
      continue;
    }
    double gp = bytes / (tritium::do_bench([&] { softmax_plain(hx.data(), hy.data(), M, N); }).median_ms * 1e6);
    std::printf("%6d %6d %14.1f %14.1f %8.2f\n", M, N, gt, gp, gt / gp);
  }
  return 0;
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, run_tutorial); }
