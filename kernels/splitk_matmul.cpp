// splitk_matmul: Triton's own library matmul with split-K (triton-lang/triton
// python/triton/ops/matmul.py, read at commit 0922ae1a14ee: _kernel, its configs
// (get_configs_io_bound, with SPLIT_K 2-16 and the init_to_zero('C') pre-hook), the EVEN_K
// heuristic and the wrapper _matmul._call; pruned by python/triton/ops/matmul_perf_model.py's
// early_config_prune and estimate_matmul_time with top_k 10). Triton 2.x shipped it as
// triton.ops.matmul; Triton 3.0 removed triton.ops (FlagGems' mm and others descend from it).
// MIT licence, as Triton.
//
// C = A @ B with the K dimension split over SPLIT_K programs (the grid's second axis): program
// (pid, pid_z) sums the K blocks pid_z, pid_z + SPLIT_K, ... of its tile and adds its partial
// tile into C with tl.atomic_add (C zeroed before, by the configs' pre-hook); SPLIT_K = 1 stores.
// Tiles are taken in GROUP_M-grouped order; rows and columns wrap (% M, % N) for the loads and are
// masked at the store.
//
// Deviations, each for a reason:
//  - dot_out_dtype is a tritium::DType held in an int meta-parameter (meta-parameters are numbers
//    and bools here, not dtypes); allow_tf32 maps to input_precision "tf32" / "ieee".
//  - The perf model reads the device's clock, memory clock, bus width and SM count from the CUDA
//    driver (runtime/cuda_device.h) where the original asks nvidia-smi and Triton's driver.
//  - On the CPU the configs are three CPU-sized tiles, SPLIT_K 1, 4 and 2 (a program runs on one
//    core); early_config_prune keeps only its dtype rule there (shared memory, stages and the
//    perf model describe GPUs). On CUDA they are the original's 218 configs, pruned as there.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::ArgView;
using tritium::Config;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

// _ordered_datatypes and get_higher_dtype.
const std::vector<DType> _ordered_datatypes = {DType::f16, DType::bf16, DType::f32};

DType get_higher_dtype(DType a, DType b) {
  if (a == b) return a;
  for (DType d : {a, b})
    if (std::find(_ordered_datatypes.begin(), _ordered_datatypes.end(), d) == _ordered_datatypes.end())
      tritium::fail("matmul: {} is not one of f16, bf16, f32 (and A and B differ: {} and {})", tritium::dtype_name(d),
                    tritium::dtype_name(a), tritium::dtype_name(b));
  for (DType d : _ordered_datatypes) {
    if (a == d) return b;
    if (b == d) return a;
  }
  return a;
}

// init_to_zero(name): the split-K configs' pre-hook (the partial tiles are added into C).
std::function<void(const ArgView&)> init_to_zero(const std::string& name) {
  return [name](const ArgView& nargs) {
    Tensor t = nargs.tensor(name);
    tritium::ops::fill_(t, 0);
  };
}

Config config(int bm, int bn, int bk, int split_k, int num_stages, int num_warps) {
  Config c(Meta{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"SPLIT_K", split_k}}, num_warps, num_stages);
  if (split_k > 1) c.pre_hook = init_to_zero("C");
  return c;
}

std::vector<Config> get_configs_io_bound() {
  std::vector<Config> configs;
  for (int num_stages : {2, 3, 4, 5, 6})
    for (int block_m : {16, 32})
      for (int block_k : {32, 64})
        for (int block_n : {32, 64, 128, 256}) {
          int num_warps = block_n <= 64 ? 2 : 4;
          configs.push_back(config(block_m, block_n, block_k, 1, num_stages, num_warps));
          // split_k
          for (int split_k : {2, 4, 8, 16}) configs.push_back(config(block_m, block_n, block_k, split_k, num_stages, num_warps));
        }
  return configs;
}

