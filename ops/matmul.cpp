// ops::matmul with torch.matmul semantics, through one Tritium kernel modelled on Triton's
// tutorial 03: a tile of C per program (grouped program ids for L2 reuse), tl::dot in a
// tl::range loop over K with masks at the edges, and a batch program axis. Operands are read
// through their strides (a transposed view costs no copy); C is a new contiguous tensor.
//
// Shapes: 1-D x 1-D is a dot product (0-dim result); a 1-D first operand is treated as [1, K]
// and a 1-D second operand as [K, 1], the added dim removed from the result; dims before the
// last two are batch dims and broadcast (numpy rules).
// Dtypes: f16/bf16/f32 accumulate in f32, f64 in f64; both operands must have the same dtype.
// fp32 products are exact fp32 unless set_float32_matmul_precision allows tf32 (as in PyTorch).
//
// Hopper, f16/bf16, one matrix each with contiguous rows: the loads go through block pointers,
// whose tiles the CUDA backend copies with TMA (docs/cuda-backend.md).
//
// Configs: on a GPU the autotuner picks block sizes, warps and stages per shape and layout from
// tutorial 03's tensor-core configs (results kept in the disk cache); on the CPU a heuristic picks
// the blocks (pick_blocks: LLVM compiles are too slow to try several per shape).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tritium/tritium.h>

#include "autotune/autotuner.h"
#include "ops/matmul_add.h"
#include "ops/matmul_block_pointers.h"
#include "ops/matmul_split_k.h"
#include "ops/matmul_tuning.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/dtype_dispatch.h"
#include "runtime/thread_pool.h"
#include "runtime/views.h"

namespace tritium::ops {
namespace {

namespace tl = tritium::tl;
using runtime::Tensor;

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// One program of C[b] = A[b] @ B[b]: the tile (pid_m, pid_n) of batch b = program_id(1), split
// into (b1, b2) with b2 < NB2, over K or, with a split, over the chunk [s * K_CHUNK, (s + 1) *
// K_CHUNK) of split s = program_id(2), its partial tile stored at c + s * stride_cs. The K loop
// is the same in both forms; only its start and trip count change (K_CHUNK is a multiple of
// BLOCK_K, so only the last chunk meets the K edge and block pointers keep K as their bound).
struct KSplit {
  tl::i32 chunk;
  tl::i64 stride_cs;
};
// addmm's and linear's epilogue: C = alpha * (A @ B) + beta * self, self (when HAS_SELF) read
// through its strides (0 along the dims it is broadcast over, as a bias's rows).
struct Epilogue {
  tl::tensor self;
  tl::i64 stride_sm, stride_sn, ss1, ss2;
  tl::tensor alpha, beta;
  bool has_self;
};
template <class T, class Out>
void matmul_program(tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<Out> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                    tl::i64 stride_am, tl::i64 stride_ak, tl::i64 stride_bk, tl::i64 stride_bn, tl::i64 stride_cm,
                    tl::i64 stride_cn, tl::i64 NB2, tl::i64 sa1, tl::i64 sa2, tl::i64 sb1, tl::i64 sb2, tl::i64 sc1,
                    tl::i64 sc2, int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_M, int TF32, bool CARRY_POINTERS,
                    int BLOCK_POINTERS, const std::optional<KSplit>& split,
                    const std::optional<Epilogue>& epilogue = std::nullopt) {
  // Grouped ordering: GROUP_M rows of tiles are visited column by column, so the tiles of
  // B stay in cache while A's rows are reused.
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto num_pid_in_group = GROUP_M * num_pid_n;
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);
  auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
  auto pid_n = (pid % num_pid_in_group) / group_size_m;

  auto batch = tl::program_id(1).to(tl::int64);
  auto b1 = batch / NB2, b2 = batch % NB2;
  auto a_base = a_ptr + (b1 * sa1 + b2 * sa2);
  auto b_base = b_ptr + (b1 * sb1 + b2 * sb2);
  auto c_base = c_ptr + (b1 * sc1 + b2 * sc2);

  // This program's K range: [k_lo, k_lo + k_len).
  std::optional<tl::i32> k_lo;
  tl::i32 k_len = K;
  if (split) {
    auto s = tl::program_id(2);
    k_lo = s * split->chunk;
    k_len = tl::minimum(K - *k_lo, split->chunk);
    c_base = c_base + s.to(tl::int64) * split->stride_cs;
  }

