// Tutorial 05: layer normalization, ported from Triton's fifth tutorial.
//
// A fused LayerNorm forward kernel (one program per row: mean and variance in two masked passes
// over BLOCK_SIZE chunks, then y = (x - mean) * rstd * w + b), and a backward in two stages:
//  1. _layer_norm_bwd_dx_fused: dx per row, and partial sums of dW/dB accumulated into
//     GROUP_SIZE_M row-group buffers. Rows r, r + GROUP_SIZE_M, ... share a buffer; each buffer is
//     guarded by a spin lock taken with tl::atomic_cas and released with tl::atomic_xchg, and a
//     Count word tells the first writer to store instead of accumulating.
//  2. _layer_norm_bwd_dwdb: sums the GROUP_SIZE_M partial rows into the final dW and dB.
// Beyond Triton's tutorial, stage 1 has a second form without locks (_layer_norm_bwd_dx_persistent):
// a persistent grid whose programs each own a set of rows and keep their dW/dB partial sums in
// registers. The differentiable function uses it; the check runs both forms.
// Forward and backward are tied together as a differentiable function with nn::record (the
// equivalent of torch.autograd.Function), so y.backward(dy) runs the two backward kernels.
//
//   ./05-layer-norm            checks y, dx, dw, db (f32 and f16) against a float64 host reference
//   ./05-layer-norm --bench    forward/backward GB/s; on the CPU beside plain C++ loops doing the
//                              same passes, on --backend cuda M = 4096 in f16
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "autotune/do_bench.h"
#include "nn/autograd.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "tutorial.h"

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;

// The kernels take pointers of any element type (f32 or f16 data); math is done in f32.
using P = tl::ptr<tl::any>;

// ---- forward ---------------------------------------------------------------------------------

auto _layer_norm_fwd_fused = tritium::kernel(
    "_layer_norm_fwd_fused",
    [](P X, P Y, P W, P B, tl::ptr<float> Mean, tl::ptr<float> Rstd, tl::i32 stride, tl::i32 N, tl::f32 eps,
       int BLOCK_SIZE) {
      // One program normalises one row: move X and Y to its start.
      auto row = tl::program_id(0);
      Y += row * stride;
      X += row * stride;
      // First pass: the mean, accumulated lane-wise over the row's chunks and reduced once.
      auto _mean = tl::zeros({BLOCK_SIZE}, tl::float32);
      for (auto off : tl::range(0, N, BLOCK_SIZE)) {
        auto cols = off + tl::arange(0, BLOCK_SIZE);
        auto a = tl::load(X + cols, cols < N, 0.0f).to(tl::float32);
        _mean += a;
      }
      auto mean = tl::sum(_mean, 0) / N;
      // Second pass: the (biased) variance; lanes past the end must not contribute (0 - mean)^2.
      auto _var = tl::zeros({BLOCK_SIZE}, tl::float32);
      for (auto off : tl::range(0, N, BLOCK_SIZE)) {
        auto cols = off + tl::arange(0, BLOCK_SIZE);
        auto x = tl::load(X + cols, cols < N, 0.0f).to(tl::float32);
        x = tl::where(cols < N, x - mean, 0.0f);
        _var += x * x;
      }
      auto var = tl::sum(_var, 0) / N;
      auto rstd = 1 / tl::sqrt(var + eps);
      // The backward pass needs both statistics.
      tl::store(Mean + row, mean);
      tl::store(Rstd + row, rstd);
      // Third pass: normalise, scale and shift (the store converts to Y's dtype).
      for (auto off : tl::range(0, N, BLOCK_SIZE)) {
        auto cols = off + tl::arange(0, BLOCK_SIZE);
        auto mask = cols < N;
        auto w = tl::load(W + cols, mask);
        auto b = tl::load(B + cols, mask);
        auto x = tl::load(X + cols, mask, 0.0f).to(tl::float32);
        auto x_hat = (x - mean) * rstd;
        auto y = x_hat * w + b;
        tl::store(Y + cols, y, mask);
      }
    },
    {"X", "Y", "W", "B", "Mean", "Rstd", "stride", "N", "eps", "BLOCK_SIZE"});

// ---- backward, stage 1: dx and the partial dw/db of each row group --------------------------