std::vector<Config> get_configs(const tritium::Device& device) {
  if (device.is_cpu())
    return {config(32, 32, 32, 1, 1, 4), config(32, 32, 32, 4, 1, 4), config(64, 64, 32, 2, 1, 4)};
  std::vector<Config> configs = {
      // basic configs for compute-bound matmuls
      config(128, 256, 32, 1, 3, 8), config(256, 128, 32, 1, 3, 8), config(256, 64, 32, 1, 4, 4),
      config(64, 256, 32, 1, 4, 4), config(128, 128, 32, 1, 4, 4), config(128, 64, 32, 1, 4, 4),
      config(64, 128, 32, 1, 4, 4), config(128, 32, 32, 1, 4, 4), config(64, 32, 32, 1, 5, 2),
      // good for int8
      config(128, 256, 128, 1, 3, 8), config(256, 128, 128, 1, 3, 8), config(256, 64, 128, 1, 4, 4),
      config(64, 256, 128, 1, 4, 4), config(128, 128, 128, 1, 4, 4), config(128, 64, 64, 1, 4, 4),
      config(64, 128, 64, 1, 4, 4), config(128, 32, 64, 1, 4, 4), config(64, 32, 64, 1, 5, 2),
  };
  for (Config& c : get_configs_io_bound()) configs.push_back(std::move(c));
  return configs;
}

// ---- matmul_perf_model ------------------------------------------------------------------------

using tritium::runtime::cuda::DeviceProperties;

double get_max_tensorcore_tflops(DType dtype, double clock_rate_khz, const DeviceProperties& p) {
  const double num_subcores = p.multiprocessor_count * 4;
  double ops_per_sub_core;
  if (p.cc_major < 8) {
    ops_per_sub_core = 256;  // 2 4x4x4 Tensor Cores
  } else if (dtype == DType::f32 || dtype == DType::i32) {
    ops_per_sub_core = 256;
  } else if (dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::i16) {
    ops_per_sub_core = 512;
  } else if (dtype == DType::i8 || tritium::is_fp8(dtype)) {
    ops_per_sub_core = 1024;
  } else {
    tritium::fail("matmul perf model: dtype {} not supported", tritium::dtype_name(dtype));
  }
  return num_subcores * clock_rate_khz * ops_per_sub_core * 1e-9;
}

double get_max_simd_tflops(DType dtype, double clock_rate_khz, const DeviceProperties& p) {
  const double num_subcores = p.multiprocessor_count * 4;
  double ops_per_sub_core;
  if (dtype == DType::f32) ops_per_sub_core = 32;
  else if (dtype == DType::f16 || (p.cc_major >= 8 && dtype == DType::bf16)) ops_per_sub_core = 64;
  else tritium::fail("matmul perf model: dtype {} not supported", tritium::dtype_name(dtype));
  return num_subcores * clock_rate_khz * ops_per_sub_core * 1e-9;
}

// return DRAM bandwidth in GB/s
double get_dram_gbps(const DeviceProperties& p) {
  return double(p.memory_clock_rate_khz) * p.memory_bus_width_bits * 2 / 1e6 / 8;
}

// return compute throughput in TOPS
double get_tflops(const DeviceProperties& p, int64_t num_ctas, int num_warps, DType dtype) {
  const double total_warps = double(num_ctas) * std::min(num_warps, 4);
  const double num_subcores = p.multiprocessor_count * 4;  // on recent GPUs
  const double share = std::min(num_subcores, total_warps) / num_subcores;
  if (p.cc_major < 8 && dtype == DType::f32) return share * get_max_simd_tflops(dtype, p.clock_rate_khz, p);
  return share * get_max_tensorcore_tflops(dtype, p.clock_rate_khz, p);
}

