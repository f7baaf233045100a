// Tutorial 06: fused attention, ported line by line from Triton's sixth tutorial (Triton 3.6,
// python/tutorials/06-fused-attention.py): Tri Dao's Flash Attention v2 algorithm (credits, as in
// Triton's: the OpenAI kernel team; https://tridao.me/publications/flash2/flash2.pdf, Rabe and
// Staats https://arxiv.org/pdf/2112.05682v2.pdf).
//
// The forward computes O = softmax(Q K^T * sm_scale) V one BLOCK_M-row tile of Q per program,
// streaming K and V in BLOCK_N-row tiles through an online softmax (running row maximum m_i and
// sum l_i, in base 2); causal attention runs the off-band tiles without a mask and the diagonal
// band with one (STAGE). The backward recomputes P from the saved row statistics: a preprocess
// (delta = rowsum(O * dO)), then one kernel whose programs compute dK and dV for a block of keys
// and dQ for a block of queries. Both kernels hold two dots in a loop with a softmax between
// them: on a GPU every dot runs on tensor cores through the layout generator (S's accumulator,
// cast to f16, is P @ V's A operand in registers), and K and V stream through shared memory.
//
//   ./06-fused-attention            checks O, dQ, dK and dV (causal and not, head dims 64 and 128,
//                                   f16 and bf16; the fp8 forward as Triton's) against float64
//   ./06-fused-attention --bench    TFLOP/s as Triton's perf_report: batch 4, 32 heads, head
//                                   dims 64 and 128, N_CTX from 1024 to 16384 (--sizes), forward
//                                   causal and not, backward causal; bench/compare_attention.py
//                                   runs Triton's kernels and torch's SDPA beside it
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/do_bench.h"
#include "nn/autograd.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "runtime/thread_pool.h"
#include "tutorial.h"

namespace tl = tritium::tl;
using tritium::Config;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

// ---- forward ----------------------------------------------------------------------------------

// Triton's _attn_fwd_inner: a C++ function used while tracing (inlined into the kernel, as a
// @triton.jit function called from another is). acc, l_i and m_i are reassigned inside the
// run-time loop, so they are carried from trip to trip; so are the two row offsets.
std::tuple<tl::tensor, tl::tensor, tl::tensor> _attn_fwd_inner(
    tl::tensor acc, tl::tensor l_i, tl::tensor m_i, const tl::tensor& q,  //
    const tl::tensor_descriptor& desc_k, const tl::tensor_descriptor& desc_v,  //
    const tl::tensor& offset_y, DType dtype, const tl::tensor& start_m, const tl::tensor& qk_scale,  //
    int BLOCK_M, int HEAD_DIM, int BLOCK_N,  //
    int STAGE, const tl::tensor& offs_m, const tl::tensor& offs_n,  //
    const tl::tensor& N_CTX) {
  // range of values handled by this stage
  tl::tensor lo, hi;
  if (STAGE == 1) {
    lo = tl::full({}, 0, tl::int32), hi = start_m * BLOCK_M;
  } else if (STAGE == 2) {
    lo = start_m * BLOCK_M, hi = (start_m + 1) * BLOCK_M;
    lo = tl::multiple_of(lo, BLOCK_M);
  } else {  // causal = False
    lo = tl::full({}, 0, tl::int32), hi = N_CTX;
  }
  auto offsetk_y = offset_y + lo;
  tl::tensor offsetv_y;
  if (dtype == tl::float8e5) offsetv_y = offset_y * HEAD_DIM + lo;
  else offsetv_y = offset_y + lo;
  // loop over k, v and update accumulator
  for (auto start_n : tl::range(lo, hi, BLOCK_N)) {
    start_n = tl::multiple_of(start_n, BLOCK_N);
    // -- compute qk ----
    auto k = desc_k.load({offsetk_y, 0}).T();
    auto qk = tl::dot(q, k);
    tl::tensor m_ij;
    if (STAGE == 2) {
      auto mask = offs_m(tl::_, tl::None) >= (start_n + offs_n(tl::None, tl::_));
      qk = qk * qk_scale + tl::where(mask, 0, -1.0e6);
      m_ij = tl::maximum(m_i, tl::max(qk, 1));
      qk -= m_ij(tl::_, tl::None);
    } else {
      m_ij = tl::maximum(m_i, tl::max(qk, 1) * qk_scale);
      qk = qk * qk_scale - m_ij(tl::_, tl::None);
    }
    auto p = tl::exp2(qk);
    // -- compute correction factor
    auto alpha = tl::exp2(m_i - m_ij);
    auto l_ij = tl::sum(p, 1);
    // -- update output accumulator --
    acc = acc * alpha(tl::_, tl::None);
    // prepare p and v for the dot
    tl::tensor v;
    if (dtype == tl::float8e5) v = desc_v.load({0, offsetv_y}).T();
    else v = desc_v.load({offsetv_y, 0});
    p = p.to(dtype);
    acc = tl::dot(p, v, acc);
    // update m_i and l_i
    // place this at the end of the loop to reduce register pressure
    l_i = l_i * alpha + l_ij;
    m_i = m_ij;
    offsetk_y += BLOCK_N;
    offsetv_y += BLOCK_N;
  }
  return {acc, l_i, m_i};
}