  constexpr DType acc_t = dtype_of<T>() == DType::f64 ? DType::f64 : DType::f32;
  auto acc = tl::zeros({BLOCK_M, BLOCK_N}, acc_t);
  const char* precision = TF32 ? "tf32" : "ieee";
  // Rows/columns past the edge wrap around (% M, % N): their loads stay in bounds and their
  // results are masked off at the store.
  auto offs_am = ((pid_m * BLOCK_M + tl::arange(0, BLOCK_M)) % M).to(tl::int64);
  auto offs_bn = ((pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N).to(tl::int64);
  auto offs_k = tl::arange(0, BLOCK_K);
  if (BLOCK_POINTERS) {
    // Hopper, one matrix of each (no batch offset, so the bases are the arguments): block
    // pointers, whose bounds-checked tiles the CUDA backend copies with TMA
    // (docs/cuda-backend.md) when the stored rows are contiguous and 16-byte aligned. Each block
    // pointer describes its operand as stored (BlockPointers): an M-major A ([K, M] rows, a
    // weight gradient's g^T) or a K-major B ([N, K] rows, a Linear's W^T) is its stored tile
    // transposed, so the copy engine reads contiguous rows for every majorness.
    const bool a_m_major = BLOCK_POINTERS == BlockPointers::a_mn_b_k || BLOCK_POINTERS == BlockPointers::a_mn_b_mn,
               b_k_major = BLOCK_POINTERS == BlockPointers::a_k_b_k || BLOCK_POINTERS == BlockPointers::a_mn_b_k;
    const tl::operand k0 = k_lo ? tl::operand(*k_lo) : tl::operand(0);
    auto a_bp = a_m_major
                    ? tl::make_block_ptr(a_ptr, {K, M}, {stride_ak, stride_am}, {k0, pid_m * BLOCK_M}, {BLOCK_K, BLOCK_M}, {1, 0})
                    : tl::make_block_ptr(a_ptr, {M, K}, {stride_am, stride_ak}, {pid_m * BLOCK_M, k0}, {BLOCK_M, BLOCK_K}, {1, 0});
    auto b_bp = b_k_major
                    ? tl::make_block_ptr(b_ptr, {N, K}, {stride_bn, stride_bk}, {pid_n * BLOCK_N, k0}, {BLOCK_N, BLOCK_K}, {1, 0})
                    : tl::make_block_ptr(b_ptr, {K, N}, {stride_bk, stride_bn}, {k0, pid_n * BLOCK_N}, {BLOCK_K, BLOCK_N}, {1, 0});
    for (auto kk : tl::range(0, tl::cdiv(k_len, BLOCK_K))) {
      (void)kk;
      tl::tensor a = a_m_major ? tl::trans(tl::load(a_bp, {0, 1})) : tl::load(a_bp, {0, 1});
      tl::tensor b = b_k_major ? tl::trans(tl::load(b_bp, {0, 1})) : tl::load(b_bp, {0, 1});
      acc = tl::dot(a, b, acc, std::nullopt, precision);
      a_bp = a_m_major ? tl::advance(a_bp, {BLOCK_K, 0}) : tl::advance(a_bp, {0, BLOCK_K});
      b_bp = b_k_major ? tl::advance(b_bp, {0, BLOCK_K}) : tl::advance(b_bp, {BLOCK_K, 0});
    }
  } else if (CARRY_POINTERS) {
    // The GPU form (tutorial 03's): blocks of pointers carried through the loop and
    // advanced by a K step. The matmul-loop lowering computes each chunk's address once
    // before the loop (init + trip * step), not from the row offsets on every trip.
    auto a_ptrs = a_base + (offs_am(tl::_, tl::None) * stride_am + offs_k.to(tl::int64)(tl::None, tl::_) * stride_ak);
    auto b_ptrs = b_base + (offs_k.to(tl::int64)(tl::_, tl::None) * stride_bk + offs_bn(tl::None, tl::_) * stride_bn);
    if (k_lo) {
      a_ptrs += k_lo->to(tl::int64) * stride_ak;
      b_ptrs += k_lo->to(tl::int64) * stride_bk;
    }
    for (auto kk : tl::range(0, tl::cdiv(k_len, BLOCK_K))) {
      auto a = tl::load(a_ptrs, offs_k(tl::None, tl::_) < k_len - kk * BLOCK_K, 0.0);
      auto b = tl::load(b_ptrs, offs_k(tl::_, tl::None) < k_len - kk * BLOCK_K, 0.0);
      acc = tl::dot(a, b, acc, std::nullopt, precision);
      a_ptrs += BLOCK_K * stride_ak;
      b_ptrs += BLOCK_K * stride_bk;
    }
  } else {
    // The CPU form: the K part of the addresses is added inside the loop, so they stay
    // affine (vector loads when a stride is 1) and no block of pointers is carried through
    // the loop (on the CPU a buffer of pointers rewritten every trip). The row and column
    // parts are computed once before it (materialised: 1.5x faster at 1024^3 than
    // recomputing them, `%` included, inside the loop).
    auto a_rows = a_base + offs_am(tl::_, tl::None) * stride_am;
    auto b_cols = b_base + offs_bn(tl::None, tl::_) * stride_bn;
    for (auto kk : tl::range(0, tl::cdiv(k_len, BLOCK_K))) {
      auto kpos = kk * BLOCK_K + offs_k;
      auto ks = (k_lo ? *k_lo + kpos : kpos).to(tl::int64);
      auto k_in = ks < K;
      auto a = tl::load(a_rows + ks(tl::None, tl::_) * stride_ak, k_in(tl::None, tl::_), 0.0);
      auto b = tl::load(b_cols + ks(tl::_, tl::None) * stride_bk, k_in(tl::_, tl::None), 0.0);
      acc = tl::dot(a, b, acc, std::nullopt, precision);
    }
  }

  auto offs_cm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_cn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  auto c_ptrs = c_base + (offs_cm.to(tl::int64)(tl::_, tl::None) * stride_cm +
                          offs_cn.to(tl::int64)(tl::None, tl::_) * stride_cn);
  auto c_mask = (offs_cm(tl::_, tl::None) < M) & (offs_cn(tl::None, tl::_) < N);
  if (epilogue) {  // in the accumulator's precision, rounded once at the store
    acc = acc * epilogue->alpha;
    if (epilogue->has_self) {
      auto s_ptrs = epilogue->self + (b1 * epilogue->ss1 + b2 * epilogue->ss2) +
                    (offs_cm.to(tl::int64)(tl::_, tl::None) * epilogue->stride_sm +
                     offs_cn.to(tl::int64)(tl::None, tl::_) * epilogue->stride_sn);
      acc = acc + epilogue->beta * tl::load(s_ptrs, c_mask, 0.0).to(acc_t);
    }
  }
  tl::store(c_ptrs, acc.to(dtype_of<Out>()), c_mask);
}


// The product C = A @ B in T.
template <class T> Kernel& matmul_kernel() {
  static Kernel k = kernel(
      "matmul",
      [](tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<T> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K, tl::i64 stride_am,
         tl::i64 stride_ak, tl::i64 stride_bk, tl::i64 stride_bn, tl::i64 stride_cm, tl::i64 stride_cn, tl::i64 NB2,
         tl::i64 sa1, tl::i64 sa2, tl::i64 sb1, tl::i64 sb2, tl::i64 sc1, tl::i64 sc2, int BLOCK_M, int BLOCK_N,
         int BLOCK_K, int GROUP_M, int TF32, bool CARRY_POINTERS, int BLOCK_POINTERS) {
        matmul_program<T, T>(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                             stride_cn, NB2, sa1, sa2, sb1, sb2, sc1, sc2, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, TF32,
                             CARRY_POINTERS, BLOCK_POINTERS, std::nullopt);
      },
      {"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
       "stride_cn", "NB2", "sa1", "sa2", "sb1", "sb2", "sc1", "sc2", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "TF32",
       "CARRY_POINTERS", "BLOCK_POINTERS"});
  return k;
}

// The product with addmm's epilogue (Epilogue above): beta * self + alpha * A @ B.
template <class T> using acc_type = std::conditional_t<std::is_same_v<T, double>, double, float>;
template <class T> Kernel& matmul_epilogue_kernel() {
  static Kernel k = kernel(
      "matmul_epilogue",
      [](tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<T> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K, tl::i64 stride_am,
         tl::i64 stride_ak, tl::i64 stride_bk, tl::i64 stride_bn, tl::i64 stride_cm, tl::i64 stride_cn, tl::i64 NB2,
         tl::i64 sa1, tl::i64 sa2, tl::i64 sb1, tl::i64 sb2, tl::i64 sc1, tl::i64 sc2, tl::ptr<T> s_ptr,
         tl::i64 stride_sm, tl::i64 stride_sn, tl::i64 ss1, tl::i64 ss2, tl::scalar<dtype_of<acc_type<T>>()> alpha,
         tl::scalar<dtype_of<acc_type<T>>()> beta, int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_M, int TF32,
         bool CARRY_POINTERS, int BLOCK_POINTERS, bool HAS_SELF) {
        matmul_program<T, T>(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                             stride_cn, NB2, sa1, sa2, sb1, sb2, sc1, sc2, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, TF32,
                             CARRY_POINTERS, BLOCK_POINTERS, std::nullopt,
                             Epilogue{s_ptr, stride_sm, stride_sn, ss1, ss2, alpha, beta, HAS_SELF});
      },
      {"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
       "stride_cn", "NB2", "sa1", "sa2", "sb1", "sb2", "sc1", "sc2", "s_ptr", "stride_sm", "stride_sn", "ss1", "ss2",
       "alpha", "beta", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "TF32", "CARRY_POINTERS", "BLOCK_POINTERS",
       "HAS_SELF"});
  return k;
}

// Split K: the partial tiles of the products over chunks of K, in the accumulation dtype (f32,
// f64 for f64), into a workspace [S, batch, M, N] (ops/matmul_split_k.h adds them up).
template <class T> Kernel& matmul_split_k_kernel() {
  static Kernel k = kernel(
      "matmul_split_k",
      [](tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<acc_type<T>> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
         tl::i64 stride_am, tl::i64 stride_ak, tl::i64 stride_bk, tl::i64 stride_bn, tl::i64 stride_cm,
         tl::i64 stride_cn, tl::i64 NB2, tl::i64 sa1, tl::i64 sa2, tl::i64 sb1, tl::i64 sb2, tl::i64 sc1, tl::i64 sc2,
         tl::i32 K_CHUNK, tl::i64 stride_cs, int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_M, int TF32,
         bool CARRY_POINTERS, int BLOCK_POINTERS) {
        matmul_program<T, acc_type<T>>(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                       stride_cm, stride_cn, NB2, sa1, sa2, sb1, sb2, sc1, sc2, BLOCK_M, BLOCK_N,
                                       BLOCK_K, GROUP_M, TF32, CARRY_POINTERS, BLOCK_POINTERS,
                                       KSplit{K_CHUNK, stride_cs});
      },
      {"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
       "stride_cn", "NB2", "sa1", "sa2", "sb1", "sb2", "sc1", "sc2", "K_CHUNK", "stride_cs", "BLOCK_M", "BLOCK_N",
       "BLOCK_K", "GROUP_M", "TF32", "CARRY_POINTERS", "BLOCK_POINTERS"});
  return k;
}

struct Blocks {
  int m, n, k, group;
};

int pow2_at_least(int64_t v, int lo, int hi) {
  int p = lo;
  while (p < v && p < hi) p *= 2;
  return p;
}

// A block for a dim of `size`: the next power of two >= 16, up to `cap`, but half the cap when
// that wastes fewer rows past the edge (192 rows: 3 x 64, not 2 x 128).
int block_for(int64_t size, int cap) {
  int b = pow2_at_least(size, 16, cap);
  auto padding = [&](int blk) { return cdiv(size, blk) * blk - size; };
  return b == cap && cap > 16 && padding(cap / 2) < padding(cap) ? cap / 2 : b;
}

// CPU block sizes per shape; dot needs every block dim >= 16. 128 x 128 tiles with K steps of 32
// run fp32 1024^3 at ~175 GFLOP/s on one core of the 2-core AMD EPYC (Zen 5), against ~150 with
// 64 x 64 x 32: the accumulator tile is read and written once per K step and each element of A
// and B is loaded fewer times (`tritium-bench --matmul`, docs/tensors.md). Tiles shrink back to
// 64 while there are fewer programs than threads. (f64 on a GPU also uses these blocks, at most
// 64 x 64: it has no tensor cores to tune for.)
Blocks pick_blocks(int64_t M, int64_t N, int64_t K, int64_t nbatch, const Device& device) {
  const int k = pow2_at_least(K, 16, 32);
  if (!device.is_cpu()) return {pow2_at_least(M, 16, 64), pow2_at_least(N, 16, 64), k, 8};
  Blocks b{block_for(M, 128), block_for(N, 128), k, 8};
  const int64_t threads = runtime::ThreadPool::global().size();
  while (cdiv(M, b.m) * cdiv(N, b.n) * nbatch < threads && std::max(b.m, b.n) > 64) (b.m >= b.n ? b.m : b.n) /= 2;
  return b;
}

// GPU candidates: tutorial 03's tensor-core configs (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)
// that cover large and small problems; fp32 tiles take twice the shared memory, the generator
// cuts stages to what fits. fp32 adds tiles of 32 along K in 8 warps (tf32 on Hopper's wgmma:
// 128-byte rows; with 3 or 4 stages, raw fp32 stages plus two rounded buffers fit beside them).
// Both add 128 x 128 tiles whose 3 stages (96 KB) leave room for a second program on an SM, so
// one program's prologue and store of C run beside another's K loop - what a short K (a Linear's
// forward at K = 384: 6 steps of 64) needs - in 64-wide K steps for 16-bit operands (TMA takes
// 128-byte rows only: tutorial 03's 32-wide tiles are cp.async).
std::vector<Config> gpu_configs(bool f32) {
  struct C { int m, n, k, warps, stages; };
  std::vector<C> list = {C{128, 256, 64, 8, 3}, C{128, 128, 32, 4, 4}, C{128, 64, 32, 4, 4}, C{64, 128, 32, 4, 4},
                         C{64, 64, 32, 4, 4},   C{32, 64, 32, 2, 5},   C{32, 32, 32, 2, 4}};
  if (f32)
    list.insert(list.begin(), {C{128, 256, 32, 8, 3}, C{256, 128, 32, 8, 3}, C{128, 128, 32, 8, 4},
                               C{128, 128, 32, 8, 3}, C{128, 128, 32, 4, 3}});
  else
    list.insert(list.begin() + 1, {C{128, 128, 64, 8, 3}, C{128, 128, 64, 4, 3}});
  std::vector<Config> out;
  for (C c : list)
    out.emplace_back(Meta{{"BLOCK_M", c.m}, {"BLOCK_N", c.n}, {"BLOCK_K", c.k}, {"GROUP_M", 8}}, c.warps, c.stages);
  return out;
}

// fp32 products in fp32 (set_float32_matmul_precision("highest"), the default, as PyTorch's
// allow_tf32 = False) run on the FMA units: the FMA dot gives each thread a micro-tile of C
// (docs/cuda-backend.md, "The FMA dot"), 8 x 8 on 128 x 128 tiles in 8 warps (195 registers, no
// spill, 91 % of the K loop's instructions FFMA for sm_90a), 16 x 8 on 256 x 128 and 128 x 256 (255
// registers, 93 % FFMA; x W^T's both-K-major form spills 56 bytes, 13 LDL a trip): the autotuner
// measures them. 128 x 128 on 4 warps (16 x 8 a thread) spills 80 bytes and is not offered. Smaller tiles for small
// problems; 16 columns (dot's least) for a matrix-vector product (mv, addmv: N = 1), whose padding
// columns are half those of 32 x 32 tiles. Stages: 32 KB a stage at 128 x 128 x 32; one program an
// SM (registers).
std::vector<Config> fma_configs() {
  struct C { int m, n, k, warps, stages; };
  static const std::vector<Config> out = [] {
    std::vector<Config> v;
    for (C c : {C{128, 128, 32, 8, 3}, C{128, 128, 32, 8, 4}, C{256, 128, 32, 8, 3}, C{128, 256, 32, 8, 3},
                C{64, 128, 32, 4, 3}, C{128, 64, 32, 4, 3}, C{64, 64, 32, 4, 3}, C{32, 64, 32, 2, 4},
                C{128, 16, 32, 4, 3}, C{64, 16, 32, 2, 4}, C{32, 32, 32, 2, 4}})
      v.emplace_back(Meta{{"BLOCK_M", c.m}, {"BLOCK_N", c.n}, {"BLOCK_K", c.k}, {"GROUP_M", 8}}, c.warps, c.stages);
    return v;
  }();
  return out;
}

// Tiles past a problem's size (rounded up to a power of two, at least 32) only compute padding:
// those configs are not tried; when none is left, the smallest is. fp32 without tf32 takes the
// FMA dot's configs instead of the tensor-core ones.
std::vector<Config> fitting(const std::vector<Config>& tensor_core_configs, int64_t M, int64_t N, int64_t K, bool fma) {
  auto cap = [](int64_t v) { return std::max(32, pow2_at_least(v, 16, 1 << 30)); };
  const std::vector<Config>& configs = fma ? fma_configs() : tensor_core_configs;
  std::vector<Config> out;
  for (const Config& c : configs)
    if (c.meta["BLOCK_M"] <= cap(M) && c.meta["BLOCK_N"] <= cap(N) && c.meta["BLOCK_K"] <= cap(K)) out.push_back(c);
  if (out.empty()) out.push_back(configs.back());
  return out;
}
std::vector<Config> fitting_configs(const std::vector<Config>& tensor_core_configs, const ArgView& args) {
  return fitting(tensor_core_configs, args.integer("M"), args.integer("N"), args.integer("K"),
                 args.dtype("a_ptr") == DType::f32 && args.integer("TF32") == 0);
}

// TRITIUM_AUTOTUNE=heuristic's choice (and auto's until tuning pays). Measured on an H200 (stop
// 47, every config of the GPT's 35 product keys in tf32 and bf16, bench/results/2026-11-27l-h100x4):
// 128 x 128 tiles were within 1.03-1.08 x of the best on every key (geomean), the larger 128 x 256 /
// 256 x 128 tiles 1.16-1.98 x at K <= 1536 but ~1.27 x AHEAD at 4096^3 (stop 43), and 32-wide tiles
// 1.7-2.1 x behind. So, largest first: a tile above 128 x 128 when the K loop is at least 2048 per
// program and its programs fill every SM once; else the first that gives at least half the SMs a
// program - counting every program of the grid: batch items and split-K chunks as well as tiles
// (the split itself was planned for 128 x 128 tiles: 256 x 128 leaving 60 SMs idle measured 1.6 x
// slower) - else the one with the most programs (tiny products: parallelism beats tile efficiency).
size_t heuristic_for(const std::vector<Config>& configs, const ProductGrid& g, int64_t sms) {
  constexpr int64_t kLongK = 2048, kReference = 128 * 128;
  const int64_t per_program_k = g.k_chunk > 0 ? std::min(g.k, g.k_chunk) : g.k;
  const int64_t splits = g.k_chunk > 0 ? cdiv(g.k, g.k_chunk) : 1;
  const int64_t enough = std::max<int64_t>(1, cdiv(sms, 2));
  size_t most = 0;
  int64_t most_programs = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const int64_t bm = configs[i].meta["BLOCK_M"], bn = configs[i].meta["BLOCK_N"];
    const bool large = bm * bn > kReference;
    if (large && per_program_k < kLongK) continue;
    const int64_t programs = cdiv(g.m, bm) * cdiv(g.n, bn) * std::max<int64_t>(g.batch, 1) * splits;
    if (programs >= (large ? sms : enough)) return i;
    if (programs > most_programs) most = i, most_programs = programs;
  }
  return most;
}

// The CUDA device of a launch's tensors (the matmul tuners run on CUDA only).
const runtime::cuda::DeviceProperties* cuda_properties(const ArgView& args) {
  for (const auto& a : args.args().values)
    if (a.tensor && a.tensor->device().is_cuda()) return &runtime::cuda::properties(a.tensor->device().index);
  return nullptr;
}

size_t heuristic_config(const std::vector<Config>& configs, const ArgView& args) {
  const auto* p = cuda_properties(args);
  const ProductGrid g{args.integer("M"), args.integer("N"), args.integer("K"), args.integer("NB2"),
                      args.has("K_CHUNK") ? args.integer("K_CHUNK") : 0};
  return heuristic_for(configs, g, p ? p->multiprocessor_count : 1);
}

// TRITIUM_AUTOTUNE=auto: the roofline estimate that decides when a product's key is tuned. The
// batch is NB2 (the inner batch dims; an outer one only makes the estimate low).
double estimate_config_ms(const ArgView& args) {
  const auto* p = cuda_properties(args);
  GpuSpeed gpu;
  if (p) {
    gpu.sms = p->multiprocessor_count, gpu.cc = p->compute_capability();
    if (p->clock_rate_khz > 0) gpu.clock_khz = p->clock_rate_khz;
    if (p->memory_clock_rate_khz > 0 && p->memory_bus_width_bits > 0)
      gpu.memory_clock_khz = p->memory_clock_rate_khz, gpu.memory_bus_bits = p->memory_bus_width_bits;
  }
  return matmul_estimate_ms(args.integer("M"), args.integer("N"), args.integer("K"), args.integer("NB2"),
                            args.dtype("a_ptr"), args.integer("TF32") != 0, gpu);
}

template <class T> Autotuner& gpu_tuner() {
  static Autotuner tuner = [] {
    AutotuneOptions o;
    // The layout (which strides are 1) changes the loads; NB2 the number of programs; TF32 the
    // kernel (set_float32_matmul_precision may change between calls of one shape).
    o.key = {"M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "NB2", "TF32"};
    o.prune_configs_by.early_config_prune = fitting_configs;
    o.prune_configs_by.heuristic = heuristic_config;
    o.estimate_ms = estimate_config_ms;  // tuned when it pays (TRITIUM_AUTOTUNE=auto)
    o.warmup_ms = 10, o.rep_ms = 40;  // an op's first call waits for this per shape
    return autotune(matmul_kernel<T>(), gpu_configs(std::is_same_v<T, float>), o);
  }();
  return tuner;
}

// The split-K kernel's tuner: the split is chosen before the tile (split_k::plan_for_product,
// from a reference tile of 128 x 128), so the chunk length is part of the key and the autotuner
// picks the best tile for that split.
template <class T> Autotuner& gpu_split_tuner() {
  static Autotuner tuner = [] {
    AutotuneOptions o;
    o.key = {"M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "NB2", "TF32", "K_CHUNK"};
    o.prune_configs_by.early_config_prune = fitting_configs;
    o.prune_configs_by.heuristic = heuristic_config;
    o.estimate_ms = estimate_config_ms;
    o.warmup_ms = 10, o.rep_ms = 40;
    return autotune(matmul_split_k_kernel<T>(), gpu_configs(std::is_same_v<T, float>), o);
  }();
  return tuner;
}

// The epilogue kernel's tuner: the unsplit key, and whether and how self is read.
template <class T> Autotuner& gpu_epilogue_tuner() {
  static Autotuner tuner = [] {
    AutotuneOptions o;
    o.key = {"M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "NB2", "TF32", "HAS_SELF",
             "stride_sm", "stride_sn"};
    o.prune_configs_by.early_config_prune = fitting_configs;
    o.prune_configs_by.heuristic = heuristic_config;
    o.estimate_ms = estimate_config_ms;
    o.warmup_ms = 10, o.rep_ms = 40;
    return autotune(matmul_epilogue_kernel<T>(), gpu_configs(std::is_same_v<T, float>), o);
  }();
  return tuner;
}

DType acc_dtype(DType d) { return d == DType::f64 ? DType::f64 : DType::f32; }

std::atomic<bool> g_allow_tf32{false};

// What the epilogue adds: C = beta * self + alpha * (A @ B); self (same dtype, expanded to C's
// shape) undefined when beta is 0 (not read, so its NaN do not propagate, as PyTorch).
struct ScaledAdd {
  Tensor self;
  double beta = 1, alpha = 1;
};

// A [Bt..., M, K], B [Bt..., K, N], C [Bt..., M, N] (and the epilogue's self), all with the same
// batch shape Bt (strides of broadcast batch dims are 0).
void launch(const Tensor& a, const Tensor& b, const Tensor& c, const ScaledAdd* add) {
  const int r = a.dim();
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (M == 0 || N == 0 || c.numel() == 0) return;
  const Tensor* self = add && add->self.defined() ? &add->self : nullptr;
  auto self_stride = [&](int d) { return self ? self->strides()[d] : int64_t{0}; };
  // Collapse the batch dims: drop size-1 dims, merge dims that are contiguous with each other
  // in all the operands.
  struct Dim {
    int64_t size, sa, sb, sc, ss;
  };
  std::vector<Dim> dims;
  for (int d = 0; d < r - 2; ++d) {
    Dim x{a.shape()[d], a.strides()[d], b.strides()[d], c.strides()[d], self_stride(d)};
    if (x.size == 1) continue;
    if (!dims.empty()) {
      Dim& p = dims.back();
      if (p.sa == x.size * x.sa && p.sb == x.size * x.sb && p.sc == x.size * x.sc && p.ss == x.size * x.ss) {
        p.size *= x.size, p.sa = x.sa, p.sb = x.sb, p.sc = x.sc, p.ss = x.ss;
        continue;
      }
    }
    dims.push_back(x);
  }
  if (dims.size() > 2) {  // one launch per index of the first batch dim
    for (int64_t i = 0; i < a.shape()[0]; ++i) {
      ScaledAdd sub;
      if (add) sub = {self ? runtime::select_of(*self, 0, i) : Tensor(), add->beta, add->alpha};
      launch(runtime::select_of(a, 0, i), runtime::select_of(b, 0, i), runtime::select_of(c, 0, i),
             add ? &sub : nullptr);
    }
    return;
  }
  while (dims.size() < 2) dims.insert(dims.begin(), Dim{1, 0, 0, 0, 0});
  const int64_t nbatch = dims[0].size * dims[1].size;
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) fail("matmul: dimensions above 2^31 are not supported");
  const int tf32 = a.dtype() == DType::f32 && g_allow_tf32.load(std::memory_order_relaxed);
  // tf32 on Hopper takes TMA for K-major operands only (wgmma has no tf32 transpose; an MN-major
  // tile is transposed by 4-byte cp.async copies, ~1.3x slower for a Linear's products). An
  // MN-major operand small beside the product's other traffic - a weight in its input gradient
  // g @ W - is copied K-major first (one pass over it) when the other operand is K-major or
  // small too.
  if (tf32 && nbatch == 1 && a.device().is_cuda() && K % 4 == 0 &&
      runtime::cuda::properties(a.device().index).compute_capability() >= 90) {
    const bool a_k = a.stride(-1) == 1 && a.stride(-2) % 4 == 0, b_k = b.stride(-2) == 1 && b.stride(-1) % 4 == 0;
    const bool copy_a = !a_k && M * K * 8 <= K * N + M * N, copy_b = !b_k && K * N * 8 <= M * K + M * N;
    if ((copy_a || copy_b) && (a_k || copy_a) && (b_k || copy_b)) {
      const Tensor a2 = copy_a ? contiguous(a) : a;
      const Tensor b2 = copy_b ? runtime::transpose_of(contiguous(runtime::transpose_of(b, r - 2, r - 1)), r - 2, r - 1) : b;
      return launch(a2, b2, c, add);
    }
  }
  const split_k::Plan split = split_k::plan_for_product(M, N, K, nbatch, a.dtype(), a.device());
  // With a split, the kernel writes partial tiles into a contiguous workspace [S, batch, M, N]
  // (from the caching allocator) instead of C; the sum kernel applies the epilogue.
  const Tensor part =
      split.splits > 1 ? Tensor::empty({split.splits, nbatch, M, N}, acc_dtype(a.dtype()), a.device()) : Tensor();
  const bool epilogue = add && split.splits == 1;
  runtime::dispatch_float(a.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    using Acc = acc_type<T>;
    const auto m32 = static_cast<int32_t>(M), n32 = static_cast<int32_t>(N), k32 = static_cast<int32_t>(K);
    // The arguments before the meta-parameters: the plain kernel's; with a split, C is the
    // workspace and K_CHUNK and its split stride follow; with an epilogue, self and the scales.
    auto operands = [&](auto&& go, const auto&... rest) {
      if (split.splits > 1)
        return go(a, b, part, m32, n32, k32, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1), N, int64_t{1},
                  dims[1].size, dims[0].sa, dims[1].sa, dims[0].sb, dims[1].sb, dims[1].size * M * N, M * N,
                  static_cast<int32_t>(split.chunk), part.stride(0), rest...);
      if (epilogue)
        return go(a, b, c, m32, n32, k32, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1), c.stride(-2),
                  c.stride(-1), dims[1].size, dims[0].sa, dims[1].sa, dims[0].sb, dims[1].sb, dims[0].sc, dims[1].sc,
                  self ? *self : c, self ? self->stride(-2) : int64_t{0}, self ? self->stride(-1) : int64_t{0},
                  dims[0].ss, dims[1].ss, static_cast<Acc>(add->alpha), static_cast<Acc>(add->beta), rest...);
      return go(a, b, c, m32, n32, k32, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1), c.stride(-2),
                c.stride(-1), dims[1].size, dims[0].sa, dims[1].sa, dims[0].sb, dims[1].sb, dims[0].sc, dims[1].sc,
                rest...);
    };
    if (a.device().is_cuda() && !std::is_same_v<T, double>) {
      auto grid = [&](const Meta& meta) {
        return Grid(cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]), nbatch, split.splits);
      };
      const int block_pointers =
          matmul_block_pointers(a.dtype(), tf32, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                                runtime::cuda::properties(a.device().index).compute_capability(), nbatch);
      Meta flags{{"TF32", tf32}, {"CARRY_POINTERS", block_pointers == 0}, {"BLOCK_POINTERS", block_pointers}};
      if (epilogue) flags.set("HAS_SELF", self != nullptr);
      Autotuner& tuner = split.splits > 1 ? gpu_split_tuner<T>() : epilogue ? gpu_epilogue_tuner<T>() : gpu_tuner<T>();
      operands([&](auto&&... x) { tuner[grid](x..., flags); });
    } else {
      Blocks bl = pick_blocks(M, N, K, nbatch, a.device());
      const Grid grid(cdiv(M, bl.m) * cdiv(N, bl.n), nbatch, split.splits);
      const Options options{.device = a.device()};
      operands([&](auto&&... x) {
        if (epilogue)
          matmul_epilogue_kernel<T>()[grid](x..., bl.m, bl.n, bl.k, bl.group, tf32, false, false, self != nullptr,
                                            options);
        else
          (split.splits > 1 ? matmul_split_k_kernel<T>() : matmul_kernel<T>())[grid](
              x..., bl.m, bl.n, bl.k, bl.group, tf32, false, false, options);
      });
    }
  });
  if (split.splits > 1) {
    split_k::Addend addend;
    if (add) addend = {self ? *self : Tensor(), dims[0].ss, dims[1].ss, add->beta, add->alpha};
    split_k::reduce_partials(part, c, M, N, dims[1].size, dims[0].sc, dims[1].sc, addend);
  }
}

}  // namespace