// return estimated running time in ms = max(compute, loading) + store
double estimate_matmul_time(const Config& config, const ArgView& args) {
  const DeviceProperties& p = tritium::runtime::cuda::properties(args.tensor("A").device().index);
  const DType dtype = args.tensor("A").dtype();
  const double dtsize = double(args.tensor("A").element_size());
  const int64_t BLOCK_M = config.meta["BLOCK_M"], BLOCK_N = config.meta["BLOCK_N"], SPLIT_K = config.meta["SPLIT_K"];
  int64_t M = args.integer("M"), N = args.integer("N");
  const int64_t K = args.integer("K");

  const int64_t num_cta_m = tritium::cdiv(M, BLOCK_M);
  const int64_t num_cta_n = tritium::cdiv(N, BLOCK_N);
  const int64_t num_cta_k = SPLIT_K;
  const int64_t num_ctas = num_cta_m * num_cta_n * num_cta_k;

  // If the input is smaller than the block size
  M = std::max(M, BLOCK_M), N = std::max(N, BLOCK_N);

  // time to compute
  const double total_ops = 2.0 * double(M) * double(N) * double(K) / (1024.0 * 1024 * 1024);  // GOPS
  const double tput = get_tflops(p, num_ctas, config.num_warps, dtype);
  const double compute_ms = total_ops / tput;

  // time to load data
  const double active_cta_ratio_bw1 = std::min(1.0, double(num_ctas) / 32);  // 32 active ctas are enough to saturate
  const double active_cta_ratio_bw2 = std::max(std::min(1.0, double(num_ctas - 32) / (108 - 32)), 0.0);  // 32-108, remaining 5%
  const double dram_bw = get_dram_gbps(p) * (active_cta_ratio_bw1 * 0.95 + active_cta_ratio_bw2 * 0.05);  // in GB/s
  const double l2_bw = dram_bw * 4;  // rough estimation (should be 4.7 for A100?)
  // assume 80% of (following) loads are in L2 cache
  const double load_a_dram = double(M) * K * dtsize * (1 + 0.2 * double(num_cta_n - 1));
  const double load_a_l2 = double(M) * K * dtsize * 0.8 * double(num_cta_n - 1);
  const double load_b_dram = double(N) * K * dtsize * (1 + 0.2 * double(num_cta_m - 1));
  const double load_b_l2 = double(N) * K * dtsize * 0.8 * double(num_cta_m - 1);
  // total
  const double total_dram = (load_a_dram + load_b_dram) / (1024 * 1024);  // MB
  const double total_l2 = (load_a_l2 + load_b_l2) / (1024 * 1024);
  // loading time in ms
  const double load_ms = total_dram / dram_bw + total_l2 / l2_bw;

  // estimate storing time
  const double store_bw = dram_bw * 0.6;  // :o
  const double store_c_dram = double(M) * N * dtsize * double(SPLIT_K) / (1024 * 1024);  // MB
  double store_ms;
  if (SPLIT_K == 1) {
    store_ms = store_c_dram / store_bw;
  } else {
    const double reduce_bw = store_bw;
    store_ms = store_c_dram / reduce_bw;
    // c.zero_()
    const double zero_ms = double(M) * N * 2 / (1024 * 1024) / store_bw;
    store_ms += zero_ms;
  }
  return std::max(compute_ms, load_ms) + store_ms;
}

std::vector<Config> early_config_prune(const std::vector<Config>& configs_in, const ArgView& named_args) {
  const Tensor& A = named_args.tensor("A");
  const DType dtype = A.dtype();
  std::vector<Config> configs = configs_in;
  const bool gpu = A.device().is_cuda();
  const DeviceProperties* p = gpu ? &tritium::runtime::cuda::properties(A.device().index) : nullptr;

  // 1. make sure we have enough smem
  if (gpu) {
    const int64_t dtsize = A.element_size();
    std::vector<Config> pruned_configs;
    for (const Config& config : configs) {
      const int64_t BLOCK_M = config.meta["BLOCK_M"], BLOCK_N = config.meta["BLOCK_N"], BLOCK_K = config.meta["BLOCK_K"];
      const int64_t max_shared_memory = p->max_shared_memory_per_block_optin;
      const int64_t required_shared_memory = (BLOCK_M + BLOCK_N) * BLOCK_K * config.num_stages * dtsize;
      if (required_shared_memory <= max_shared_memory) pruned_configs.push_back(config);
    }
    configs = std::move(pruned_configs);
  }

  // Some dtypes do not allow atomic_add
  if (dtype != DType::f16 && dtype != DType::f32)
    std::erase_if(configs, [](const Config& c) { return c.meta["SPLIT_K"] != 1; });
  if (!gpu) return configs;

  // group configs by (BLOCK_M,_N,_K, SPLIT_K, num_warps), in order of first appearance (a Python dict)
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int>> keys;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int>, std::vector<Config>> configs_map;
  for (const Config& config : configs) {
    auto key = std::make_tuple(config.meta["BLOCK_M"], config.meta["BLOCK_N"], config.meta["BLOCK_K"],
                               config.meta["SPLIT_K"], config.num_warps);
    if (!configs_map.count(key)) keys.push_back(key);
    configs_map[key].push_back(config);
  }

  std::vector<Config> pruned_configs;
  for (const auto& k : keys) {
    std::vector<Config> v = configs_map[k];
    auto [BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_warps] = k;
    if (p->cc_major >= 8) {
      // compute cycles (only works for ampere GPUs)
      const double mmas = double(BLOCK_M * BLOCK_N * BLOCK_K) / (16 * 8 * 16);
      const double mma_cycles = mmas / std::min(4, num_warps) * 8;

      const double ldgsts_latency = 300;  // Does this matter?
      const double optimal_num_stages = ldgsts_latency / mma_cycles;

      // nearest stages, prefer large #stages (heapq.nsmallest: stable)
      auto distance = [&](const Config& c) {
        const double d = c.num_stages - optimal_num_stages;
        return d < 0 ? 10 + std::abs(d) : d;
      };
      std::stable_sort(v.begin(), v.end(), [&](const Config& a, const Config& b) { return distance(a) < distance(b); });
      for (size_t i = 0; i < v.size() && i < 2; ++i) pruned_configs.push_back(v[i]);
    } else {  // Volta & Turing only supports num_stages <= 2
      Config random_config = v[0];
      random_config.num_stages = 2;
      pruned_configs.push_back(random_config);
    }
  }
  return pruned_configs;
}

