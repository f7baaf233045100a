// dyt: Liger-Kernel's Dynamic Tanh, y = tanh(alpha * x) * gamma (+ beta) (linkedin/Liger-Kernel
// src/liger_kernel/ops/dyt.py, read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel):
// _dyt_fwd_kernel (a 2-D grid: BLOCK_N column blocks by rows) and _dyt_bwd_kernel (column blocks
// by NUM_SMS programs striding over the rows, each writing fp32 partial dgamma / dbeta rows and a
// dalpha slot, which the wrapper sums), both autotuned over BLOCK_N x num_stages x num_warps (key
// N; the backward resets DA between trials), with the wrappers liger_dyt_fwd / liger_dyt_bwd.
//
// Deviations:
//  - Beta = None (HAVE_BETA False) passes X as the unused Beta / DB pointers: Tritium has no None
//    pointer argument; the kernels never touch them then, as the original's.
//  - On the CPU the config list is one config (BLOCK_N 1024; num_warps / num_stages mean nothing
//    there) and NUM_SMS a fixed 4; on CUDA the original's 18 configs and the multiprocessor count.
//  - libdevice's tanh is tl::tanh; LigerDyTFunction's autograd plumbing is left out.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "liger_utils.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::Config;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

constexpr int kCpuNumSms = 4;

// [triton.Config({"BLOCK_N": bn}, num_stages=ns, num_warps=nw) for bn in [1024, 2048, 4096]
//  for ns in [1, 2] for nw in [4, 8, 16]]
std::vector<Config> dyt_configs(const tritium::Device& device) {
  if (device.is_cpu()) return {Config(Meta{{"BLOCK_N", 1024}}, 4, 1)};
  std::vector<Config> configs;
  for (int bn : {1024, 2048, 4096})
    for (int ns : {1, 2})
      for (int nw : {4, 8, 16}) configs.push_back(Config(Meta{{"BLOCK_N", bn}}, nw, ns));
  return configs;
}

auto _dyt_fwd_kernel = tritium::kernel(
    "_dyt_fwd_kernel",
    [](P X, P Y, P Alpha, P Gamma, P Beta, bool HAVE_BETA, int N, int BLOCK_N) {
      auto col = tl::program_id(0).to(tl::int64) * BLOCK_N + tl::arange(0, BLOCK_N);
      auto mask = col < N;
      auto row_id = tl::program_id(1).to(tl::int64);

      X += row_id * N;
      Y += row_id * N;
      auto alpha = tl::load(Alpha).to(tl::float32);

      auto gamma = tl::load(Gamma + col, mask, 0.0).to(tl::float32);

      auto x = tl::load(X + col, mask, 0.0).to(tl::float32);

      auto tanh_x = tl::tanh(alpha * x);
      auto y = tanh_x * gamma;
      if (HAVE_BETA) {
        auto beta = tl::load(Beta + col, mask, 0.0).to(tl::float32);
        y += beta;
      }
      tl::store(Y + col, y, mask);
    },
    {"X", "Y", "Alpha", "Gamma", "Beta", "HAVE_BETA", "N", "BLOCK_N"});

auto _dyt_bwd_kernel = tritium::kernel(
    "_dyt_bwd_kernel",
    [](P DY, P DX, P DA, P DG, P DB, P X, P Alpha, P Gamma, bool HAVE_BETA, tl::i32 M, int N, int BLOCK_N) {
      auto col = tl::program_id(0).to(tl::int64) * BLOCK_N + tl::arange(0, BLOCK_N);
      auto mask = col < N;
      auto start_row_id = tl::program_id(1).to(tl::int64);

      auto alpha = tl::load(Alpha).to(tl::float32);
      tl::tensor da = tl::full({}, 0.0, tl::float32);  // Python's da = 0.0, carried as an fp32 scalar
      auto gamma = tl::load(Gamma + col, mask, 0.0).to(tl::float32);
      auto dg = tl::zeros({BLOCK_N}, tl::float32);
      tl::tensor db;
      if (HAVE_BETA) db = tl::zeros({BLOCK_N}, tl::float32);
      for (auto row_id : tl::range(start_row_id, M, tl::num_programs(1))) {
        auto x = tl::load(X + row_id * N + col, mask, 0.0).to(tl::float32);
        auto dy = tl::load(DY + row_id * N + col, mask, 0.0).to(tl::float32);
        auto tanh_x = tl::tanh(alpha * x);
        if (HAVE_BETA) db += dy;
        dg += dy * tanh_x;
        auto tmp = (1 - tanh_x * tanh_x) * dy * gamma;
        da += tl::sum(x * tmp, 0);
        auto dx = alpha * tmp;
        tl::store(DX + row_id * N + col, dx, mask);
      }

      tl::store(DG + start_row_id * N + col, dg, mask);
      if (HAVE_BETA) tl::store(DB + start_row_id * N + col, db, mask);
      tl::store(DA + start_row_id * tl::cdiv(N, 512) + tl::program_id(0), da);
    },
    {"DY", "DX", "DA", "DG", "DB", "X", "Alpha", "Gamma", "HAVE_BETA", "M", "N", "BLOCK_N"});