auto _layer_norm_bwd_dx_fused = tritium::kernel(
    "_layer_norm_bwd_dx_fused",
    [](P DX, P DY, P DW, P DB, P X, P W, tl::ptr<float> Mean, tl::ptr<float> Rstd, tl::ptr<int32_t> Lock,
       tl::i32 stride, tl::i32 N, int GROUP_SIZE_M, int BLOCK_SIZE_N) {
      // One program per row; the whole row fits one block here.
      auto row = tl::program_id(0);
      auto cols = tl::arange(0, BLOCK_SIZE_N);
      auto mask = cols < N;
      X += row * stride;
      DY += row * stride;
      DX += row * stride;
      // Rows are dealt round-robin to GROUP_SIZE_M groups; each group has a lock, a Count word
      // (the GROUP_SIZE_M words after the locks) and one row of the partial DW/DB buffers.
      auto lock_id = row % GROUP_SIZE_M;
      Lock += lock_id;
      auto Count = Lock + GROUP_SIZE_M;
      DW = DW + lock_id * N + cols;
      DB = DB + lock_id * N + cols;
      // Load the row and its statistics.
      auto x = tl::load(X + cols, mask, 0.0f).to(tl::float32);
      auto dy = tl::load(DY + cols, mask, 0.0f).to(tl::float32);
      auto w = tl::load(W + cols, mask).to(tl::float32);
      auto mean = tl::load(Mean + row);
      auto rstd = tl::load(Rstd + row);
      // dx = rstd * (w*dy - (xhat * mean(xhat * w*dy) + mean(w*dy))), masked lanes excluded.
      auto xhat = (x - mean) * rstd;
      auto wdy = w * dy;
      xhat = tl::where(mask, xhat, 0.0f);
      wdy = tl::where(mask, wdy, 0.0f);
      auto c1 = tl::sum(xhat * wdy, 0) / N;
      auto c2 = tl::sum(wdy, 0) / N;
      auto dx = (wdy - (xhat * c1 + c2)) * rstd;
      tl::store(DX + cols, dx, mask);
      // This row's contributions to dw and db, added into the group's buffer under its lock.
      auto partial_dw = (dy * xhat).to(w.dtype());
      auto partial_db = dy.to(w.dtype());
      // Take the group's lock: spin until the compare-and-swap finds it free.
      tl::while_([&] { return tl::atomic_cas(Lock, 0, 1) == 1; }, [] {});
      auto count = tl::load(Count);
      // The group's first writer stores (the buffers are not initialised); later ones accumulate.
      tl::if_(
          count == 0, [&] { tl::atomic_xchg(Count, 1); },
          [&] {
            partial_dw += tl::load(DW, mask);
            partial_db += tl::load(DB, mask);
          });
      tl::store(DW, partial_dw, mask);
      tl::store(DB, partial_db, mask);
      // Release the lock.
      tl::atomic_xchg(Lock, 0);
    },
    {"DX", "DY", "DW", "DB", "X", "W", "Mean", "Rstd", "Lock", "stride", "N", "GROUP_SIZE_M", "BLOCK_SIZE_N"});

// ---- backward, stage 1 without locks -----------------------------------------------------------

// Triton's stage 1 gives each program one row, so the programs of a row group take turns on its
// lock: at 4096 x 1024 every lock is taken 16 times in a row, each turn a chain of L2 round trips
// (compare-and-swap, load the partial row, store it, release). Here a persistent grid, as in
// tutorial 02, deals the rows out round-robin (pid, pid + G, ...) to G programs; each keeps its
// dW/dB partial sums in f32 registers over its rows and writes them once, to its own row of the
// partial buffers. No lock, no atomics; stage 2 then sums G rows instead of GROUP_SIZE_M.
auto _layer_norm_bwd_dx_persistent = tritium::kernel(
    "_layer_norm_bwd_dx_persistent",
    [](P DX, P DY, tl::ptr<float> DW, tl::ptr<float> DB, P X, P W, tl::ptr<float> Mean, tl::ptr<float> Rstd,
       tl::i32 stride, tl::i32 N, tl::i32 M, int BLOCK_SIZE_N) {
      auto pid = tl::program_id(0);
      auto cols = tl::arange(0, BLOCK_SIZE_N);
      auto mask = cols < N;
      // W is the same for every row: loaded once.
      auto w = tl::load(W + cols, mask, 0.0f).to(tl::float32);
      auto dw = tl::zeros({BLOCK_SIZE_N}, tl::float32);
      auto db = tl::zeros({BLOCK_SIZE_N}, tl::float32);
      for (auto row : tl::range(pid, M, tl::num_programs(0))) {
        auto x = tl::load(X + row * stride + cols, mask, 0.0f).to(tl::float32);
        auto dy = tl::load(DY + row * stride + cols, mask, 0.0f).to(tl::float32);
        auto mean = tl::load(Mean + row);
        auto rstd = tl::load(Rstd + row);
        // As in the locked form: masked lanes are 0 in xhat and w*dy, so they add nothing.
        auto xhat = tl::where(mask, (x - mean) * rstd, 0.0f);
        auto wdy = w * dy;
        auto c1 = tl::sum(xhat * wdy, 0) / N;
        auto c2 = tl::sum(wdy, 0) / N;
        tl::store(DX + row * stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask);
        dw += dy * xhat;
        db += dy;
      }
      tl::store(DW + pid * N + cols, dw, mask);
      tl::store(DB + pid * N + cols, db, mask);
    },
    {"DX", "DY", "DW", "DB", "X", "W", "Mean", "Rstd", "stride", "N", "M", "BLOCK_SIZE_N"});