// Triton's configs: BLOCK_M in {64, 128}, BLOCK_N in {32, 64, 128}, 2-4 stages, 4 or 8 warps;
// on Hopper not 8 warps for tiles under 128 x 128 (_keep).
std::vector<Config> fwd_configs(const tritium::Device& device) {
  std::vector<Config> out;
  if (device.is_cpu()) {  // a program runs on one core: smaller tiles (num_warps, stages unused)
    for (int bm : {32, 64})
      out.push_back(Config(Meta{{"BLOCK_M", bm}, {"BLOCK_N", 32}}, 4, 1));
    return out;
  }
  const bool hopper = tritium::runtime::cuda::properties(device.index).compute_capability() == 90;
  for (int bm : {64, 128})
    for (int bn : {32, 64, 128})
      for (int s : {2, 3, 4})
        for (int w : {4, 8})
          if (!(hopper && bm * bn < 128 * 128 && w == 8)) out.push_back(Config(Meta{{"BLOCK_M", bm}, {"BLOCK_N", bn}}, w, s));
  return out;
}

// _prune_invalid_configs: no BLOCK_M above N_CTX, and BLOCK_M >= BLOCK_N when causal (STAGE 3).
std::vector<Config> prune_invalid_configs(const std::vector<Config>& configs, const tritium::ArgView& args) {
  const int64_t n_ctx = args.integer("N_CTX"), stage = args.integer("STAGE");
  std::vector<Config> out;
  for (const Config& c : configs) {
    const int64_t bm = c.meta["BLOCK_M"], bn = c.meta["BLOCK_N"];
    if (bm <= n_ctx && (bm >= bn || stage == 1)) out.push_back(c);
  }
  return out;
}

auto _attn_fwd = tritium::kernel(
    "_attn_fwd",
    [](tl::f32 sm_scale, tl::ptr<float> M,  //
       tl::i32 Z, tl::i32 H, P desc_q, P desc_k, P desc_v, P desc_o, tl::i32 N_CTX,  //
       int HEAD_DIM,  //
       int BLOCK_M,  //
       int BLOCK_N,  //
       int FP8_OUTPUT,  //
       int STAGE) {
      auto dtype = FP8_OUTPUT ? tl::float8e5 : tl::float16;
      if (!FP8_OUTPUT && desc_q.type().pointee == DType::bf16) dtype = tl::bfloat16;  // bf16 inputs: bf16 output
      tl::static_assert_(BLOCK_N <= HEAD_DIM);
      auto start_m = tl::program_id(0);
      auto off_hz = tl::program_id(1);
      auto off_z = off_hz / H;
      auto off_h = off_hz % H;

      // The descriptors are made in the kernel (Triton's _maybe_make_tensor_desc for a pointer).
      auto y_dim = Z * H * N_CTX;
      auto q_desc = tl::make_tensor_descriptor(desc_q, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M, HEAD_DIM});
      tl::tensor_descriptor v_desc =
          // (fp8: V is stored [Z, H, HEAD_DIM, N_CTX], a [HEAD_DIM, y_dim * HEAD_DIM] matrix of row stride
          // N_CTX. Triton's tutorial declares [HEAD_DIM, y_dim], so its copies of every head whose
          // columns start past y_dim read zeros; the port declares the columns the heads use.)
          FP8_OUTPUT ? tl::make_tensor_descriptor(desc_v, {HEAD_DIM, y_dim * HEAD_DIM}, {N_CTX, 1}, {HEAD_DIM, BLOCK_N})
                     : tl::make_tensor_descriptor(desc_v, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N, HEAD_DIM});
      auto k_desc = tl::make_tensor_descriptor(desc_k, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N, HEAD_DIM});
      auto o_desc = tl::make_tensor_descriptor(desc_o, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M, HEAD_DIM});

      auto offset_y = off_z * (N_CTX * H) + off_h * N_CTX;
      auto qo_offset_y = offset_y + start_m * BLOCK_M;
      // initialize offsets
      auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
      auto offs_n = tl::arange(0, BLOCK_N);
      // initialize pointer to m and l
      auto m_i = tl::zeros({BLOCK_M}, tl::float32) - INFINITY;
      auto l_i = tl::zeros({BLOCK_M}, tl::float32) + 1.0;
      auto acc = tl::zeros({BLOCK_M, HEAD_DIM}, tl::float32);
      // load scales
      auto qk_scale = sm_scale;
      qk_scale *= 1.44269504;  // 1/log(2)
      // load q: it will stay in SRAM throughout
      auto q = q_desc.load({qo_offset_y, 0});
      // stage 1: off-band
      // For causal = True, STAGE = 3 and _attn_fwd_inner gets 1 as its STAGE
      // For causal = False, STAGE = 1, and _attn_fwd_inner gets 3 as its STAGE
      if (STAGE & 1)
        std::tie(acc, l_i, m_i) = _attn_fwd_inner(acc, l_i, m_i, q,  //
                                                  k_desc, v_desc,  //
                                                  offset_y, dtype, start_m, qk_scale,  //
                                                  BLOCK_M, HEAD_DIM, BLOCK_N,  //
                                                  4 - STAGE, offs_m, offs_n, N_CTX);
      // stage 2: on-band
      if (STAGE & 2)
        std::tie(acc, l_i, m_i) = _attn_fwd_inner(acc, l_i, m_i, q,  //
                                                  k_desc, v_desc,  //
                                                  offset_y, dtype, start_m, qk_scale,  //
                                                  BLOCK_M, HEAD_DIM, BLOCK_N,  //
                                                  2, offs_m, offs_n, N_CTX);
      // epilogue
      m_i += tl::log2(l_i);
      acc = acc / l_i(tl::_, tl::None);
      auto m_ptrs = M + off_hz * N_CTX + offs_m;
      tl::store(m_ptrs, m_i);
      o_desc.store({qo_offset_y, 0}, acc.to(dtype));
    },
    {"sm_scale", "M", "Z", "H", "desc_q", "desc_k", "desc_v", "desc_o", "N_CTX", "HEAD_DIM", "BLOCK_M", "BLOCK_N",
     "FP8_OUTPUT", "STAGE"});

