// tritium-bench --ops-matmul: TFLOP/s of the op library's matmul (ops::matmul, autotuned per
// shape on a GPU) on square problems, per dtype and fp32 precision. bench/compare_ops_matmul.py
// sets cuBLAS (through PyTorch) beside these figures in the same run.
//   tritium-bench --ops-matmul [--device cuda|cpu] [--sizes 1024,2048,...] [--dtypes f16,bf16,f32,tf32]
// One line per case: "ops-matmul DTYPE N TFLOPS" (tf32 = f32 under set_float32_matmul_precision("high")).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <tritium/tritium.h>

#include "autotune/do_bench.h"
#include "ops/ops.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

int ops_matmul_bench(int argc, char** argv) {
  tritium::Device device = tritium::Device::cuda();
  std::vector<std::string> sizes = {"1024", "2048", "4096"}, dtypes = {"f16", "bf16", "f32", "tf32"};
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = tritium::Device::parse(argv[++i]);
    else if (!std::strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = split(argv[++i]);
    else if (!std::strcmp(argv[i], "--dtypes") && i + 1 < argc) dtypes = split(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s --ops-matmul [--device cuda|cpu] [--sizes N,...] [--dtypes f16,bf16,f32,tf32]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!tritium::runtime::device_available(device)) {
    std::fprintf(stderr, "ops-matmul: %s is unavailable: %s\n", device.str().c_str(),
                 tritium::runtime::device_unavailable_reason(device).c_str());
    return 2;
  }
  for (const std::string& d : dtypes) {
    tritium::DType dtype = d == "tf32" ? tritium::DType::f32 : tritium::dtype_from_name(d);
    if (dtype == tritium::DType::invalid) {
      std::fprintf(stderr, "ops-matmul: unknown dtype %s\n", d.c_str());
      return 2;
    }
    tritium::ops::set_float32_matmul_precision(d == "tf32" ? "high" : "highest");
    for (const std::string& s : sizes) {
      const int64_t n = std::atoll(s.c_str());
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