// ---- the kernel -------------------------------------------------------------------------------

auto _kernel = tritium::kernel(
    "_kernel",
    [](P A, P B, P C, tl::i32 M, tl::i32 N, tl::i32 K,  //
       tl::i32 stride_am, tl::i32 stride_ak,  //
       tl::i32 stride_bk, tl::i32 stride_bn,  //
       tl::i32 stride_cm, tl::i32 stride_cn,  //
       int dot_out_dtype,  //
       bool allow_tf32,  //
       bool fp8_fast_accum,  //
       int BLOCK_M, int BLOCK_N, int BLOCK_K,  //
       int GROUP_M, int SPLIT_K, bool EVEN_K, bool AB_DTYPE) {
      const DType acc_dtype = static_cast<DType>(dot_out_dtype);
      const std::string input_precision = allow_tf32 ? "tf32" : "ieee";
      const DType c_dtype = C.type().pointee;  // C.dtype.element_ty
      // matrix multiplication
      auto pid = tl::program_id(0);
      auto pid_z = tl::program_id(1);
      auto grid_m = tl::cdiv(M, BLOCK_M);
      auto grid_n = tl::cdiv(N, BLOCK_N);
      // re-order program ID for better L2 performance
      auto width = GROUP_M * grid_n;
      auto group_id = pid / width;
      auto group_size = tl::minimum(grid_m - group_id * GROUP_M, GROUP_M);
      auto pid_m = group_id * GROUP_M + (pid % group_size);
      auto pid_n = (pid % width) / group_size;
      // do matrix multiplication
      auto rm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
      auto rn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
      auto ram = tl::max_contiguous(tl::multiple_of(rm % M, BLOCK_M), BLOCK_M);
      auto rbn = tl::max_contiguous(tl::multiple_of(rn % N, BLOCK_N), BLOCK_N);
      auto rk = pid_z * BLOCK_K + tl::arange(0, BLOCK_K);
      // pointers
      A = A + (ram(tl::_, tl::None) * stride_am + rk(tl::None, tl::_) * stride_ak);
      B = B + (rk(tl::_, tl::None) * stride_bk + rbn(tl::None, tl::_) * stride_bn);
      auto acc = tl::zeros({BLOCK_M, BLOCK_N}, acc_dtype);
      for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K * SPLIT_K))) {
        tl::tensor a, b;
        if (EVEN_K) {
          a = tl::load(A);
          b = tl::load(B);
        } else {
          auto k_remaining = K - k * (BLOCK_K * SPLIT_K);
          auto _0 = tl::zeros({1, 1}, c_dtype);
          a = tl::load(A, rk(tl::None, tl::_) < k_remaining, _0);
          b = tl::load(B, rk(tl::_, tl::None) < k_remaining, _0);
        }
        if (AB_DTYPE) {
          a = a.to(c_dtype);
          b = b.to(c_dtype);
        }
        if (fp8_fast_accum)
          acc = tl::dot(a, b, acc, acc_dtype, input_precision);
        else
          acc += tl::dot(a, b, std::nullopt, acc_dtype, input_precision);
        A += BLOCK_K * SPLIT_K * stride_ak;
        B += BLOCK_K * SPLIT_K * stride_bk;
      }
      acc = acc.to(c_dtype);
      // rematerialize rm and rn to save registers
      rm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
      rn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
      C = C + (rm(tl::_, tl::None) * stride_cm + rn(tl::None, tl::_) * stride_cn);
      auto mask = (rm < M)(tl::_, tl::None) & (rn < N)(tl::None, tl::_);
      // handles write-back with reduction-splitting
      if (SPLIT_K == 1)
        tl::store(C, acc, mask);
      else
        tl::atomic_add(C, acc, mask);
    },
    {"A", "B", "C", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn",
     "dot_out_dtype", "allow_tf32", "fp8_fast_accum", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "EVEN_K",
     "AB_DTYPE"});