tritium::Autotuner& fwd_tuner(const tritium::Device& device) {
  auto make = [](const tritium::Device& d) {
    tritium::AutotuneOptions options;
    options.key = {"N_CTX", "HEAD_DIM", "FP8_OUTPUT"};
    options.prune_configs_by.early_config_prune = prune_invalid_configs;
    return tritium::autotune(_attn_fwd, fwd_configs(d), options);
  };
  if (device.is_cpu()) {
    static tritium::Autotuner cpu = make(tritium::Device::cpu());
    return cpu;
  }
  static tritium::Autotuner cuda = make(tritium::Device::cuda());
  return cuda;
}

// ---- backward ---------------------------------------------------------------------------------

auto _attn_bwd_preprocess = tritium::kernel(
    "_attn_bwd_preprocess",
    [](P O, P DO,  //
       tl::ptr<float> Delta,  //
       tl::i32 Z, tl::i32 H, tl::i32 N_CTX,  //
       int BLOCK_M, int HEAD_DIM) {
      (void)Z, (void)H;
      auto off_m = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
      auto off_hz = tl::program_id(1);
      auto off_n = tl::arange(0, HEAD_DIM);
      // load
      auto o = tl::load(O + off_hz * HEAD_DIM * N_CTX + off_m(tl::_, tl::None) * HEAD_DIM + off_n(tl::None, tl::_));
      auto do_ = tl::load(DO + off_hz * HEAD_DIM * N_CTX + off_m(tl::_, tl::None) * HEAD_DIM + off_n(tl::None, tl::_))
                     .to(tl::float32);
      auto delta = tl::sum(o * do_, 1);
      // write-back
      tl::store(Delta + off_hz * N_CTX + off_m, delta);
    },
    {"O", "DO", "Delta", "Z", "H", "N_CTX", "BLOCK_M", "HEAD_DIM"});

