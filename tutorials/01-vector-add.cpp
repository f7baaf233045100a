// Tutorial 01: vector addition, ported line by line from Triton's first tutorial.
// It shows the basic programming model: program ids, block offsets, masks, loads and stores.
//
//   ./01-vector-add            checks the kernel against a plain loop
//   ./01-vector-add --bench    prints GB/s for 2^12 ... 2^26 elements beside a plain C++ loop
//                              (on --backend cuda: 2^12 ... 2^27; bench/compare_gpu.py adds Triton)
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "autotune/do_bench.h"
#include "runtime/thread_pool.h"
#include "tutorial.h"

namespace tl = tritium::tl;

// Each program instance processes BLOCK_SIZE elements.
auto add_kernel = tritium::kernel(
    "add_kernel",
    [](tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::ptr<float> output_ptr, tl::i32 n_elements, int BLOCK_SIZE) {
      auto pid = tl::program_id(0);  // we use a 1-D launch grid, so the axis is 0
      auto block_start = pid * BLOCK_SIZE;
      auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
      auto mask = offsets < n_elements;  // guard the accesses past the end of the vectors
      auto x = tl::load(x_ptr + offsets, mask);
      auto y = tl::load(y_ptr + offsets, mask);
      auto output = x + y;
      tl::store(output_ptr + offsets, output, mask);
    },
    {"x_ptr", "y_ptr", "output_ptr", "n_elements", "BLOCK_SIZE"});

// The host side: pick the grid from the meta-parameters and launch on the tensors' device.
void add(const tritium::Tensor& x, const tritium::Tensor& y, tritium::Tensor& output) {
  int n = static_cast<int>(x.numel());
  auto grid = [n](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(n, meta["BLOCK_SIZE"])); };
  add_kernel[grid](x, y, output, n, 1024);
}

// The reference for --bench: the same computation as a plain loop, compiled -O3 -march=native,
// spread over the same thread pool.
void add_plain(const float* x, const float* y, float* out, int64_t n) {
  tritium::runtime::ThreadPool::global().parallel_for(tritium::cdiv(n, 4096), [&](int64_t b, int64_t e) {
    int64_t lo = b * 4096, hi = std::min(n, e * 4096);
    for (int64_t i = lo; i < hi; ++i) out[i] = x[i] + y[i];
  });
}

int run_tutorial(const tutorial::Args& args) {
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1, 1);

  int n = 98432;  // not a multiple of the block: the last program is masked
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) hx[i] = u(rng), hy[i] = u(rng);
  auto x = tritium::Tensor::from_vector(hx).to(args.device), y = tritium::Tensor::from_vector(hy).to(args.device);
  auto out = tritium::Tensor::from_vector(std::vector<float>(n, NAN)).to(args.device);  // poisoned
  add(x, y, out);
  std::vector<float> result = out.to_vector<float>();
  // x + y in float32 is the correctly rounded sum: the difference to the float64 sum is at most
  // half an ulp. An element never written still holds the NaN poison; it is counted apart, since
  // std::max(max_diff, NaN) would keep max_diff and let it pass.
  double max_diff = 0;
  int unwritten = 0;
  for (int i = 0; i < n; ++i) {
    double d = std::abs(double(result[i]) - (double(hx[i]) + double(hy[i])));
    if (std::isnan(d)) ++unwritten;
    else max_diff = std::max(max_diff, d);
  }
  bool ok = unwritten == 0 && max_diff <= 1.2e-7;
  std::printf("vector add of %d elements on %s: max |diff| = %g, %d never written  %s\n", n, args.device.str().c_str(),
              max_diff, unwritten, ok ? "OK" : "FAILED");
  if (!ok) return 1;
  if (!args.bench) return 0;

  bool cpu = args.device.is_cpu();
  if (cpu) std::printf("\n%12s %14s %14s %8s\n", "size", "Tritium GB/s", "plain GB/s", "ratio");
  else std::printf("\n%12s %14s\n", "size", "Tritium GB/s");
  for (int64_t size : tutorial::bench_sizes(args, tutorial::powers_of_two(12, cpu ? 26 : 27))) {
    std::vector<float> bx(size, 1.0f), by(size, 2.0f), bo(size);
    auto tx = tritium::Tensor::from_vector(bx).to(args.device), ty = tritium::Tensor::from_vector(by).to(args.device);
    auto to = tritium::Tensor::from_vector(bo).to(args.device);
    double bytes = 3.0 * 4 * size;
    double gt = bytes / (tritium::do_bench([&] { add(tx, ty, to); }, args.device).median_ms * 1e6);
    if (!cpu) {
      std::printf("%12lld %14.1f\n", static_cast<long long>(size), gt);
      continue;
    }
    double gp = bytes / (tritium::do_bench([&] { add_plain(bx.data(), by.data(), bo.data(), size); }).median_ms * 1e6);
    std::printf("%12lld %14.1f %14.1f %8.2f\n", static_cast<long long>(size), gt, gp, gt / gp);
  }
  return 0;
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, run_tutorial); }