split_k::Plan split_k::plan_for_product(int64_t M, int64_t N, int64_t K, int64_t nbatch, DType dtype,
                                        const Device& device) {
  // The tile that sizes the split: on a GPU (the autotuned kernel) 128 x 128 and chunks of K in
  // multiples of 64, which every candidate's BLOCK_K divides; elsewhere the heuristic's blocks.
  const bool tuned = device.is_cuda() && dtype != DType::f64;
  const Blocks bl = pick_blocks(M, N, K, nbatch, device);
  const int64_t tiles = tuned ? cdiv(M, 128) * cdiv(N, 128) : cdiv(M, bl.m) * cdiv(N, bl.n);
  const int64_t workers = device.is_cuda() ? int64_t{runtime::cuda::properties(device.index).multiprocessor_count}
                                           : int64_t{runtime::ThreadPool::global().size()};
  // A split's partials: M N nbatch f32 values written by the product and read by the sum (8
  // bytes each), in K elements of a wave's time: a wave computes 2 x 128 x 128 flops a K element
  // on each of `workers` SMs; an H100 does about 300 16-bit (150 tf32, 20 fp32) tensor-core flops
  // per byte of DRAM traffic. (CPU: the partials stay in cache, 0.)
  int64_t split_cost = 0;
  if (tuned) {
    const int64_t flops_per_byte = dtype == DType::f32 ? (g_allow_tf32 ? 150 : 20) : 300;
    split_cost = cdiv(M * N * nbatch * 8 * flops_per_byte, 2 * 128 * 128 * workers);
  }
  return plan(tiles * nbatch, K, tuned ? 64 : bl.k, workers, split_cost);
}

