// tritium-bench --ops-matmul: TFLOP/s of the op library's matmul (ops::matmul, autotuned per
// shape on a GPU) on square problems, per dtype and fp32 precision. bench/compare_ops_matmul.py
// sets cuBLAS (through PyTorch) beside these figures in the same run.
//   tritium-bench --ops-matmul [--device cuda|cpu] [--sizes 1024,2048,...] [--dtypes f16,bf16,f32,tf32]
// One line per case: "ops-matmul DTYPE N TFLOPS" (tf32 = f32 under set_float32_matmul_precision("high")).
// With --linear M,K,N instead: the three products of a Linear layer of K inputs and N outputs on
// M rows (forward x W^T, input gradient dY W, weight gradient dY^T x; the transposes are views,
// as autograd makes them), one line each: "ops-linear DTYPE fwd|dgrad|wgrad M K N TFLOPS S", S the
// number of K splits ops::matmul took (1: none; TRITIUM_MATMUL_SPLIT_K forces one, docs/tensors.md).
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <tritium/tritium.h>

#include "autotune/do_bench.h"
#include "ops/matmul_split_k.h"
#include "ops/ops.h"
#include "tools/cli.h"

namespace {

}  // namespace

int ops_matmul_bench(int argc, char** argv) {
  namespace cli = tritium::cli;
  tritium::Device device = tritium::Device::cuda();
  std::vector<int64_t> sizes = {1024, 2048, 4096};
  std::vector<std::string> dtypes = {"f16", "bf16", "f32", "tf32"};
  std::vector<int64_t> linear;  // --linear M,K,N
  cli::Args args(argc, argv,
                 std::string("usage: ") + argv[0] +
                     " --ops-matmul [--device cuda|cpu] [--sizes N,... (1 to 16384)] [--dtypes f16,bf16,f32,tf32]\n"
                     "       [--linear M,K,N]\n",
                 2);
  while (args.next()) {
    if (args.is("--device")) device = cli::parse_device(args.option(), args.value());
    else if (args.is("--sizes")) sizes = cli::parse_int_list(args.option(), args.value(), 1, 16384);
    else if (args.is("--linear")) {
      linear = cli::parse_int_list(args.option(), args.value(), 1, 1 << 20);
      if (linear.size() != 3) throw cli::UsageError("--linear: expected M,K,N");
    }
    else if (args.is("--dtypes")) {
      dtypes.clear();
      std::string list = args.value();
      for (size_t p = 0; p <= list.size();) {
        size_t q = std::min(list.find(',', p), list.size());
        dtypes.push_back(cli::parse_choice("--dtypes", std::string_view(list).substr(p, q - p), {"f16", "bf16", "f32", "tf32"}));
        p = q + 1;
      }
    } else args.unknown();
  }
  if (!tritium::runtime::device_available(device)) {
    std::fprintf(stderr, "ops-matmul: %s is unavailable: %s\n", device.str().c_str(),
                 tritium::runtime::device_unavailable_reason(device).c_str());
    return 2;
  }
  for (const std::string& d : dtypes) {
    tritium::DType dtype = d == "tf32" ? tritium::DType::f32 : tritium::dtype_from_name(d);
    tritium::ops::set_float32_matmul_precision(d == "tf32" ? "high" : "highest");
    if (!linear.empty()) {
      using tritium::Tensor;
      auto& gen = tritium::ops::default_generator();
      const int64_t m = linear[0], k = linear[1], n = linear[2];
      Tensor x = tritium::ops::randn({m, k}, gen, tritium::DType::f32, device).to(dtype);
      Tensor w = tritium::ops::randn({n, k}, gen, tritium::DType::f32, device).to(dtype);
      Tensor dy = tritium::ops::randn({m, n}, gen, tritium::DType::f32, device).to(dtype);
      struct Product { const char* name; Tensor a, b; };
      for (const Product& p : {Product{"fwd", x, w.t()}, Product{"dgrad", dy, w}, Product{"wgrad", dy.t(), x}}) {
        tritium::BenchResult r = tritium::do_bench([&] { (void)tritium::ops::matmul(p.a, p.b); }, device);
        const int64_t splits =
            tritium::ops::split_k::plan_for_product(p.a.size(0), p.b.size(1), p.a.size(1), 1, dtype, device).splits;
        std::printf("ops-linear %s %s %lld %lld %lld %.3f %lld\n", d.c_str(), p.name, static_cast<long long>(m),
                    static_cast<long long>(k), static_cast<long long>(n), 2.0 * m * n * k / (r.median_ms * 1e-3) / 1e12,
                    static_cast<long long>(splits));
        std::fflush(stdout);
      }
      continue;
    }
    for (const int64_t n : sizes) {
      auto& gen = tritium::ops::default_generator();
      tritium::Tensor a = tritium::ops::randn({n, n}, gen, tritium::DType::f32, device).to(dtype);
      tritium::Tensor b = tritium::ops::randn({n, n}, gen, tritium::DType::f32, device).to(dtype);
      tritium::BenchResult r = tritium::do_bench([&] { (void)tritium::ops::matmul(a, b); }, device);
      std::printf("ops-matmul %s %lld %.1f\n", d.c_str(), static_cast<long long>(n),
                  2.0 * n * n * n / (r.median_ms * 1e-3) / 1e12);
      std::fflush(stdout);
    }
  }
  tritium::ops::set_float32_matmul_precision("highest");
  return 0;
}