// ---- backward, stage 2: sum the partial rows --------------------------------------------------

auto _layer_norm_bwd_dwdb = tritium::kernel(
    "_layer_norm_bwd_dwdb",
    [](P DW, P DB, P FINAL_DW, P FINAL_DB, tl::i32 M, tl::i32 N, int BLOCK_SIZE_M, int BLOCK_SIZE_N) {
      // Each program owns BLOCK_SIZE_N columns and walks down the M partial rows.
      auto pid = tl::program_id(0);
      auto cols = pid * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
      auto dw = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
      auto db = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
      for (auto i : tl::range(0, M, BLOCK_SIZE_M)) {
        auto rows = i + tl::arange(0, BLOCK_SIZE_M);
        auto mask = (rows(tl::_, tl::None) < M) & (cols(tl::None, tl::_) < N);
        auto offs = rows(tl::_, tl::None) * N + cols(tl::None, tl::_);
        dw += tl::load(DW + offs, mask, 0.0f);
        db += tl::load(DB + offs, mask, 0.0f);
      }
      auto sum_dw = tl::sum(dw, 0);
      auto sum_db = tl::sum(db, 0);
      tl::store(FINAL_DW + cols, sum_dw, cols < N);
      tl::store(FINAL_DB + cols, sum_db, cols < N);
    },
    {"DW", "DB", "FINAL_DW", "FINAL_DB", "M", "N", "BLOCK_SIZE_M", "BLOCK_SIZE_N"});

// ---- host side --------------------------------------------------------------------------------

// While the check runs, every buffer that the functions below allocate without initialising
// (outputs, statistics, partial sums) is filled with NaN, so an element that is never written, or
// a partial buffer read before its first store, shows up in the results.
bool g_poison = false;

Tensor empty(const std::vector<int64_t>& shape, DType dtype, tritium::Device device) {
  if (g_poison) return tritium::ops::full(shape, NAN, dtype, device);
  return Tensor::empty(shape, dtype, device);
}

int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// Triton's launch heuristics. How many partial buffers (parallel reduction streams) for dW/dB:
int default_group_size_m(int64_t N) {
  int GROUP_SIZE_M = 64;
  if (N <= 8192) GROUP_SIZE_M = 96;
  if (N <= 4096) GROUP_SIZE_M = 128;
  if (N <= 1024) GROUP_SIZE_M = 256;
  return GROUP_SIZE_M;
}
// One block holds a whole row of less than 64 KB; warps by the row length: Triton's BLOCK / 256,
// at most 8, except on the GPU for rows of 8192+, which run at 16 elements a thread (H100, 4096 x
// 8192 f16 forward: 16 warps 2410-2437 GB/s against 2053-2088 with 8, Triton's 2076-2081; the
// backward 1729-1736 against 1701-1707).
struct RowLaunch {
  int BLOCK_SIZE, num_warps;
};
RowLaunch row_launch(int64_t N, int64_t element_size, bool gpu) {
  const int64_t MAX_FUSED_SIZE = 65536 / element_size;
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, next_power_of_2(N)));
  if (gpu && BLOCK_SIZE >= 8192) return {BLOCK_SIZE, std::min(BLOCK_SIZE / 512, 32)};
  return {BLOCK_SIZE, std::min(std::max(BLOCK_SIZE / 256, 1), 8)};
}

// Which form of stage 1 runs: Triton's (one row per program, locked row groups) or the
// persistent one (a set of rows per program, no locks).
enum class Stage1 { locked, persistent };

