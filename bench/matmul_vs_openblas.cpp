// tritium-bench --matmul [SIZE [DTYPE]]: SIZE^3 ops::matmul (default fp32 1024^3) on the CPU beside
// OpenBLAS sgemm (dgemm for f64; f16/bf16 alone), at 1 thread and at every thread of the machine,
// in one run.
//
// The thread pool and OpenBLAS fix their thread counts at start-up, so each thread count runs in
// a child process of this program (TRITIUM_NUM_THREADS and OPENBLAS_NUM_THREADS set). OpenBLAS
// is loaded with dlopen: the build does not need it, and without it only Tritium is timed.
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <tritium/tritium.h>

#include "tools/cli.h"

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "runtime/thread_pool.h"

namespace {

// cblas_sgemm's and cblas_dgemm's signatures (the enums are plain ints in the ABI).
template <class T>
using gemm_fn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, T alpha, const T* a, int lda,
                         const T* b, int ldb, T beta, T* c, int ldc);
constexpr int kRowMajor = 101, kNoTrans = 111;

void* openblas_symbol(const char* name) {
  for (const char* lib_name : {"libopenblas.so.0", "libopenblas.so"})
    if (void* lib = dlopen(lib_name, RTLD_NOW | RTLD_LOCAL)) return dlsym(lib, name);
  return nullptr;
}

double gflops(int64_t n, double ms) { return 2.0 * double(n) * n * n / (ms * 1e6); }

// OpenBLAS ?gemm on the same inputs: GFLOP/s, and the relative difference of Tritium's result.
template <class T>
std::pair<double, double> time_openblas(const char* symbol, const std::vector<float>& ha, const std::vector<float>& hb,
                                        const tritium::Tensor& c, int64_t n) {
  auto gemm = reinterpret_cast<gemm_fn<T>>(openblas_symbol(symbol));
  if (!gemm) return {0, 0};
  std::vector<T> a(ha.begin(), ha.end()), b(hb.begin(), hb.end()), r(n * n);
  auto call = [&] { gemm(kRowMajor, kNoTrans, kNoTrans, int(n), int(n), int(n), T(1), a.data(), int(n), b.data(), int(n), T(0), r.data(), int(n)); };
  double g = gflops(n, tritium::do_bench(call).median_ms);
  const T* got = c.data_ptr<T>();
  double num = 0, den = 0;
  for (int64_t i = 0; i < n * n; ++i) num += double(got[i] - r[i]) * double(got[i] - r[i]), den += double(r[i]) * double(r[i]);
  return {g, std::sqrt(num / den)};
}

// One thread count, in this process: prints "threads tritium_gflops openblas_gflops rel_diff"
// (OpenBLAS figures 0 when it is absent or has no gemm for the dtype).
int run_child(int64_t n, tritium::DType dtype) {
  using tritium::Tensor;
  std::vector<float> ha(n * n), hb(n * n);
  uint32_t s = 12345;
  for (auto* v : {&ha, &hb})
    for (float& x : *v) x = float((s = s * 1664525u + 1013904223u) >> 8) / float(1 << 24) * 2.0f - 1.0f;
  Tensor a = Tensor::from_vector(ha, {n, n}).to(dtype), b = Tensor::from_vector(hb, {n, n}).to(dtype);
  Tensor c = tritium::ops::matmul(a, b);
  double t_ms = tritium::do_bench([&] { c = tritium::ops::matmul(a, b); }).median_ms;
  std::pair<double, double> blas{0, 0};
  if (dtype == tritium::DType::f32) blas = time_openblas<float>("cblas_sgemm", ha, hb, c, n);
  if (dtype == tritium::DType::f64) blas = time_openblas<double>("cblas_dgemm", ha, hb, c, n);
  std::printf("%d %.2f %.2f %.3g\n", tritium::runtime::ThreadPool::global().size(), gflops(n, t_ms), blas.first, blas.second);
  return 0;
}

}  // namespace

int matmul_bench(int argc, char** argv) {
  namespace cli = tritium::cli;
  if (argc > 2 && (!std::strcmp(argv[2], "--help") || !std::strcmp(argv[2], "-h"))) {
    std::printf("usage: %s --matmul [SIZE (1 to 16384, default 1024) [f32|f64|f16|bf16]]\n", argv[0]);
    return 0;
  }
  if (argc > 4) throw cli::UsageError(fmt::format("--matmul takes at most SIZE and a dtype, got '{}' after them", argv[4]));
  int64_t n = argc > 2 ? cli::parse_int("--matmul SIZE", argv[2], 1, 16384) : 1024;
  std::string dtype_name = argc > 3 ? cli::parse_choice("--matmul dtype", argv[3], {"f32", "f64", "f16", "bf16"}) : "f32";
  tritium::DType dtype = tritium::dtype_from_name(dtype_name);
  if (std::getenv("TRITIUM_BENCH_MATMUL_CHILD")) return run_child(n, dtype);
  const char* gemm = dtype == tritium::DType::f32 ? "cblas_sgemm" : dtype == tritium::DType::f64 ? "cblas_dgemm" : nullptr;
  bool have_blas = gemm && openblas_symbol(gemm);
  std::printf("%s matmul %lld^3, ops::matmul (CPU) vs OpenBLAS %s\n\n", dtype_name.c_str(), static_cast<long long>(n),
              have_blas ? gemm : gemm ? "(libopenblas not found: Tritium only)" : "(no OpenBLAS gemm for this dtype)");
  std::printf("%8s %16s %16s %8s %14s\n", "threads", "Tritium GFLOP/s", "OpenBLAS GFLOP/s", "ratio", "rel diff");
  int all = static_cast<int>(std::thread::hardware_concurrency());
  for (int threads : {1, all}) {
    std::string cmd = "TRITIUM_BENCH_MATMUL_CHILD=1 TRITIUM_NUM_THREADS=" + std::to_string(threads) +
                      " OPENBLAS_NUM_THREADS=" + std::to_string(threads) + " /proc/" + std::to_string(getpid()) +
                      "/exe --matmul " + std::to_string(n) + " " + dtype_name;
    FILE* p = popen(cmd.c_str(), "r");
    int t = 0;
    double tg = 0, bg = 0, diff = 0;
    bool ok = p && std::fscanf(p, "%d %lf %lf %lf", &t, &tg, &bg, &diff) == 4;
    if (!p || pclose(p) != 0 || !ok) return std::fprintf(stderr, "the benchmark child (%d threads) failed\n", threads), 1;
    if (have_blas) std::printf("%8d %16.1f %16.1f %8.2f %14.2g\n", t, tg, bg, tg / bg, diff);
    else std::printf("%8d %16.1f %16s %8s %14s\n", t, tg, "-", "-", "-");
    if (all == 1) break;
  }
  return 0;
}