// The main inner-loop logic for computing dK and dV.
std::tuple<tl::tensor, tl::tensor> _attn_bwd_dkdv(
    tl::tensor dk, tl::tensor dv,  //
    const tl::tensor& Q, const tl::tensor& k, const tl::tensor& v, const tl::tensor& sm_scale,  //
    const tl::tensor& DO,  //
    const tl::tensor& M, const tl::tensor& D,  //
    // shared by Q/K/V/DO.
    const tl::tensor& stride_tok, const tl::tensor& stride_d,  //
    const tl::tensor& H, const tl::tensor& N_CTX, int BLOCK_M1,  //
    int BLOCK_N1,  //
    int HEAD_DIM,  //
    // Filled in by the wrapper.
    const tl::tensor& start_n, const tl::tensor& start_m, const tl::tensor& num_steps,  //
    bool MASK, DType dtype) {
  (void)sm_scale, (void)H, (void)N_CTX;
  auto offs_m = start_m + tl::arange(0, BLOCK_M1);
  auto offs_n = start_n + tl::arange(0, BLOCK_N1);
  auto offs_k = tl::arange(0, HEAD_DIM);
  auto qT_ptrs = Q + offs_m(tl::None, tl::_) * stride_tok + offs_k(tl::_, tl::None) * stride_d;
  auto do_ptrs = DO + offs_m(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d;
  // BLOCK_N1 must be a multiple of BLOCK_M1, otherwise the code wouldn't work.
  tl::static_assert_(BLOCK_N1 % BLOCK_M1 == 0);
  auto curr_m = start_m;
  auto step_m = BLOCK_M1;
  for (auto blk_idx : tl::range(0, num_steps)) {
    (void)blk_idx;
    auto qT = tl::load(qT_ptrs);
    // Load m before computing qk to reduce pipeline stall.
    offs_m = curr_m + tl::arange(0, BLOCK_M1);
    auto m = tl::load(M + offs_m);
    auto qkT = tl::dot(k, qT);
    auto pT = tl::exp2(qkT - m(tl::None, tl::_));
    // Autoregressive masking.
    if (MASK) {
      auto mask = offs_m(tl::None, tl::_) >= offs_n(tl::_, tl::None);
      pT = tl::where(mask, pT, 0.0);
    }
    auto do_ = tl::load(do_ptrs);
    // Compute dV.
    auto ppT = pT;
    ppT = ppT.to(dtype);
    dv += tl::dot(ppT, do_);
    // D (= delta) is pre-divided by ds_scale.
    auto Di = tl::load(D + offs_m);
    // Compute dP and dS.
    auto dpT = tl::dot(v, tl::trans(do_)).to(tl::float32);
    auto dsT = pT * (dpT - Di(tl::None, tl::_));
    dsT = dsT.to(dtype);
    dk += tl::dot(dsT, tl::trans(qT));
    // Increment pointers.
    curr_m += step_m;
    qT_ptrs += step_m * stride_tok;
    do_ptrs += step_m * stride_tok;
  }
  return {dk, dv};
}

// the main inner-loop logic for computing dQ
tl::tensor _attn_bwd_dq(tl::tensor dq, const tl::tensor& q, const tl::tensor& K, const tl::tensor& V,  //
                        const tl::tensor& do_, const tl::tensor& m, const tl::tensor& D,
                        // shared by Q/K/V/DO.
                        const tl::tensor& stride_tok, const tl::tensor& stride_d,  //
                        const tl::tensor& H, const tl::tensor& N_CTX,  //
                        int BLOCK_M2,  //
                        int BLOCK_N2,  //
                        int HEAD_DIM,
                        // Filled in by the wrapper.
                        const tl::tensor& start_m, const tl::tensor& start_n, const tl::tensor& num_steps,  //
                        bool MASK, DType dtype) {
  (void)H, (void)N_CTX;
  auto offs_m = start_m + tl::arange(0, BLOCK_M2);
  auto offs_n = start_n + tl::arange(0, BLOCK_N2);
  auto offs_k = tl::arange(0, HEAD_DIM);
  auto kT_ptrs = K + offs_n(tl::None, tl::_) * stride_tok + offs_k(tl::_, tl::None) * stride_d;
  auto vT_ptrs = V + offs_n(tl::None, tl::_) * stride_tok + offs_k(tl::_, tl::None) * stride_d;
  // D (= delta) is pre-divided by ds_scale.
  auto Di = tl::load(D + offs_m);
  // BLOCK_M2 must be a multiple of BLOCK_N2, otherwise the code wouldn't work.
  tl::static_assert_(BLOCK_M2 % BLOCK_N2 == 0);
  auto curr_n = start_n;
  auto step_n = BLOCK_N2;
  for (auto blk_idx : tl::range(0, num_steps)) {
    (void)blk_idx;
    auto kT = tl::load(kT_ptrs);
    auto vT = tl::load(vT_ptrs);
    auto qk = tl::dot(q, kT);
    auto p = tl::exp2(qk - m);
    // Autoregressive masking.
    if (MASK) {
      offs_n = curr_n + tl::arange(0, BLOCK_N2);
      auto mask = offs_m(tl::_, tl::None) >= offs_n(tl::None, tl::_);
      p = tl::where(mask, p, 0.0);
    }
    // Compute dP and dS.
    auto dp = tl::dot(do_, vT).to(tl::float32);
    auto ds = p * (dp - Di(tl::_, tl::None));
    ds = ds.to(dtype);
    // Compute dQ.
    // NOTE: We need to de-scale dq in the end, because kT was pre-scaled.
    dq += tl::dot(ds, tl::trans(kT));
    // Increment pointers.
    curr_n += step_n;
    kT_ptrs += step_n * stride_tok;
    vT_ptrs += step_n * stride_tok;
  }
  return dq;
}

auto _attn_bwd = tritium::kernel(
    "_attn_bwd",
    [](P Q, P K, P V, tl::f32 sm_scale,  //
       P DO,  //
       P DQ, P DK, P DV,  //
       tl::ptr<float> M, tl::ptr<float> D,
       // shared by Q/K/V/DO.
       tl::i32 stride_z, tl::i32 stride_h, tl::i32 stride_tok, tl::i32 stride_d,  //
       tl::i32 H, tl::i32 N_CTX,  //
       int BLOCK_M1,  //
       int BLOCK_N1,  //
       int BLOCK_M2,  //
       int BLOCK_N2,  //
       int BLK_SLICE_FACTOR,  //
       int HEAD_DIM,  //
       int CAUSAL) {
      const double LN2 = 0.6931471824645996;  // = ln(2)
      const DType dtype = Q.type().pointee == DType::bf16 ? tl::bfloat16 : tl::float16;

      auto bhid = tl::program_id(2);
      auto off_chz = (bhid * N_CTX).to(tl::int64);
      auto adj = (stride_h * (bhid % H) + stride_z * (bhid / H)).to(tl::int64);
      auto pid = tl::program_id(0);

      // offset pointers for batch/head
      Q += adj;
      K += adj;
      V += adj;
      DO += adj;
      DQ += adj;
      DK += adj;
      DV += adj;
      M += off_chz;
      D += off_chz;

      // load scales
      auto offs_k = tl::arange(0, HEAD_DIM);

      auto start_n = pid * BLOCK_N1;
      tl::tensor start_m = tl::full({}, 0, tl::int32);

      const int MASK_BLOCK_M1 = BLOCK_M1 / BLK_SLICE_FACTOR;
      auto offs_n = start_n + tl::arange(0, BLOCK_N1);

      auto dv = tl::zeros({BLOCK_N1, HEAD_DIM}, tl::float32);
      auto dk = tl::zeros({BLOCK_N1, HEAD_DIM}, tl::float32);

      // load K and V: they stay in SRAM throughout the inner loop.
      auto k = tl::load(K + offs_n(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d);
      auto v = tl::load(V + offs_n(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d);

      if (CAUSAL) {
        start_m = start_n;
        auto num_steps = tl::full({}, BLOCK_N1 / MASK_BLOCK_M1, tl::int32);
        std::tie(dk, dv) = _attn_bwd_dkdv(dk, dv,  //
                                          Q, k, v, sm_scale,  //
                                          DO,  //
                                          M, D,  //
                                          stride_tok, stride_d,  //
                                          H, N_CTX,  //
                                          MASK_BLOCK_M1, BLOCK_N1, HEAD_DIM,  //
                                          start_n, start_m, num_steps,  //
                                          /*MASK=*/true, dtype);
        start_m += num_steps * MASK_BLOCK_M1;
      }
      auto num_steps = (N_CTX - start_m) / BLOCK_M1;

      // Compute dK and dV for non-masked blocks.
      std::tie(dk, dv) = _attn_bwd_dkdv(  //
          dk, dv,  //
          Q, k, v, sm_scale,  //
          DO,  //
          M, D,  //
          stride_tok, stride_d,  //
          H, N_CTX,  //
          BLOCK_M1, BLOCK_N1, HEAD_DIM,  //
          start_n, start_m, num_steps,  //
          /*MASK=*/false, dtype);

      auto dv_ptrs = DV + offs_n(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d;
      tl::store(dv_ptrs, dv.to(dtype));

      // Write back dK.
      dk *= sm_scale;
      auto dk_ptrs = DK + offs_n(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d;
      tl::store(dk_ptrs, dk.to(dtype));

      // THIS BLOCK DOES DQ:
      start_m = pid * BLOCK_M2;
      auto end_n = CAUSAL ? start_m + BLOCK_M2 : N_CTX + 0;

      const int MASK_BLOCK_N2 = BLOCK_N2 / BLK_SLICE_FACTOR;
      auto offs_m = start_m + tl::arange(0, BLOCK_M2);

      auto q = tl::load(Q + offs_m(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d);
      auto dq = tl::zeros({BLOCK_M2, HEAD_DIM}, tl::float32);
      auto do_ = tl::load(DO + offs_m(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d);

      auto m = tl::load(M + offs_m);
      m = m(tl::_, tl::None);

      if (CAUSAL) {
        // Compute dQ for masked (diagonal) blocks.
        // NOTE: This code scans each row of QK^T backward (from right to left,
        // but inside each call to _attn_bwd_dq, from left to right), but that's
        // not due to anything important.  I just wanted to reuse the loop
        // structure for dK & dV above as much as possible.
        auto num_steps2 = tl::full({}, BLOCK_M2 / MASK_BLOCK_N2, tl::int32);
        dq = _attn_bwd_dq(dq, q, K, V,  //
                          do_, m, D,  //
                          stride_tok, stride_d,  //
                          H, N_CTX,  //
                          BLOCK_M2, MASK_BLOCK_N2, HEAD_DIM,  //
                          start_m, end_n - num_steps2 * MASK_BLOCK_N2, num_steps2,  //
                          /*MASK=*/true, dtype);
        end_n -= num_steps2 * MASK_BLOCK_N2;
      }
      // stage 2
      auto num_steps2 = end_n / BLOCK_N2;
      dq = _attn_bwd_dq(dq, q, K, V,  //
                        do_, m, D,  //
                        stride_tok, stride_d,  //
                        H, N_CTX,  //
                        BLOCK_M2, BLOCK_N2, HEAD_DIM,  //
                        start_m, end_n - num_steps2 * BLOCK_N2, num_steps2,  //
                        /*MASK=*/false, dtype);
      // Write back dQ.
      auto dq_ptrs = DQ + offs_m(tl::_, tl::None) * stride_tok + offs_k(tl::None, tl::_) * stride_d;
      dq *= LN2;
      tl::store(dq_ptrs, dq.to(dtype));
    },
    {"Q", "K", "V", "sm_scale", "DO", "DQ", "DK", "DV", "M", "D", "stride_z", "stride_h", "stride_tok", "stride_d", "H",
     "N_CTX", "BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2", "BLK_SLICE_FACTOR", "HEAD_DIM", "CAUSAL"});

// ---- the autograd function (Triton's _attention) ------------------------------------------------

// Triton's test and benchmark shapes: contiguous [Z, H, N_CTX, HEAD_DIM] tensors; N_CTX a multiple
// of 128 (the backward's blocks); HEAD_DIM in {16, 32, 64, 128, 256}.
bool g_poison = false;

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float sm_scale) {
  // shape constraints
  const int64_t HEAD_DIM_Q = q.size(-1), HEAD_DIM_K = k.size(-1);
  // when v is in float8_e5m2 it is transposed.
  const int64_t HEAD_DIM_V = v.size(-1);
  if (q.dim() != 4 || HEAD_DIM_Q != HEAD_DIM_K || HEAD_DIM_K != HEAD_DIM_V)
    tritium::fail("attention: q, k and v must be [Z, H, N_CTX, HEAD_DIM] with one head dim, got {}, {}, {}", q.str(), k.str(),
                  v.str());
  if (HEAD_DIM_K != 16 && HEAD_DIM_K != 32 && HEAD_DIM_K != 64 && HEAD_DIM_K != 128 && HEAD_DIM_K != 256)
    tritium::fail("attention: the head dim must be 16, 32, 64, 128 or 256, got {}", HEAD_DIM_K);
  const bool fp8 = q.dtype() == DType::f8e5m2;
  if (!q.is_contiguous() || !k.is_contiguous() || (!fp8 && !v.is_contiguous()))
    tritium::fail("attention: q, k and v must be contiguous (v as [Z, H, HEAD_DIM, N_CTX] for fp8)");
  Tensor o = g_poison ? tritium::ops::full(q.shape(), NAN, DType::f32, q.device()).to(q.dtype())
                      : Tensor::empty(q.shape(), q.dtype(), q.device());
  const int stage = causal ? 3 : 1;
  const int64_t Z = q.size(0), H = q.size(1), N_CTX = q.size(2);
  Tensor M = Tensor::empty({Z, H, N_CTX}, DType::f32, q.device());
  auto grid = [&](const Meta& META) { return tritium::Grid(tritium::cdiv(N_CTX, META["BLOCK_M"]), Z * H, 1); };
  auto i32 = [](int64_t x) { return static_cast<int32_t>(x); };
  fwd_tuner(q.device())[grid](sm_scale, M,  //
                              i32(Z), i32(H),  //
                              q, k, v, o,  //
                              i32(N_CTX),  //
                              Meta{{"HEAD_DIM", static_cast<int>(HEAD_DIM_K)},  //
                                   {"FP8_OUTPUT", fp8 ? 1 : 0},  //
                                   {"STAGE", stage}});
  if (fp8) return o;
  Tensor sq = q.detach(), sk = k.detach(), sv = v.detach(), so = o.detach();
  return tritium::nn::record(o, {q, k, v}, "AttentionBackward", [=](const Tensor& do_in) {
    Tensor do_ = do_in.contiguous();
    Tensor dq = Tensor::empty(sq.shape(), sq.dtype(), sq.device());
    Tensor dk = Tensor::empty(sk.shape(), sk.dtype(), sk.device());
    Tensor dv = Tensor::empty(sv.shape(), sv.dtype(), sv.device());
    const int PRE_BLOCK = 128;
    const int NUM_WARPS = 4, NUM_STAGES = 5;
    const int BLOCK_M1 = 32, BLOCK_N1 = 128, BLOCK_M2 = 128, BLOCK_N2 = 32;
    const int BLK_SLICE_FACTOR = 2;
    const double RCP_LN2 = 1.4426950408889634;  // = 1.0 / ln(2)
    Tensor arg_k = tritium::ops::mul(sk, sm_scale * RCP_LN2);
    if (N_CTX % PRE_BLOCK != 0) tritium::fail("attention backward: N_CTX ({}) must be a multiple of {}", N_CTX, PRE_BLOCK);
    Tensor delta = Tensor::empty(M.shape(), DType::f32, M.device());
    _attn_bwd_preprocess[{static_cast<int>(N_CTX / PRE_BLOCK), static_cast<int>(Z * H)}](
        so, do_,  //
        delta,  //
        i32(Z), i32(H), i32(N_CTX),  //
        PRE_BLOCK, static_cast<int>(HEAD_DIM_K));
    _attn_bwd[{static_cast<int>(N_CTX / BLOCK_N1), 1, static_cast<int>(Z * H)}](
        sq, arg_k, sv, sm_scale, do_, dq, dk, dv,  //
        M, delta,  //
        i32(sq.stride(0)), i32(sq.stride(1)), i32(sq.stride(2)), i32(sq.stride(3)),  //
        i32(H), i32(N_CTX),  //
        BLOCK_M1, BLOCK_N1,  //
        BLOCK_M2, BLOCK_N2,  //
        BLK_SLICE_FACTOR,  //
        static_cast<int>(HEAD_DIM_K),  //
        causal ? 1 : 0,  //
        tritium::Options{.num_warps = NUM_WARPS, .num_stages = NUM_STAGES, .device = {}});
    return std::vector<Tensor>{dq, dk, dv};
  });
}

// ---- the check --------------------------------------------------------------------------------

std::vector<float> host(const Tensor& t) { return t.to(DType::f32).contiguous().to_vector<float>(); }

struct Errors {
  double o = 0, dq = 0, dk = 0, dv = 0;
  int64_t unwritten = 0;
};

// ||got - ref|| / ||ref||, NaN and infinities (unwritten elements) counted.
double rel(const std::vector<float>& got, const std::vector<double>& ref, int64_t& unwritten) {
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++unwritten;
      continue;
    }
    d2 += (got[i] - ref[i]) * (got[i] - ref[i]), r2 += ref[i] * ref[i];
  }
  return std::sqrt(d2 / std::max(r2, 1e-300));
}

// O = softmax(Q K^T sm_scale [+ causal mask]) V and its gradients for dO, in float64 from the values
// the kernels see; q, k, v, do as [Z, H, N, D] row-major floats.
void reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
               const std::vector<float>& dout, int64_t ZH, int64_t N, int64_t D, bool causal, double sm_scale,
               std::vector<double>& o, std::vector<double>& mag, std::vector<double>& dq, std::vector<double>& dk,
               std::vector<double>& dv) {
  o.assign(q.size(), 0), mag.assign(q.size(), 0), dq.assign(q.size(), 0), dk.assign(q.size(), 0), dv.assign(q.size(), 0);
  tritium::runtime::ThreadPool::global().parallel_for(ZH, [&](int64_t h) {
    const size_t base = size_t(h * N * D);
    std::vector<double> p(size_t(N * N)), dp(size_t(N * N));
    for (int64_t i = 0; i < N; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += double(q[base + i * D + d]) * k[base + j * D + d];
        s *= sm_scale;
        if (causal && j > i) s = -INFINITY;
        p[size_t(i * N + j)] = s;
        mx = std::max(mx, s);
      }
      double sum = 0;
      for (int64_t j = 0; j < N; ++j) sum += (p[size_t(i * N + j)] = std::exp(p[size_t(i * N + j)] - mx));
      for (int64_t j = 0; j < N; ++j) p[size_t(i * N + j)] /= sum;
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0, m = 0;
        for (int64_t j = 0; j < N; ++j) {
          acc += p[size_t(i * N + j)] * v[base + j * D + d];
          m += p[size_t(i * N + j)] * std::abs(v[base + j * D + d]);
        }
        o[base + i * D + d] = acc, mag[base + i * D + d] = m;
      }
    }
    for (int64_t i = 0; i < N; ++i) {
      double delta = 0;
      for (int64_t d = 0; d < D; ++d) delta += double(dout[base + i * D + d]) * o[base + i * D + d];
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += double(dout[base + i * D + d]) * v[base + j * D + d];
        dp[size_t(i * N + j)] = p[size_t(i * N + j)] * (s - delta);  // dS
      }
    }
    for (int64_t i = 0; i < N; ++i)
      for (int64_t d = 0; d < D; ++d) {
        double a = 0, b = 0, c = 0;
        for (int64_t j = 0; j < N; ++j) {
          a += dp[size_t(i * N + j)] * k[base + j * D + d];  // dQ = dS K
          b += dp[size_t(j * N + i)] * q[base + j * D + d];  // dK = dS^T Q
          c += p[size_t(j * N + i)] * dout[base + j * D + d];  // dV = P^T dO
        }
        dq[base + i * D + d] = a * sm_scale, dk[base + i * D + d] = b * sm_scale, dv[base + i * D + d] = c;
      }
  });
}