// Programs of the persistent stage 1: as tutorial 02 sizes its grid - the compiled kernel's
// registers give how many fit on an SM - but at most kPersistentPerSM per SM, since every program
// adds a partial row for stage 2 to read (H100, f16 4096 x 1024, whole backward with stage 2 at
// 128 columns per program: 669 GB/s with at most 2 per SM, 641 with 4, 488 with 8). On the CPU a
// few programs per thread of the pool.
constexpr int kPersistentPerSM = 2;
int persistent_programs(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                        RowLaunch launch) {
  const int64_t N = w.size(0), M = x.numel() / N;
  int64_t programs;
  if (x.device().is_cuda()) {
    const auto& props = tritium::runtime::cuda::properties(x.device().index);
    // The compiled code depends on the arguments' types and alignment, not on their sizes: mean
    // and rstd (f32, aligned) stand in for the partial buffers, whose size is what this decides.
    auto info = _layer_norm_bwd_dx_persistent.warmup(dy, dy, mean, rstd, x, w, mean, rstd, N, N, M,
                                                     launch.BLOCK_SIZE,
                                                     tritium::Options{.num_warps = launch.num_warps, .device = x.device()});
    int per_sm = props.max_registers_per_block / (std::max(1, info.n_regs) * props.warp_size * launch.num_warps);
    per_sm = std::clamp(per_sm, 1, kPersistentPerSM);
    programs = int64_t(props.multiprocessor_count) * per_sm;
  } else {
    programs = int64_t(tritium::runtime::ThreadPool::global().size()) * 4;
  }
  return static_cast<int>(std::min(programs, M));
}

// The backward's buffers: the lock and count words (locked form), the partial dW/dB rows
// (GROUP_SIZE_M row groups in x's dtype, as Triton's; or one f32 row per persistent program), the
// results.
struct BackwardWork {
  int64_t N, M;
  Stage1 stage1;
  int G;  // partial rows
  Tensor locks, _dw, _db, dw, db, dx;
};
// partial_rows = 0 picks GROUP_SIZE_M by Triton's heuristic, or the persistent grid's size.
BackwardWork backward_work(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                           RowLaunch launch, Stage1 stage1, int partial_rows) {
  const int64_t N = w.size(0), M = x.numel() / N;
  auto dev = x.device();
  const bool locked = stage1 == Stage1::locked;
  const int G = partial_rows > 0 ? partial_rows
                : locked       ? default_group_size_m(N)
                               : persistent_programs(dy, x, w, mean, rstd, launch);
  const DType partial = locked ? x.dtype() : DType::f32;
  return {N, M, stage1, G,
          locked ? Tensor::zeros({2 * G}, DType::i32, dev) : Tensor(),  // the locks, then the counts
          empty({G, N}, partial, dev), empty({G, N}, partial, dev),
          empty({N}, w.dtype(), dev), empty({N}, w.dtype(), dev), empty(dy.shape(), dy.dtype(), dev)};
}
// Stage 1 (the locked form needs its lock words zero).
void backward_dx(BackwardWork& k, const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean,
                 const Tensor& rstd, RowLaunch launch) {
  const tritium::Options options{.num_warps = launch.num_warps};
  if (k.stage1 == Stage1::locked)
    _layer_norm_bwd_dx_fused[{static_cast<int>(k.M)}](k.dx, dy, k._dw, k._db, x, w, mean, rstd, k.locks, k.N, k.N,
                                                      k.G, launch.BLOCK_SIZE, options);
  else
    _layer_norm_bwd_dx_persistent[{k.G}](k.dx, dy, k._dw, k._db, x, w, mean, rstd, k.N, k.N, k.M, launch.BLOCK_SIZE,
                                         options);
}
// Stage 2: the partial rows that received at least one row are summed.
void backward_dwdb(BackwardWork& k) {
  const int64_t N = k.N;
  auto grid = [N](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(N, meta["BLOCK_SIZE_N"])); };
  // Triton's 128 columns per program; after the persistent form (more partial rows, in f32) at
  // least ~64 programs, so short rows still spread over the SMs (N = 1024: 16 columns, 64
  // programs; measured on the H100: 0.010 ms instead of 0.012 for the sums of 264 rows).
  int64_t bn = 128;
  if (k.stage1 == Stage1::persistent) bn = std::clamp<int64_t>(next_power_of_2(N / 64 + 1) / 2, 16, 128);
  _layer_norm_bwd_dwdb[grid](k._dw, k._db, k.dw, k.db, std::min<int64_t>(k.G, k.M), N,
                             tritium::Meta{{"BLOCK_SIZE_M", 32}, {"BLOCK_SIZE_N", bn}});
}