// 'EVEN_K': lambda args: args['K'] % (args['BLOCK_K'] * args['SPLIT_K']) == 0
bool even_k(const ArgView& args) { return args.integer("K") % (args.integer("BLOCK_K") * args.integer("SPLIT_K")) == 0; }

// @autotune(configs=..., key=['M', 'N', 'K'], prune_configs_by={early_config_prune, estimate_matmul_time,
// top_k 10}) over @heuristics({'EVEN_K': ...}); one tuner per backend.
tritium::Autotuner& matmul_tuner(const tritium::Device& device) {
  auto make = [](const tritium::Device& d) {
    tritium::AutotuneOptions options;
    options.key = {"M", "N", "K"};
    options.prune_configs_by.early_config_prune = early_config_prune;
    if (d.is_cuda()) {
      options.prune_configs_by.perf_model = estimate_matmul_time;
      options.prune_configs_by.top_k = 10;
    }
    options.heuristics = {{"EVEN_K", even_k}};
    return tritium::autotune(_kernel, get_configs(d), options);
  };
  if (device.is_cpu()) {
    static tritium::Autotuner cpu = make(tritium::Device::cpu());
    return cpu;
  }
  static tritium::Autotuner cuda = make(tritium::Device::cuda());
  return cuda;
}

bool g_poison = false;  // while checking: C starts as NaN (the split-K pre-hook zeroes it first)