std::vector<Config> matmul_gpu_candidates(int64_t M, int64_t N, int64_t K, DType dtype, bool tf32) {
  return fitting(gpu_configs(dtype == DType::f32), M, N, K, dtype == DType::f32 && !tf32);
}

size_t matmul_gpu_heuristic(const std::vector<Config>& candidates, const ProductGrid& grid, int64_t sms) {
  return heuristic_for(candidates, grid, sms);
}

double matmul_estimate_ms(int64_t M, int64_t N, int64_t K, int64_t batch, DType dtype, bool tf32, const GpuSpeed& gpu) {
  // Dense flops per clock and SM: fp32 FMA 2 x 128 lanes on Hopper (64 before), tensor cores
  // 4096 (16-bit) and 2048 (tf32) on Hopper, half that before (H100 SXM: 989 / 495 / 67 TFLOP/s).
  const bool hopper = gpu.cc >= 90;
  const bool b16 = dtype == DType::f16 || dtype == DType::bf16;
  const double per_clock = b16 ? (hopper ? 4096 : 2048) : dtype == DType::f32 && tf32 ? (hopper ? 2048 : 1024)
                                                                                          : (hopper ? 256 : 128);
  constexpr double kEfficiency = 0.7, kLaunchMs = 0.005;
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) *
                       static_cast<double>(std::max<int64_t>(batch, 1));
  const double peak = per_clock * gpu.sms * gpu.clock_khz * 1e3;  // flop/s
  const double esize = static_cast<double>(dtype_bytes(dtype));
  const double bytes = esize * static_cast<double>(std::max<int64_t>(batch, 1)) *
                       (static_cast<double>(M) * K + static_cast<double>(K) * N + static_cast<double>(M) * N);
  const double bandwidth = 2.0 * gpu.memory_clock_khz * 1e3 * gpu.memory_bus_bits / 8;  // double data rate, bytes/s
  return std::max(flops / peak, bytes / bandwidth) / kEfficiency * 1e3 + kLaunchMs;
}