// The backward as a plain function: dx, dw, db from dy and what the forward saved. The check also
// forces a small partial_rows, so that many rows contend for each lock, or each persistent
// program accumulates many rows.
std::array<Tensor, 3> layer_norm_backward(const Tensor& dy_in, const Tensor& x, const Tensor& w, const Tensor& mean,
                                          const Tensor& rstd, RowLaunch launch, Stage1 stage1 = Stage1::persistent,
                                          int partial_rows = 0) {
  Tensor dy = dy_in.contiguous();
  BackwardWork k = backward_work(dy, x, w, mean, rstd, launch, stage1, partial_rows);
  backward_dx(k, dy, x, w, mean, rstd, launch);
  backward_dwdb(k);
  return {k.dx, k.dw, k.db};
}

// The differentiable function (Triton's LayerNorm.apply): normalises over the last dim of a
// contiguous x; the recorded backward runs layer_norm_backward.
Tensor layer_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias, float eps,
                  Stage1 stage1 = Stage1::persistent, int partial_rows = 0) {
  Tensor x = x_in.contiguous();
  const int64_t N = x.size(-1), M = x.numel() / N;
  auto dev = x.device();
  Tensor y = empty(x.shape(), x.dtype(), dev);
  Tensor mean = empty({M}, DType::f32, dev), rstd = empty({M}, DType::f32, dev);
  // Less than 64 KB per feature row: the backward keeps a whole row in one block.
  const RowLaunch launch = row_launch(N, x.element_size(), x.device().is_cuda());
  if (N > launch.BLOCK_SIZE) throw tritium::Error("this layer norm does not support feature dims of 64 KB or more");
  _layer_norm_fwd_fused[{static_cast<int>(M)}](x, y, weight, bias, mean, rstd, N, N, eps, launch.BLOCK_SIZE,
                                               tritium::Options{.num_warps = launch.num_warps});
  // Saved tensors are detached handles, as nn/functional.cpp does.
  Tensor sx = x.detach(), sw = weight.detach();
  return tritium::nn::record(y, {x_in, weight, bias}, "LayerNormBackward",
                             [sx, sw, mean, rstd, launch, stage1, partial_rows](const Tensor& dy) {
                               auto [dx, dw, db] = layer_norm_backward(dy, sx, sw, mean, rstd, launch, stage1,
                                                                       partial_rows);
                               return std::vector<Tensor>{dx, dw, db};
                             });
}

// ---- the check --------------------------------------------------------------------------------

struct Errors {
  double y = 0, dx = 0, dw = 0, db = 0;
};

// Largest |got - ref| relative to the largest |ref| (NaN, an unwritten element, gives NaN).
double rel_err(const std::vector<float>& got, const std::vector<double>& ref) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = std::abs(double(got[i]) - ref[i]);
    if (std::isnan(d)) return NAN;
    diff = std::max(diff, d), scale = std::max(scale, std::abs(ref[i]));
  }
  return diff / std::max(scale, 1e-30);
}

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).to_vector<float>(); }

// Inputs as in Triton's test: w, b ~ U(0, 1), x ~ -2.3 + 0.5 N(0, 1), dy ~ 0.1 N(0, 1); the host
// values in f32, the tensors in `dtype` on the device, x, w and b requiring gradients.
struct Inputs {
  std::vector<float> hx, hw, hb, hdy;
  Tensor x, w, b, dy;
};
Inputs make_inputs(int64_t M, int64_t N, DType dtype, tritium::Device device, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::normal_distribution<float> g(0, 1);
  Inputs in{std::vector<float>(size_t(M * N)), std::vector<float>(size_t(N)), std::vector<float>(size_t(N)),
            std::vector<float>(size_t(M * N)), {}, {}, {}, {}};
  for (auto& v : in.hw) v = u(rng);
  for (auto& v : in.hb) v = u(rng);
  for (auto& v : in.hx) v = -2.3f + 0.5f * g(rng);
  for (auto& v : in.hdy) v = 0.1f * g(rng);
  auto make = [&](const std::vector<float>& v, std::vector<int64_t> shape) {
    return Tensor::from_vector(v, shape, device).to(dtype);
  };
  in.x = make(in.hx, {M, N}), in.w = make(in.hw, {N}), in.b = make(in.hb, {N}), in.dy = make(in.hdy, {M, N});
  in.x.requires_grad_(), in.w.requires_grad_(), in.b.requires_grad_();
  return in;
}