// _matmul._call. With `forced` (the check), that config is launched directly: its pre-hook, the
// EVEN_K heuristic and the grid as the autotuner would.
Tensor _call(Tensor a, Tensor b, std::optional<DType> dot_out_dtype, bool allow_tf32, bool fp8_fast_accum,
             const Config* forced = nullptr) {
  const tritium::Device device = a.device();
  // handle non-contiguous inputs if necessary
  if (a.dim() == 2 && a.stride(0) > 1 && a.stride(1) > 1) a = a.contiguous();
  if (b.dim() == 2 && b.stride(0) > 1 && b.stride(1) > 1) b = b.contiguous();
  // checks constraints
  if (a.dim() != 2 || b.dim() != 2) tritium::fail("matmul: expects 2-D matrices, got {} and {}", a.str(), b.str());
  if (a.size(1) != b.size(0))
    tritium::fail("matmul: incompatible dimensions: A is {} x {}, B is {} x {}", a.size(0), a.size(1), b.size(0), b.size(1));
  if (a.device() != b.device()) tritium::fail("matmul: A is on {} and B on {}", a.device().str(), b.device().str());
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  // allocates output
  DType c_dtype;
  if (tritium::is_fp8(a.dtype()) || tritium::is_fp8(b.dtype())) c_dtype = DType::f16;
  else if (a.dtype() == DType::i8 || b.dtype() == DType::i8) c_dtype = DType::i32;
  else c_dtype = get_higher_dtype(a.dtype(), b.dtype());
  Tensor c = g_poison ? tritium::ops::full({M, N}, NAN, c_dtype, device) : Tensor::empty({M, N}, c_dtype, device);
  DType acc;
  if (!dot_out_dtype) {
    acc = (c_dtype == DType::f16 || c_dtype == DType::f32 || c_dtype == DType::bf16) ? DType::f32 : DType::i32;
  } else {
    if (*dot_out_dtype == DType::f16) acc = DType::f16;
    else if (*dot_out_dtype == DType::f32 || *dot_out_dtype == DType::bf16) acc = DType::f32;
    else acc = DType::i32;
  }
  bool ab_dtype = true;
  if (tritium::is_fp8(a.dtype()) && tritium::is_fp8(b.dtype())) ab_dtype = false;
  if (a.dtype() == DType::i8 && b.dtype() == DType::i8) ab_dtype = false;
  if (M == 0 || N == 0) return c;
  for (int64_t v : {M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), M * N})
    if (v > INT32_MAX) tritium::fail("matmul: {} x {} x {} needs offsets above 2^31", M, N, K);
  // launch kernel
  auto grid = [=](const Meta& META) {
    return tritium::Grid(tritium::cdiv(M, META["BLOCK_M"]) * tritium::cdiv(N, META["BLOCK_N"]), META["SPLIT_K"]);
  };
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  Meta meta{{"dot_out_dtype", static_cast<int>(acc)}, {"allow_tf32", allow_tf32}, {"fp8_fast_accum", fp8_fast_accum},
            {"GROUP_M", 8}, {"AB_DTYPE", ab_dtype}};
  if (!forced) {
    matmul_tuner(device)[grid](a, b, c, i32(M), i32(N), i32(K),  //
                               i32(a.stride(0)), i32(a.stride(1)),  //
                               i32(b.stride(0)), i32(b.stride(1)),  //
                               i32(c.stride(0)), i32(c.stride(1)),  //
                               meta);
    return c;
  }
  for (const auto& [name, value] : forced->meta.items()) meta.set(name, value);
  const int64_t split_k = forced->meta["SPLIT_K"], block_k = forced->meta["BLOCK_K"];
  meta.set("EVEN_K", K % (block_k * split_k) == 0);
  if (split_k > 1) tritium::ops::fill_(c, 0);  // init_to_zero('C')
  _kernel[grid(forced->meta)](a, b, c, i32(M), i32(N), i32(K),  //
                              i32(a.stride(0)), i32(a.stride(1)),  //
                              i32(b.stride(0)), i32(b.stride(1)),  //
                              i32(c.stride(0)), i32(c.stride(1)),  //
                              meta, tritium::Options{.num_warps = forced->num_warps, .num_stages = forced->num_stages, .device = device});
  return c;
}

// matmul = _matmul.apply (forward's defaults: dot_out_dtype=None, allow_tf32=True, fp8_fast_accum=True)
Tensor matmul(const Tensor& a, const Tensor& b) { return _call(a, b, std::nullopt, true, true); }

// ---- check ------------------------------------------------------------------------------------

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).to_vector<float>(); }

double relative_error(const tritium::Device& device, int64_t M, int64_t N, int64_t K, DType dtype, bool b_t,
                      uint32_t seed, const Config* forced) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> ha(size_t(M * K)), hb(size_t(K * N));
  for (auto& v : ha) v = normal(rng);
  for (auto& v : hb) v = normal(rng);
  Tensor a = Tensor::from_vector(ha, {M, K}, device).to(dtype);
  Tensor b = b_t ? Tensor::from_vector(hb, {N, K}, device).to(dtype).t() : Tensor::from_vector(hb, {K, N}, device).to(dtype);
  ha = host(a), hb = host(b);
  g_poison = true;
  Tensor c = forced ? _call(a, b, std::nullopt, true, true, forced) : matmul(a, b);
  g_poison = false;
  std::vector<double> ref(size_t(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) ref[size_t(i * N + j)] += double(ha[size_t(i * K + k)]) * hb[size_t(k * N + j)];
  return suite::rel_error(host(c), ref);
}