Errors check_case(const tutorial::Args& args, int64_t Z, int64_t H, int64_t N, int64_t D, bool causal, DType dtype,
                  uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);  // Triton's test: .normal_(mean=0.0, std=0.5)
  const size_t n = size_t(Z * H * N * D);
  std::vector<float> hq(n), hk(n), hv(n), hdo(n);
  for (auto* v : {&hq, &hk, &hv}) for (auto& x : *v) x = normal(rng);
  std::normal_distribution<float> unit(0.0f, 1.0f);
  for (auto& x : hdo) x = unit(rng);  // torch.randn_like
  const bool fp8 = dtype == DType::f8e5m2;
  auto make = [&](const std::vector<float>& h) { return Tensor::from_vector(h, {Z, H, N, D}, args.device).to(dtype); };
  Tensor q = make(hq), k = make(hk), v = make(hv);
  Tensor dout = Tensor::from_vector(hdo, {Z, H, N, D}, args.device).to(fp8 ? DType::f16 : dtype);
  if (fp8) {  // Triton's benchmark: v stored [Z, H, HEAD_DIM, N_CTX], seen as [Z, H, N_CTX, HEAD_DIM]
    v = Tensor::from_vector(hv, {Z, H, N, D}, args.device).to(dtype).permute({0, 1, 3, 2}).contiguous().permute({0, 1, 3, 2});
  } else {
    q.requires_grad_(), k.requires_grad_(), v.requires_grad_();
  }
  hq = host(q), hk = host(k), hv = host(v), hdo = host(dout);
  const float sm_scale = 0.5f;
  g_poison = true;
  Tensor o = attention(q, k, v, causal, sm_scale);
  if (!fp8) o.backward(dout, /*retain_graph=*/false);
  g_poison = false;
  std::vector<double> ro, mag, rdq, rdk, rdv;
  reference(hq, hk, hv, hdo, Z * H, N, D, causal, sm_scale, ro, mag, rdq, rdk, rdv);
  Errors e;
  e.o = rel(host(o), ro, e.unwritten);
  if (fp8) {  // P rounded to e5m2 (2 mantissa bits) before P @ V: relative to sum_j P_ij |V_j|
    double d2 = 0, m2 = 0;
    const std::vector<float> ho = host(o);
    for (size_t i = 0; i < ro.size(); ++i) d2 += (ho[i] - ro[i]) * (ho[i] - ro[i]), m2 += mag[i] * mag[i];
    e.o = std::sqrt(d2 / std::max(m2, 1e-300));
  }
  if (!fp8) {
    e.dq = rel(host(q.grad()), rdq, e.unwritten);
    e.dk = rel(host(k.grad()), rdk, e.unwritten);
    e.dv = rel(host(v.grad()), rdv, e.unwritten);
  }
  return e;
}