void set_float32_matmul_precision(const std::string& precision) {
  if (precision != "highest" && precision != "high" && precision != "medium")
    fail("set_float32_matmul_precision: expected \"highest\", \"high\" or \"medium\", got \"{}\"", precision);
  g_allow_tf32 = precision != "highest";
}

std::string get_float32_matmul_precision() { return g_allow_tf32 ? "high" : "highest"; }

int matmul_block_pointers(DType dtype, bool tf32, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn, int cc,
                          int64_t nbatch) {
  const bool b16 = dtype == DType::f16 || dtype == DType::bf16;
  if (cc < 90 || nbatch != 1 || !(b16 || (dtype == DType::f32 && tf32))) return BlockPointers::none;
  const int64_t align = b16 ? 8 : 4;  // elements in 16 bytes
  // An operand's majorness as stored: 1 its last dim (K of A, N of B) contiguous, 2 the other, 0
  // neither or a row stride TMA cannot take.
  auto stored = [&](int64_t s_row, int64_t s_col) {
    if (s_col == 1 && s_row % align == 0) return 1;
    if (s_row == 1 && s_col % align == 0) return 2;
    return 0;
  };
  const int a = stored(sam, sak), b = stored(sbk, sbn);
  if (a == 0 || b == 0) return BlockPointers::none;
  if (!b16 && (a != 1 || b != 2)) return BlockPointers::none;  // tf32: both K-major only
  if (a == 1) return b == 1 ? BlockPointers::a_k_b_mn : BlockPointers::a_k_b_k;
  return b == 1 ? BlockPointers::a_mn_b_mn : BlockPointers::a_mn_b_k;
}