bool check(const tritium::Device& device) {
  // Every config of the backend launched directly (SPLIT_K 1 stores, 4 and 2 add into C), then
  // the autotuned wrapper on f16, f32 and bf16 (whose split-K configs are pruned: no atomics on
  // bf16 in the original). Sizes off the blocks (EVEN_K false, rows and columns wrapped and
  // masked), K a multiple of BLOCK_K * SPLIT_K (EVEN_K true), and B transposed.
  // Bounds (DESIGN.md): f16 inputs 1e-3 (C is f16 and split-K adds partial tiles in f16, as the
  // original), f32 1e-5 on the CPU (fp32 arithmetic) and 1e-3 on CUDA (allow_tf32=True: tf32),
  // bf16 1e-2.
  auto bound_of = [&](DType d) {
    return d == DType::bf16 ? 1e-2 : d == DType::f32 ? (device.is_cuda() ? 1e-3 : 1e-5) : 1e-3;
  };
  bool ok = true;
  double worst_f16 = 0;
  std::string detail;
  auto run = [&](const std::string& what, int64_t M, int64_t N, int64_t K, DType dtype, bool b_t, const Config* forced) {
    const double rel = relative_error(device, M, N, K, dtype, b_t, uint32_t(M + 3 * N + 7 * K), forced);
    ok = ok && rel <= bound_of(dtype);
    if (dtype == DType::f16) worst_f16 = std::max(worst_f16, rel);
    detail += fmt::format("{}{} {:.1e}", detail.empty() ? "(" : ", ", what, rel);
  };
  const std::vector<Config> configs = get_configs(device);
  std::vector<const Config*> chosen;
  if (device.is_cpu()) {
    for (const Config& c : configs) chosen.push_back(&c);
  } else {  // one of each SPLIT_K (any BLOCK_M 16 one: the io-bound configs)
    for (int64_t sk : {1, 2, 4, 8, 16})
      for (const Config& c : configs)
        if (c.meta["SPLIT_K"] == sk && c.meta["BLOCK_M"] == 16) {
          chosen.push_back(&c);
          break;
        }
  }
  for (const Config* c : chosen)
    run(fmt::format("SPLIT_K={} {}x{}", c->meta["SPLIT_K"], c->meta["BLOCK_M"], c->meta["BLOCK_N"]), 100, 70, 300,
        DType::f16, false, c);
  const Config* split = chosen.size() > 1 ? chosen[1] : chosen[0];
  run("EVEN_K f16", 96, 40, 256, DType::f16, true, split);
  run("f32", 50, 33, 200, DType::f32, false, split);
  run("tuned f16", 130, 66, 250, DType::f16, false, nullptr);
  run("tuned bf16", 61, 90, 77, DType::bf16, true, nullptr);
  detail += ")";
  return suite::report("splitk_matmul", device, ok ? worst_f16 : INFINITY, 1e-3, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// The matmul shapes of Triton's python/test/regression/test_performance.py, which timed
// triton.ops.matmul: square, tall-skinny (where split-K pays) and their transposes, f16.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<std::array<int64_t, 3>> shapes;
  if (device.is_cuda())
    shapes = {{1024, 1024, 1024}, {8192, 8192, 8192}, {16, 4096, 4096}, {64, 8192, 8192}, {4096, 64, 4096}, {16, 1024, 1024}};
  else
    shapes = {{256, 256, 256}, {16, 1024, 1024}};
  std::vector<suite::Row> rows;
  for (auto [M, N, K] : shapes) {
    Tensor a = tritium::ops::randn({M, K}, tritium::ops::default_generator(), DType::f32, device).to(DType::f16);
    Tensor b = tritium::ops::randn({K, N}, tritium::ops::default_generator(), DType::f32, device).to(DType::f16);
    const double ms = tritium::do_bench([&] { matmul(a, b); }, device).median_ms;
    rows.push_back({fmt::format("M={} N={} K={} f16", M, N, K), ms,
                    2.0 * double(M) * double(N) * double(K) * 1e-12 / (ms * 1e-3), "TFLOP/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "splitk_matmul",
                                    .source = "triton-lang/triton python/triton/ops/matmul.py",
                                    .category = "dot",
                                    .check = check,
                                    .bench = bench});

}  // namespace