// ---- main -------------------------------------------------------------------------------------

int run_tutorial(const tutorial::Args& args) {
  const bool cpu = args.device.is_cpu();
  struct Case {
    int64_t Z, H, N, D;
    bool causal;
    DType dtype;
  };
  // Triton's test_op shapes on the GPU (1, 2, 1024, 64 causal); smaller ones on the CPU.
  std::vector<Case> cases = {{1, 2, 128, 64, true, DType::f16},  {1, 2, 256, 64, false, DType::f16},
                             {2, 1, 128, 128, true, DType::f16}, {1, 2, 128, 64, true, DType::bf16},
                             {1, 1, 256, 32, false, DType::f16}, {1, 2, 128, 64, false, DType::f8e5m2}};
  if (!cpu) {
    cases.push_back({1, 2, 1024, 64, true, DType::f16});
    cases.push_back({1, 2, 1024, 128, false, DType::bf16});
    cases.push_back({2, 3, 512, 128, true, DType::f8e5m2});
  }
  // DESIGN.md's bounds: f16 inputs about 1e-3 (P and dS are rounded to f16 before their dots, as in
  // Triton's kernels: 2e-3), bf16 1e-2. fp8 (e5m2): P is rounded to 2 mantissa bits before P @ V, so
  // O's error is measured against ||sum_j P_ij |V_j|||, within e5m2's unit roundoff 2^-3 (about
  // 0.07 expected; wrong values give about 1).
  auto tolerance_of = [](DType d) { return d == DType::f16 ? 2e-3 : d == DType::bf16 ? 1e-2 : 0.125; };
  bool ok = true;
  uint32_t seed = 0;
  for (const Case& c : cases) {
    Errors e = check_case(args, c.Z, c.H, c.N, c.D, c.causal, c.dtype, ++seed);
    const double tol = tolerance_of(c.dtype);
    const bool fp8 = c.dtype == DType::f8e5m2;
    const bool good = e.unwritten == 0 && e.o <= tol && (fp8 || (e.dq <= tol && e.dk <= tol && e.dv <= tol));
    std::printf("attention Z=%lld H=%lld N=%4lld D=%3lld %-6s %-7s on %s: rel err O %.2e", (long long)c.Z,
                (long long)c.H, (long long)c.N, (long long)c.D, tritium::dtype_name(c.dtype),
                c.causal ? "causal" : "full", args.device.str().c_str(), e.o);
    if (!fp8) std::printf(" dQ %.2e dK %.2e dV %.2e", e.dq, e.dk, e.dv);
    std::printf(" (bound %.0e)  %s", tol, good ? "OK" : "FAILED");
    if (e.unwritten) std::printf(" (%lld elements not written)", (long long)e.unwritten);
    std::printf("\n");
    ok = ok && good;
  }
  auto expect_error = [&](const char* what, const char* expected, auto&& fn) {
    try {
      fn();
      std::printf("%s: no error  FAILED\n", what);
      ok = false;
    } catch (const tritium::Error& err) {
      bool right = std::strstr(err.what(), expected) != nullptr;
      std::printf("%s: error \"%s\"  %s\n", what, err.what(), right ? "OK" : "FAILED (not the expected error)");
      ok = ok && right;
    }
  };
  expect_error("attention with head dim 48", "head dim must be", [&] {
    Tensor x = Tensor::empty({1, 1, 128, 48}, DType::f16, args.device);
    attention(x, x, x, false, 1.0f);
  });
  if (!ok) return 1;
  if (!args.bench) return 0;

  // ---- benchmark: Triton's perf_report (BATCH 4, 32 heads), TFLOP/s from do_bench's median.
  const int64_t BATCH = cpu ? 1 : 4, N_HEADS = cpu ? 2 : 32;
  const std::vector<int64_t> sizes =
      tutorial::bench_sizes(args, cpu ? std::vector<int64_t>{256, 512} : tutorial::powers_of_two(10, 14));
  std::printf("\n%5s %6s %4s %-5s %-7s %12s %12s  %s\n", "mode", "N_CTX", "D", "dtype", "causal", "ms", "TFLOP/s",
              "tuned config (fwd)");
  for (int64_t head_dim : {int64_t{64}, int64_t{128}})
    for (std::string mode : {"fwd", "bwd"})
      for (bool causal : {true, false}) {
        if (mode == "bwd" && !causal) continue;
        for (DType dtype : {DType::f16, DType::bf16}) {
          if (cpu && dtype == DType::bf16) continue;
          for (int64_t N_CTX : sizes) {
            auto randn = [&] {
              return tritium::ops::randn({BATCH, N_HEADS, N_CTX, head_dim}, tritium::ops::default_generator(), DType::f32,
                                         args.device)
                  .to(dtype);
            };
            Tensor q = randn(), k = randn(), v = randn();
            if (mode == "bwd") q.requires_grad_(), k.requires_grad_(), v.requires_grad_();
            const float sm_scale = 1.3f;
            double ms;
            if (mode == "fwd") {
              tritium::nn::NoGradGuard no_grad;
              ms = tritium::do_bench([&] { attention(q, k, v, causal, sm_scale); }, args.device).median_ms;
            } else {
              Tensor o = attention(q, k, v, causal, sm_scale);
              Tensor dout = randn();
              ms = tritium::do_bench([&] { o.backward(dout, /*retain_graph=*/true); }, args.device).median_ms;
            }
            double flops_per_matmul = 2.0 * double(BATCH * N_HEADS) * double(N_CTX) * double(N_CTX) * double(head_dim);
            double total_flops = 2 * flops_per_matmul;
            if (causal) total_flops *= 0.5;
            if (mode == "bwd") total_flops *= 2.5;  // 2.0(bwd) + 0.5(recompute)
            std::string best;
            if (mode == "fwd") {
              Tensor M = Tensor::empty({BATCH, N_HEADS, N_CTX}, DType::f32, args.device);
              auto grid = [&](const Meta& META) {
                return tritium::Grid(tritium::cdiv(N_CTX, META["BLOCK_M"]), BATCH * N_HEADS, 1);
              };
              Tensor o = Tensor::empty(q.shape(), q.dtype(), args.device);
              auto i32 = [](int64_t x) { return static_cast<int32_t>(x); };
              best = fwd_tuner(args.device)
                         .tune(grid, sm_scale, M, i32(BATCH), i32(N_HEADS), q, k, v, o, i32(N_CTX),
                               Meta{{"HEAD_DIM", static_cast<int>(head_dim)}, {"FP8_OUTPUT", 0}, {"STAGE", causal ? 3 : 1}})
                         .best_config()
                         .str();
            }
            std::printf("%5s %6lld %4lld %-5s %-7s %12.4f %12.1f  %s\n", mode.c_str(), (long long)N_CTX, (long long)head_dim,
                        tritium::dtype_name(dtype), causal ? "true" : "false", ms, total_flops * 1e-12 / (ms * 1e-3),
                        best.c_str());
            std::fflush(stdout);
          }
        }
      }
  return 0;
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, run_tutorial); }