Kernel& matmul_kernel(DType dtype) {
  Kernel* k = nullptr;
  runtime::dispatch_float(dtype, "matmul_kernel", [&](auto tag) { k = &matmul_kernel<decltype(tag)>(); });
  return *k;
}

Kernel& matmul_epilogue_kernel(DType dtype) {
  Kernel* k = nullptr;
  runtime::dispatch_float(dtype, "matmul_epilogue_kernel", [&](auto tag) { k = &matmul_epilogue_kernel<decltype(tag)>(); });
  return *k;
}

Kernel& split_k::product_kernel(DType dtype) {
  Kernel* k = nullptr;
  runtime::dispatch_float(dtype, "matmul_split_k_kernel", [&](auto tag) { k = &matmul_split_k_kernel<decltype(tag)>(); });
  return *k;
}

namespace {

// torch.matmul's shapes, then the launch; with `add`, its self (any shape that broadcasts to the
// result's) goes into the epilogue.
Tensor product(const Tensor& a_in, const Tensor& b_in, const ScaledAdd* add) {
  if (!a_in.defined() || !b_in.defined()) fail("matmul: an operand is undefined");
  if (a_in.dim() == 0 || b_in.dim() == 0)
    fail("matmul: both arguments need to be at least 1D, but they are {}D and {}D", a_in.dim(), b_in.dim());
  if (a_in.dtype() != b_in.dtype())
    fail("matmul: expected both operands to have the same dtype, but got {} and {} (shapes {} and {})",
         dtype_name(a_in.dtype()), dtype_name(b_in.dtype()), shape_str(a_in.shape()), shape_str(b_in.shape()));
  runtime::dispatch_float(a_in.dtype(), "matmul", [](auto) {});
  if (a_in.device() != b_in.device())
    fail("matmul: operands are on different devices ({} and {})", a_in.device().str(), b_in.device().str());
  const int64_t ka = a_in.size(-1);
  const int64_t kb = b_in.dim() == 1 ? b_in.size(0) : b_in.size(-2);
  if (ka != kb)
    fail("matmul: shapes {} and {} cannot be multiplied ({} vs {})", shape_str(a_in.shape()), shape_str(b_in.shape()),
         ka, kb);

  // Promote 1-D operands to matrices.
  Tensor a = a_in.dim() == 1 ? runtime::unsqueeze_of(a_in, 0) : a_in;
  Tensor b = b_in.dim() == 1 ? runtime::unsqueeze_of(b_in, 1) : b_in;
  const int64_t M = a.size(-2), N = b.size(-1), K = ka;

  // Broadcast the batch dims.
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  size_t nb = std::max(ba.size(), bb.size());
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    int64_t x = i + ba.size() >= nb ? ba[i + ba.size() - nb] : 1;
    int64_t y = i + bb.size() >= nb ? bb[i + bb.size() - nb] : 1;
    if (x != y && x != 1 && y != 1)
      fail("matmul: the batch dimensions of shapes {} and {} cannot be broadcast (dimension {}: {} vs {})",
           shape_str(a_in.shape()), shape_str(b_in.shape()), i, x, y);
    batch[i] = x == 1 ? y : x;
  }
  Shape sa = batch, sb = batch, sc = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  sc.insert(sc.end(), {M, N});
  Tensor ae = runtime::expand_of(a, sa), be = runtime::expand_of(b, sb);