// One tuner per kernel and backend (Triton's @triton.autotune keeps one per kernel and device).
tritium::Autotuner make_tuner(bool backward, const tritium::Device& device) {
  tritium::AutotuneOptions options;
  options.key = {"N"};
  // DA is indexed by program_id(0): configs of different BLOCK_N write different slots, so DA is
  // zeroed between trials.
  if (backward) options.reset_to_zero = {"DA"};
  return tritium::autotune(backward ? _dyt_bwd_kernel : _dyt_fwd_kernel, dyt_configs(device), options);
}

// One tuner per kernel and backend (Triton's @triton.autotune keeps one per kernel and device).
tritium::Autotuner& tuner(bool backward, const tritium::Device& device) {
  if (device.is_cpu()) {
    static tritium::Autotuner cpu_fwd = make_tuner(false, tritium::Device::cpu());
    static tritium::Autotuner cpu_bwd = make_tuner(true, tritium::Device::cpu());
    return backward ? cpu_bwd : cpu_fwd;
  }
  static tritium::Autotuner cuda_fwd = make_tuner(false, tritium::Device::cuda());
  static tritium::Autotuner cuda_bwd = make_tuner(true, tritium::Device::cuda());
  return backward ? cuda_bwd : cuda_fwd;
}

bool g_poison = false;  // while checking: y, dx, dg and db start as NaN

Tensor output(const std::vector<int64_t>& shape, DType dtype, const tritium::Device& device) {
  return g_poison ? tritium::ops::full(shape, NAN, dtype, device) : Tensor::empty(shape, dtype, device);
}

int32_t i32(int64_t v) {
  if (v > INT32_MAX) tritium::fail("dyt: {} does not fit the kernels' int32 arguments", v);
  return static_cast<int32_t>(v);
}

// liger_dyt_fwd(x [M, N] contiguous, alpha [1], gamma [N], beta [N] or none)
Tensor liger_dyt_fwd(const Tensor& x, const Tensor& alpha, const Tensor& gamma, const std::optional<Tensor>& beta) {
  const bool HAVE_BETA = beta.has_value();
  const int64_t M = x.size(0), N = x.size(1);
  Tensor y = output({M, N}, x.dtype(), x.device());
  auto grid = [=](const Meta& meta) { return tritium::Grid(tritium::cdiv(N, meta["BLOCK_N"]), M); };
  tuner(false, x.device())[grid](x, y, alpha, gamma, HAVE_BETA ? *beta : x, HAVE_BETA, i32(N));
  return y;
}

struct Grads {
  Tensor dx, da, dg;
  std::optional<Tensor> db;
};

Grads liger_dyt_bwd(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& gamma,
                    const std::optional<Tensor>& beta) {
  const int64_t M = x.size(0), N = x.size(1);
  const bool HAVE_BETA = beta.has_value();
  const int NUM_SMS = x.device().is_cuda() ? tritium::runtime::cuda::properties(x.device().index).multiprocessor_count : kCpuNumSms;
  Tensor da = tritium::ops::zeros({NUM_SMS, tritium::cdiv(N, 512)}, DType::f32, x.device());
  Tensor dg = Tensor::empty({NUM_SMS, N}, DType::f32, x.device());
  std::optional<Tensor> db;
  if (HAVE_BETA) db = Tensor::empty({NUM_SMS, N}, DType::f32, x.device());
  Tensor dx = output({M, N}, dy.dtype(), dy.device());
  auto grid = [=](const Meta& meta) { return tritium::Grid(tritium::cdiv(N, meta["BLOCK_N"]), NUM_SMS); };
  tuner(true, x.device())[grid](dy, dx, da, dg, HAVE_BETA ? *db : x, x, alpha, gamma, HAVE_BETA, i32(M), i32(N));
  Grads g{dx, tritium::ops::sum(da).to(x.dtype()).unsqueeze(0), tritium::ops::sum(dg, {0}).to(gamma.dtype()), std::nullopt};
  if (HAVE_BETA) g.db = tritium::ops::sum(*db, {0}).to(x.dtype());
  return g;
}

// ---- check ------------------------------------------------------------------------------------

