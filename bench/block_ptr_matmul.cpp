// tritium-bench --block-ptr-matmul: the same f16 matmul written twice - with blocks of pointers
// (tutorial 03's kernel) and with block pointers (tl::make_block_ptr / tl::advance, bounds-checked
// loads) - by default at one config (tutorial 03's first: 128 x 256 x 64, 8 warps, 3 stages; groups
// of 8 always), alternating, so the cost of writing a kernel with block pointers shows.
//   tritium-bench --block-ptr-matmul [--device cuda|cpu] [--sizes 4096,8192] [--rounds 3]
//                                    [--configs 128x256x64w8s3,128x128x64w4s4]
// One line per measurement: "block-ptr-matmul FORM N RATE UNIT CONFIG" (FORM: pointers or
// block_ptr; TFLOP/s on a GPU, GFLOP/s on the CPU; CONFIG as --configs spells it).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <tritium/tritium.h>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "tools/cli.h"

namespace tl = tritium::tl;

namespace {

// Tutorial 03's program ordering: GROUP tile rows at a time.
std::pair<tl::tensor, tl::tensor> grouped_pid(tl::i32 M, tl::i32 N, int BM, int BN, int GROUP) {
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BM), num_pid_n = tl::cdiv(N, BN);
  auto num_pid_in_group = GROUP * num_pid_n;
  auto first_pid_m = (pid / num_pid_in_group) * GROUP;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP);
  return {first_pid_m + ((pid % num_pid_in_group) % group_size_m), (pid % num_pid_in_group) / group_size_m};
}

tritium::Kernel pointer_kernel = tritium::kernel(
    "mm_pointers", [](tl::ptr<tritium::f16_t> a, tl::ptr<tritium::f16_t> b, tl::ptr<tritium::f16_t> c, tl::i32 M,
                      tl::i32 N, tl::i32 K, int BM, int BN, int BK, int GROUP) {
      auto [pid_m, pid_n] = grouped_pid(M, N, BM, BN, GROUP);
      auto offs_am = (pid_m * BM + tl::arange(0, BM)) % M, offs_bn = (pid_n * BN + tl::arange(0, BN)) % N;
      auto offs_k = tl::arange(0, BK);
      auto a_ptrs = a + (offs_am(tl::_, tl::None) * K + offs_k(tl::None, tl::_));
      auto b_ptrs = b + (offs_k(tl::_, tl::None) * N + offs_bn(tl::None, tl::_));
      auto acc = tl::zeros({BM, BN}, tl::float32);
      for (auto k : tl::range(0, tl::cdiv(K, BK))) {
        acc = tl::dot(tl::load(a_ptrs, offs_k(tl::None, tl::_) < K - k * BK, 0.0),
                      tl::load(b_ptrs, offs_k(tl::_, tl::None) < K - k * BK, 0.0), acc);
        a_ptrs += BK;
        b_ptrs += BK * N;
      }
      auto offs_cm = pid_m * BM + tl::arange(0, BM), offs_cn = pid_n * BN + tl::arange(0, BN);
      tl::store(c + N * offs_cm(tl::_, tl::None) + offs_cn(tl::None, tl::_), acc.to(tl::float16),
                (offs_cm(tl::_, tl::None) < M) & (offs_cn(tl::None, tl::_) < N));
    });

tritium::Kernel block_ptr_kernel = tritium::kernel(
    "mm_block_ptr", [](tl::ptr<tritium::f16_t> a, tl::ptr<tritium::f16_t> b, tl::ptr<tritium::f16_t> c, tl::i32 M,
                       tl::i32 N, tl::i32 K, int BM, int BN, int BK, int GROUP) {
      auto [pid_m, pid_n] = grouped_pid(M, N, BM, BN, GROUP);
      auto a_bp = tl::make_block_ptr(a, {M, K}, {K, 1}, {pid_m * BM, 0}, {BM, BK}, {1, 0});
      auto b_bp = tl::make_block_ptr(b, {K, N}, {N, 1}, {0, pid_n * BN}, {BK, BN}, {1, 0});
      auto acc = tl::zeros({BM, BN}, tl::float32);
      for (auto k : tl::range(0, tl::cdiv(K, BK))) {
        (void)k;
        acc = tl::dot(tl::load(a_bp, {0, 1}), tl::load(b_bp, {0, 1}), acc);
        a_bp = tl::advance(a_bp, {0, BK});
        b_bp = tl::advance(b_bp, {BK, 0});
      }
      auto c_bp = tl::make_block_ptr(c, {M, N}, {N, 1}, {pid_m * BM, pid_n * BN}, {BM, BN}, {1, 0});
      tl::store(c_bp, acc.to(tl::float16), {0, 1});
    });