  // The result's shape: without the dims added for 1-D operands.
  Shape out = batch;
  if (a_in.dim() > 1) out.push_back(M);
  if (b_in.dim() > 1) out.push_back(N);

  ScaledAdd epilogue;
  if (add) {
    epilogue = *add;
    if (epilogue.beta == 0) epilogue.self = Tensor();
    if (epilogue.self.defined()) {
      const Tensor& s = epilogue.self;
      if (s.dtype() != a.dtype() || s.device() != a.device())
        fail("matmul: the added tensor ({} on {}) must have the operands' dtype and device ({} on {})",
             dtype_name(s.dtype()), s.device().str(), dtype_name(a.dtype()), a.device().str());
      bool fits = s.dim() <= static_cast<int>(out.size());
      for (int i = 1; fits && i <= s.dim(); ++i) fits = s.size(-i) == 1 || s.size(-i) == out[out.size() - i];
      if (!fits)
        fail("matmul: the added tensor of shape {} cannot be broadcast to the product's shape {}", shape_str(s.shape()),
             shape_str(out));
      // Expanded to the result's shape, then given C's dims (size 1 where an operand was 1-D).
      Tensor e = runtime::expand_of(s, out);
      if (a_in.dim() == 1) e = runtime::unsqueeze_of(e, static_cast<int>(batch.size()));
      if (b_in.dim() == 1) e = runtime::unsqueeze_of(e, e.dim());
      epilogue.self = e;
    }
  }

  Tensor c;
  if (K == 0) {  // an empty sum: zeros, or beta * self
    c = zeros(sc, a.dtype(), a.device());
    if (add && epilogue.self.defined()) c = mul(epilogue.self, Scalar(epilogue.beta));
    c = contiguous(c);
  } else {
    c = Tensor::empty(sc, a.dtype(), a.device());
    launch(ae, be, c, add ? &epilogue : nullptr);
  }
  return out == sc ? c : runtime::view_of(c, out);
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) { return product(a_in, b_in, nullptr); }

Tensor matmul_add(const Tensor& self, const Tensor& a, const Tensor& b, double beta, double alpha) {
  const ScaledAdd add{self, beta, alpha};
  return product(a, b, &add);
}

}  // namespace tritium::ops