// y, dx, dalpha, dgamma (and dbeta) against float64; the worst relative error.
double relative_error(const tritium::Device& device, int64_t M, int64_t N, DType dtype, bool have_beta, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> hx, hdy, ha, hg, hb;
  Tensor x = liger::random_tensor({M, N}, dtype, device, rng, hx);
  Tensor dy = liger::random_tensor({M, N}, dtype, device, rng, hdy);
  // LigerDyT's parameters stay fp32 whatever x's dtype.
  Tensor alpha = liger::random_tensor({1}, DType::f32, device, rng, ha, 0.1, 0.7);
  Tensor gamma = liger::random_tensor({N}, DType::f32, device, rng, hg, 0.5, 1.0);
  std::optional<Tensor> beta;
  if (have_beta) beta = liger::random_tensor({N}, DType::f32, device, rng, hb, 0.5);
  g_poison = true;
  Tensor y = liger_dyt_fwd(x, alpha, gamma, beta);
  Grads g = liger_dyt_bwd(dy, x, alpha, gamma, beta);
  g_poison = false;
  const double a = ha[0];
  std::vector<double> ref_y(hx.size()), ref_dx(hx.size()), ref_da(1, 0.0), ref_dg(static_cast<size_t>(N), 0.0),
      ref_db(static_cast<size_t>(N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const size_t k = size_t(i * N + j);
      const double t = std::tanh(a * hx[k]), tmp = (1 - t * t) * hdy[k] * hg[size_t(j)];
      ref_y[k] = t * hg[size_t(j)] + (have_beta ? hb[size_t(j)] : 0.0);
      ref_dx[k] = a * tmp;
      ref_da[0] += hx[k] * tmp;
      ref_dg[size_t(j)] += hdy[k] * t;
      ref_db[size_t(j)] += hdy[k];
    }
  double worst = std::max({liger::rel_error(liger::host(y), ref_y), liger::rel_error(liger::host(g.dx), ref_dx),
                           liger::rel_error(liger::host(g.da), ref_da), liger::rel_error(liger::host(g.dg), ref_dg)});
  if (have_beta) worst = std::max(worst, liger::rel_error(liger::host(*g.db), ref_db));
  return worst;
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t M, N;
    DType dtype;
    bool beta;
  };
  // Columns off BLOCK_N (1500: a full and a partial column block), rows off the programs, with
  // and without beta, f32 and bf16 (fp32 parameters, as LigerDyT's).
  const std::vector<Case> cases = {{37, 1500, DType::f32, true}, {21, 700, DType::f32, false}, {29, 1500, DType::bf16, true}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c.M, c.N, c.dtype, c.beta, uint32_t(c.M * 31 + c.N));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{}{} {:.1e}", detail.empty() ? "(y, dx, dalpha, dgamma, dbeta: " : ", ",
                          tritium::dtype_name(c.dtype), c.M, c.N, c.beta ? " beta" : "", rel);
  }
  detail += "; bounds f32 1e-5, bf16 1e-2; shown: worst error / bound)";
  return suite::report("dyt", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_dyt.py: the default model (llama_3_8b: hidden 4096, bf16 input, fp32 parameters), a
// sweep of BT, without and with beta. GB/s from the bytes moved (forward: x read, y written;
// backward: x, dy read, dx written; parameters and partial rows aside).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t H = 4096;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384} : std::vector<int64_t>{256};
  std::vector<suite::Row> rows;
  for (bool have_beta : {false, true})
    for (int64_t BT : bts) {
      auto& gen = tritium::ops::default_generator();
      Tensor x = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
      Tensor dy = tritium::ops::randn({BT, H}, gen, DType::f32, device).to(DType::bf16);
      Tensor alpha = tritium::ops::full({1}, 0.5, DType::f32, device);
      Tensor gamma = tritium::ops::full({H}, 1.0, DType::f32, device);
      std::optional<Tensor> beta;
      if (have_beta) beta = tritium::ops::zeros({H}, DType::f32, device);
      const double bytes = double(BT) * double(H) * 2.0;
      const std::string b = have_beta ? " beta" : "";
      const double fwd = tritium::do_bench([&] { liger_dyt_fwd(x, alpha, gamma, beta); }, device).median_ms;
      rows.push_back({fmt::format("fwd BT={} H={} bf16{}", BT, H, b), fwd, 2 * bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
      const double bwd = tritium::do_bench([&] { liger_dyt_bwd(dy, x, alpha, gamma, beta); }, device).median_ms;
      rows.push_back({fmt::format("bwd BT={} H={} bf16{}", BT, H, b), bwd, 3 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
    }
  return rows;
}

const bool registered = suite::add({.name = "dyt",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/dyt.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