Errors check_case(const tutorial::Args& args, int M, int N, DType dtype, Stage1 stage1, int partial_rows,
                  uint32_t seed) {
  const float eps = 1e-5f;
  auto [hx, hw, hb, hdy, x, w, b, dy] = make_inputs(M, N, dtype, args.device, seed);
  // The reference starts from the values the kernels see (rounded to f16 for f16).
  hx = host(x), hw = host(w), hb = host(b), hdy = host(dy);

  g_poison = true;
  Tensor y = layer_norm(x, w, b, eps, stage1, partial_rows);
  y.backward(dy, /*retain_graph=*/false);
  g_poison = false;

  std::vector<double> ry(hx.size()), rdx(hx.size()), rdw(N, 0.0), rdb(N, 0.0);
  std::vector<double> xhat(N);
  for (int r = 0; r < M; ++r) {
    const float* xr = &hx[size_t(r) * N];
    const float* dyr = &hdy[size_t(r) * N];
    double mean = 0, var = 0;
    for (int c = 0; c < N; ++c) mean += xr[c];
    mean /= N;
    for (int c = 0; c < N; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= N;
    double rstd = 1 / std::sqrt(var + double(eps));
    double c1 = 0, c2 = 0;
    for (int c = 0; c < N; ++c) {
      xhat[c] = (xr[c] - mean) * rstd;
      ry[size_t(r) * N + c] = xhat[c] * hw[c] + hb[c];
      double wdy = double(hw[c]) * dyr[c];
      c1 += xhat[c] * wdy, c2 += wdy;
      rdw[c] += dyr[c] * xhat[c], rdb[c] += dyr[c];
    }
    c1 /= N, c2 /= N;
    for (int c = 0; c < N; ++c) rdx[size_t(r) * N + c] = (double(hw[c]) * dyr[c] - (xhat[c] * c1 + c2)) * rstd;
  }
  return {rel_err(host(y), ry), rel_err(host(x.grad()), rdx), rel_err(host(w.grad()), rdw), rel_err(host(b.grad()), rdb)};
}

// Where the backward's time goes on a GPU: its two kernels alone (stage 1 with the lock words
// zeroed, as each backward does), and the whole of layer_norm_backward without autograd.
void print_backward_stages(const Tensor& x, const Tensor& w, const Tensor& dy, tritium::Device dev) {
  const int64_t N = w.size(0), M = x.numel() / N;
  const RowLaunch launch = row_launch(N, x.element_size(), x.device().is_cuda());
  Tensor mean = Tensor::empty({M}, DType::f32, dev), rstd = Tensor::empty({M}, DType::f32, dev);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), dev);
  _layer_norm_fwd_fused[{static_cast<int>(M)}](x, y, w, w, mean, rstd, N, N, 1e-5f, launch.BLOCK_SIZE,
                                               tritium::Options{.num_warps = launch.num_warps});
  std::printf("%8s backward stages:", "");
  for (Stage1 s1 : {Stage1::locked, Stage1::persistent}) {
    BackwardWork k = backward_work(dy, x, w, mean, rstd, launch, s1, 0);
    double stage1 = tritium::do_bench([&] {
                      if (s1 == Stage1::locked) tritium::ops::fill_(k.locks, 0);
                      backward_dx(k, dy, x, w, mean, rstd, launch);
                    }, dev).median_ms;
    double stage2 = tritium::do_bench([&] { backward_dwdb(k); }, dev).median_ms;
    double whole = tritium::do_bench([&] { layer_norm_backward(dy, x, w, mean, rstd, launch, s1); }, dev).median_ms;
    std::printf(" %s: dx + partials %.3f ms, sums of %d rows %.3f ms, whole %.3f ms;",
                s1 == Stage1::locked ? "locked" : "persistent", stage1, k.G, stage2, whole);
  }
  std::printf("\n");
}

// ---- plain C++ loops for --bench (f32, CPU): the same passes, spread over the thread pool -------