// "128x256x64w8s3": BLOCK_M x BLOCK_N x BLOCK_K, warps, stages.
std::array<int, 5> parse_config(std::string_view text) {
  namespace cli = tritium::cli;
  std::array<int, 5> c{};
  const char* seps = "xxws";
  size_t p = 0;
  for (int i = 0; i < 5; ++i) {
    size_t q = i < 4 ? text.find(seps[i], p) : text.size();
    if (q == std::string_view::npos)
      throw cli::UsageError(fmt::format("--configs: a config reads BMxBNxBKwWARPSsSTAGES, e.g. 128x256x64w8s3, got '{}'", text));
    const int64_t lo = i < 3 ? 16 : 1, hi = i < 3 ? 512 : i == 3 ? 32 : 8;
    c[i] = static_cast<int>(cli::parse_int(i < 3 ? "--configs block" : i == 3 ? "--configs warps" : "--configs stages",
                                           text.substr(p, q - p), lo, hi));
    p = q + 1;
  }
  return c;
}

}  // namespace

int block_ptr_matmul_bench(int argc, char** argv) {
  namespace cli = tritium::cli;
  tritium::Device device = tritium::Device::cuda();
  std::vector<int64_t> sizes = {4096, 8192};
  int rounds = 3;
  std::vector<std::array<int, 5>> configs;
  cli::Args args(argc, argv,
                 std::string("usage: ") + argv[0] +
                     " --block-ptr-matmul [--device cuda|cpu] [--sizes N,... (1 to 32768)] [--rounds R (1 to 1000)]"
                     " [--configs BMxBNxBKwWsS,...]\n",
                 2);
  while (args.next()) {
    if (args.is("--device")) device = cli::parse_device(args.option(), args.value());
    else if (args.is("--configs")) {
      std::string list = args.value();
      for (size_t p = 0; p <= list.size();) {
        size_t q = std::min(list.find(',', p), list.size());
        configs.push_back(parse_config(std::string_view(list).substr(p, q - p)));
        p = q + 1;
      }
    } else if (args.is("--rounds")) rounds = static_cast<int>(cli::parse_int(args.option(), args.value(), 1, 1000));
    else if (args.is("--sizes")) sizes = cli::parse_int_list(args.option(), args.value(), 1, 32768);
    else args.unknown();
  }
  if (!tritium::runtime::device_available(device)) {
    std::fprintf(stderr, "block-ptr-matmul: %s is unavailable: %s\n", device.str().c_str(),
                 tritium::runtime::device_unavailable_reason(device).c_str());
    return 2;
  }
  const bool gpu = device.is_cuda();
  if (configs.empty()) configs.push_back(gpu ? std::array<int, 5>{128, 256, 64, 8, 3} : std::array<int, 5>{32, 32, 32, 4, 1});
  for (int64_t n : sizes) {
    auto& gen = tritium::ops::default_generator();
    tritium::Tensor a = tritium::ops::randn({n, n}, gen, tritium::DType::f32, device).to(tritium::DType::f16);
    tritium::Tensor b = tritium::ops::randn({n, n}, gen, tritium::DType::f32, device).to(tritium::DType::f16);
    tritium::Tensor c1 = tritium::Tensor::empty({n, n}, tritium::DType::f16, device);
    tritium::Tensor c2 = tritium::Tensor::empty({n, n}, tritium::DType::f16, device);
    const int32_t N = static_cast<int32_t>(n);
    for (const auto& [BM, BN, BK, warps, stages] : configs) {
      tritium::Options o{.num_warps = warps, .num_stages = stages, .device = device};
      tritium::Grid grid(tritium::cdiv(n, BM) * tritium::cdiv(n, BN));
      auto run_pointers = [&] { pointer_kernel[grid](a, b, c1, N, N, N, BM, BN, BK, 8, o); };
      auto run_block_ptr = [&] { block_ptr_kernel[grid](a, b, c2, N, N, N, BM, BN, BK, 8, o); };
      run_pointers();
      run_block_ptr();
      // The two forms compute the same sums in the same order: the results agree bit for bit.
      if (c1.to(tritium::DType::f32).to_vector<float>() != c2.to(tritium::DType::f32).to_vector<float>()) {
        std::fprintf(stderr, "block-ptr-matmul: the two kernels disagree at %lld\n", static_cast<long long>(n));
        return 1;
      }
      for (int r = 0; r < rounds; ++r)
        for (auto [name, fn] : {std::pair<const char*, std::function<void()>>{"pointers", run_pointers}, {"block_ptr", run_block_ptr}}) {
          tritium::BenchResult t = tritium::do_bench(fn, device);
          std::printf("block-ptr-matmul %s %lld %.1f %s %dx%dx%dw%ds%d\n", name, static_cast<long long>(n),
                      2.0 * n * n * n / (t.median_ms * 1e-3) / (gpu ? 1e12 : 1e9), gpu ? "TFLOP/s" : "GFLOP/s", BM, BN, BK,
                      warps, stages);
          std::fflush(stdout);
        }
    }
  }
  return 0;
}