// Sum of f(c) for c in [0, N) kept in 16 lane-wise partial sums, as the kernels accumulate a
// block lane by lane, so the compiler vectorises the row reductions (a single scalar accumulator
// would not be, without -ffast-math).
template <class F> inline float lane_sum(int64_t N, F f) {
  float acc[16] = {};
  int64_t c = 0;
  for (; c + 16 <= N; c += 16)
    for (int l = 0; l < 16; ++l) acc[l] += f(c + l);
  for (; c < N; ++c) acc[c % 16] += f(c);
  float s = 0;
  for (float a : acc) s += a;
  return s;
}

void layer_norm_fwd_plain(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int64_t M,
                          int64_t N, float eps) {
  tritium::runtime::ThreadPool::global().parallel_for(M, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * N;
      float* yr = y + r * N;
      const float m = lane_sum(N, [&](int64_t c) { return xr[c]; }) / N;
      const float v = lane_sum(N, [&](int64_t c) { return (xr[c] - m) * (xr[c] - m); }) / N;
      const float rs = 1 / std::sqrt(v + eps);
      mean[r] = m, rstd[r] = rs;
      for (int64_t c = 0; c < N; ++c) yr[c] = (xr[c] - m) * rs * w[c] + b[c];
    }
  });
}

// dx per row, dw/db partial sums per row group (rows g, g + G, ... in group g: one task per group,
// so no lock), then the column sums of the G partial rows.
void layer_norm_bwd_plain(const float* dy, const float* x, const float* w, const float* mean, const float* rstd,
                          float* dx, float* dw, float* db, int64_t M, int64_t N, int64_t G) {
  auto& pool = tritium::runtime::ThreadPool::global();
  G = std::min(G, M);
  std::vector<float> pdw(size_t(G * N)), pdb(size_t(G * N));
  pool.parallel_for(G, [&](int64_t g) {
    float* gw = &pdw[size_t(g * N)];
    float* gb = &pdb[size_t(g * N)];
    for (int64_t r = g; r < M; r += G) {
      const float* xr = x + r * N;
      const float* dyr = dy + r * N;
      const float m = mean[r], rs = rstd[r];
      const float c1 = lane_sum(N, [&](int64_t c) { return (xr[c] - m) * rs * (w[c] * dyr[c]); }) / N;
      const float c2 = lane_sum(N, [&](int64_t c) { return w[c] * dyr[c]; }) / N;
      float* dxr = dx + r * N;
      if (r == g) {  // the group's first row stores
        for (int64_t c = 0; c < N; ++c) {
          float xh = (xr[c] - m) * rs;
          dxr[c] = (w[c] * dyr[c] - (xh * c1 + c2)) * rs;
          gw[c] = dyr[c] * xh, gb[c] = dyr[c];
        }
      } else {
        for (int64_t c = 0; c < N; ++c) {
          float xh = (xr[c] - m) * rs;
          dxr[c] = (w[c] * dyr[c] - (xh * c1 + c2)) * rs;
          gw[c] += dyr[c] * xh, gb[c] += dyr[c];
        }
      }
    }
  });
  pool.parallel_for(tritium::cdiv(N, int64_t(128)), [&](int64_t c0, int64_t c1) {
    const int64_t lo = c0 * 128, hi = std::min(N, c1 * 128);
    for (int64_t c = lo; c < hi; ++c) dw[c] = pdw[size_t(c)], db[c] = pdb[size_t(c)];
    for (int64_t g = 1; g < G; ++g)
      for (int64_t c = lo; c < hi; ++c) dw[c] += pdw[size_t(g * N + c)], db[c] += pdb[size_t(g * N + c)];
  });
}

int run_tutorial(const tutorial::Args& args) {
  struct Case {
    int M, N;
    Stage1 stage1;
    int partial_rows;  // 0: the default
  };
  // Sizes that are not multiples of the blocks, with both forms of stage 1. Two cases force 3
  // partial rows: the locked form then has ~86 rows contending for each lock, most of them
  // accumulating onto another row's partial sums; the persistent one has 3 programs of ~86 rows.
  // On the GPU rows of 8192 take 16 warps, of 16000 (a 16384 block) 32.
  const Case cases[] = {{257, 1000, Stage1::locked, 0},     {64, 4096, Stage1::locked, 0},
                        {1151, 8192, Stage1::locked, 0},    {33, 16000, Stage1::locked, 0},
                        {257, 1000, Stage1::locked, 3},     {257, 1000, Stage1::persistent, 0},
                        {64, 4096, Stage1::persistent, 0},  {1151, 8192, Stage1::persistent, 0},
                        {33, 16000, Stage1::persistent, 0}, {257, 1000, Stage1::persistent, 3}};
  bool ok = true;
  uint32_t seed = 0;
  for (DType dtype : {DType::f32, DType::f16}) {
    const bool f16 = dtype == DType::f16;
    // f32: rounding of f32 sums (rows of up to 16000 elements, dw/db over up to 1151 rows).
    // f16: y and dx are rounded to f16 (2^-11 relative), and the locked form keeps its partial
    // dw/db sums in f16 buffers, as in Triton's tutorial (which compares them to one decimal).
    const double tol_out = f16 ? 2e-3 : 1e-5, tol_wb = f16 ? 1e-2 : 1e-5;
    for (const Case& c : cases) {
      Errors e = check_case(args, c.M, c.N, dtype, c.stage1, c.partial_rows, ++seed);
      bool good = e.y <= tol_out && e.dx <= tol_out && e.dw <= tol_wb && e.db <= tol_wb;
      std::printf("layer norm %5d x %-5d %s, %-10s%s on %s: rel err y %.2e  dx %.2e  dw %.2e  db %.2e  %s\n", c.M,
                  c.N, f16 ? "f16" : "f32", c.stage1 == Stage1::locked ? "locked" : "persistent",
                  c.partial_rows ? " (3 partial rows)" : "", args.device.str().c_str(), e.y, e.dx, e.dw, e.db,
                  good ? "OK" : "FAILED");
      ok = ok && good;
    }
  }
  if (!ok) return 1;
  if (!args.bench) return 0;

  const bool cpu = args.device.is_cpu();
  const int64_t M = cpu ? 1024 : 4096;
  const DType dtype = cpu ? DType::f32 : DType::f16;
  const std::vector<int64_t> Ns =
      tutorial::bench_sizes(args, cpu ? std::vector<int64_t>{1024, 4096} : std::vector<int64_t>{1024, 4096, 8192});
  std::printf("\nM = %lld, %s; forward counts 2*M*N elements, backward 3*M*N\n", static_cast<long long>(M),
              cpu ? "f32" : "f16");
  if (cpu)
    std::printf("%8s %14s %14s %8s %14s %14s %8s\n", "N", "fwd Tritium", "fwd plain", "ratio", "bwd Tritium",
                "bwd plain", "ratio");
  else std::printf("%8s %18s %18s\n", "N", "fwd Tritium GB/s", "bwd Tritium GB/s");
  for (int64_t N : Ns) {
    auto [hx, hw, hb, hdy, x, w, b, dy] = make_inputs(M, N, dtype, args.device, 7);
    const double elem = double(M * N) * x.element_size();
    auto gbps = [](double bytes, double ms) { return bytes / (ms * 1e6); };

    double fwd = gbps(2 * elem, tritium::do_bench([&] { layer_norm(x, w, b, 1e-5f); }, args.device).median_ms);
    Tensor y = layer_norm(x, w, b, 1e-5f);
    tritium::BenchOptions opt;
    opt.before_each = [&] { x.zero_grad(), w.zero_grad(), b.zero_grad(); };  // Triton's grad_to_none
    double bwd = gbps(3 * elem, tritium::do_bench([&] { y.backward(dy, /*retain_graph=*/true); }, args.device, opt).median_ms);
    if (!cpu) {
      std::printf("%8lld %18.1f %18.1f\n", static_cast<long long>(N), fwd, bwd);
      print_backward_stages(x, w, dy, args.device);
      continue;
    }
    std::vector<float> py(size_t(M * N)), pm(M), pr(M), pdx(size_t(M * N)), pdw(N), pdb(N);
    double fwd_plain = gbps(2 * elem, tritium::do_bench([&] {
                                        layer_norm_fwd_plain(hx.data(), hw.data(), hb.data(), py.data(), pm.data(),
                                                             pr.data(), M, N, 1e-5f);
                                      }).median_ms);
    const int64_t G = default_group_size_m(N);  // the same row groups
    double bwd_plain = gbps(3 * elem, tritium::do_bench([&] {
                                        layer_norm_bwd_plain(hdy.data(), hx.data(), hw.data(), pm.data(), pr.data(),
                                                             pdx.data(), pdw.data(), pdb.data(), M, N, G);
                                      }).median_ms);
    std::printf("%8lld %14.1f %14.1f %8.2f %14.1f %14.1f %8.2f\n", static_cast<long long>(N), fwd, fwd_plain,
                fwd / fwd_plain, bwd, bwd_plain, bwd / bwd_plain);
  }
  return 0;
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, run_tutorial); }
