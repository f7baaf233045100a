// grpo_loss: Liger-Kernel's GRPO loss kernels (linkedin/Liger-Kernel
// src/liger_kernel/ops/grpo_loss.py, read at commit ead96b618e5c; BSD-2-Clause, as Liger-Kernel):
// _selective_log_softmax_kernel with fused_selective_log_softmax (the completion tokens'
// log-probabilities, masked-out tokens return early), _grpo_loss_fwd_kernel (one program a
// (sequence, token): online log-sum-exp over the vocabulary in BLOCK_N chunks, the token's
// log-probability, the per-token loss of each loss type - PPO clipping for
// grpo/dapo/bnpo/dr_grpo/luspo with INTELLECT-2's delta, CISPO, SAPO, VESPO - the vLLM
// importance-sampling ratio, the KL penalty with its optional bias correction; masked-out tokens
// return early), _grpo_loss_bwd_kernel (the gradient over the logits, masked-out tokens zeroed and
// returned early), the sequence-level pair _grpo_loss_fwd_kernel_seq / _grpo_loss_bwd_kernel_seq
// (one importance weight a sequence, computed by the wrapper), and GrpoLossFunction's forward and
// backward (_reduce_loss, the per-type gradient scaling, _compute_dapo_normalizer with one
// process, the last position's gradient zeroed).
//
// The wrappers' small [B, L] torch computations (the loss reductions, the metrics, the gradient
// scaling, the sequence-level weights and summed dloss) are Tritium ops on the logits' device, as
// the original's torch ops: forward and backward read nothing back and return device tensors.
// Deviations: the autograd plumbing is left out (forward and backward are two functions; the
// backward takes the loss's gradient as a device tensor).
// luspo's backward: the original's reduced dloss is [B, 1] (not multiplied by the [B, L] mask)
// and its kernel reads it with those strides (1, 1) as if [B, L], i.e. dloss[b + l], past the end
// for b + l >= B; here dloss is [B, L], which gives the loss's gradient.
// With delta < 1 + eps_high (outside TRL's recommended range) the original's gradient rule, kept
// here, is not the derivative of its loss (it is 0 for delta < coef_1 <= 1 + eps_high, A < 0,
// where the minimum is coef_1 * A); the check uses delta = 1.25.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autotune/do_bench.h"
#include "liger_utils.h"
#include "ops/bitwise.h"
#include "ops/ops.h"
#include "ops/unary_math.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

// Loss type constants for constexpr branching
constexpr int _LOSS_TYPE_GRPO = 0;
constexpr int _LOSS_TYPE_CISPO = 1;
constexpr int _LOSS_TYPE_SAPO = 2;
constexpr int _LOSS_TYPE_VESPO = 3;

int str_to_loss_type(const std::string& s) {
  if (s == "grpo" || s == "dapo" || s == "bnpo" || s == "dr_grpo" || s == "luspo") return _LOSS_TYPE_GRPO;
  if (s == "cispo") return _LOSS_TYPE_CISPO;
  if (s == "sapo") return _LOSS_TYPE_SAPO;
  if (s == "vespo") return _LOSS_TYPE_VESPO;
  tritium::fail("Unknown loss_type '{}'. Supported types: grpo, dapo, bnpo, dr_grpo, luspo, cispo, sapo, vespo", s);
}

auto _selective_log_softmax_kernel = tritium::kernel(
    "_selective_log_softmax_kernel",
    [](P LOGITS, P INPUT_IDS, P LOG_P, P MASK, double TEMPERATURE, tl::i32 stride_input_ids_b, int L, int N,
       int BLOCK_N) {
      auto off_b = tl::program_id(0).to(tl::int64);
      auto off_l = tl::program_id(1).to(tl::int64);

      LOGITS += off_b * (L + 1) * N + off_l * N;
      INPUT_IDS += off_b * stride_input_ids_b + off_l;
      LOG_P += off_b * L + off_l;

      if (!MASK.is_none()) {
        MASK += off_b * stride_input_ids_b + off_l;
        auto not_skip = tl::load(MASK);
        tl::if_(not_skip == 0, [&] { tl::return_(); });
      }

      tl::tensor m_i = tl::full({}, -INFINITY, tl::float32);
      tl::tensor l_i = tl::full({}, 0.0, tl::float32);
      for (auto start : tl::range(0, N, BLOCK_N)) {
        auto cols = start + tl::arange(0, BLOCK_N);
        auto logits = tl::load(LOGITS + cols, cols < N, -INFINITY).to(tl::float32) / TEMPERATURE;
        auto new_m_i = tl::maximum(m_i, tl::max(logits));
        auto alpha = tl::exp(m_i - new_m_i);
        l_i = l_i * alpha + tl::sum(tl::exp(logits - new_m_i));
        m_i = new_m_i;
      }
      auto lse = m_i + tl::log(l_i);

      auto ids = tl::load(INPUT_IDS);
      auto x = tl::load(LOGITS + ids).to(tl::float32) / TEMPERATURE;
      auto logp = x - lse;
      tl::store(LOG_P, logp);
    },
    {"LOGITS", "INPUT_IDS", "LOG_P", "MASK", "TEMPERATURE", "stride_input_ids_b", "L", "N", "BLOCK_N"});

// old_logp and ref_logp without gradients: input_ids and mask are [B, >= L] (their last L used).
Tensor fused_selective_log_softmax(const Tensor& logits, Tensor input_ids, double temperature = 0.9,
                                   Tensor mask = Tensor()) {
  const int64_t B = logits.size(0), L = logits.size(1) - 1, N = logits.size(2);
  input_ids = input_ids.slice(1, input_ids.size(1) - L, input_ids.size(1));
  if (mask.defined()) mask = mask.slice(1, mask.size(1) - L, mask.size(1));
  Tensor log_p = tritium::ops::zeros({B, L}, DType::f32, logits.device());
  _selective_log_softmax_kernel[{B, L}](logits, input_ids, log_p, mask, temperature, int32_t(input_ids.stride(0)),
                                        int(L), int(N), 2048, tritium::Options{.num_warps = 1, .num_stages = 4, .device = {}});
  return log_p;
}

// The per-token loss and its gradient share the loss-type branches; written once for each
// kernel as the original does.
auto _grpo_loss_fwd_kernel = tritium::kernel(
    "_grpo_loss_fwd_kernel",
    [](P LOGITS, P OLD_LOGP, P REF_LOGP, P INPUT_IDS, P COMPLETION_MASK, P ADVANTAGES, P VLLM_IS_RATIO,
       tl::i32 VLLM_IS_RATIO_STRIDE, P PHI_SEQ, P LOSS, P LSE, P KL, P IS_CLIPPED, double TEMPERATURE, double BETA,
       double EPS_LOW, double EPS_HIGH, int LOSS_TYPE, double SAPO_TEMP_POS, double SAPO_TEMP_NEG, double DELTA,
       bool USE_BIAS_CORRECTION_KL, int L, int N, int BLOCK_N) {
      auto off_b = tl::program_id(0).to(tl::int64);
      auto off_l = tl::program_id(1).to(tl::int64);

      if (!COMPLETION_MASK.is_none()) {
        COMPLETION_MASK += off_b * L + off_l;
        auto not_skip = tl::load(COMPLETION_MASK);
        tl::if_(not_skip == 0, [&] { tl::return_(); });
      }

      LOGITS += off_b * (L + 1) * N + off_l * N;
      INPUT_IDS += off_b * L + off_l;
      ADVANTAGES += off_b;
      LOSS += off_b * L + off_l;
      LSE += off_b * L + off_l;
      IS_CLIPPED += off_b * L + off_l;

      tl::tensor m_i = tl::full({}, -INFINITY, tl::float32);
      tl::tensor l_i = tl::full({}, 0.0, tl::float32);
      for (auto start : tl::range(0, N, BLOCK_N)) {
        auto cols = start + tl::arange(0, BLOCK_N);
        auto logits = tl::load(LOGITS + cols, cols < N, -INFINITY).to(tl::float32) / TEMPERATURE;
        auto new_m_i = tl::maximum(m_i, tl::max(logits));
        auto alpha = tl::exp(m_i - new_m_i);
        l_i = l_i * alpha + tl::sum(tl::exp(logits - new_m_i));
        m_i = new_m_i;
      }
      auto lse = m_i + tl::log(l_i);

      auto idx = tl::load(INPUT_IDS);
      auto x = tl::load(LOGITS + idx).to(tl::float32) / TEMPERATURE;
      auto logp = x - lse;
      tl::tensor old_logp;
      if (OLD_LOGP.is_none()) {
        old_logp = logp;
      } else {
        OLD_LOGP += off_b * L + off_l;
        old_logp = tl::load(OLD_LOGP).to(tl::float32);
      }
      auto coef_1 = tl::exp(logp - old_logp);
      auto advantage = tl::load(ADVANTAGES).to(tl::float32);

      tl::tensor per_token_loss, is_clipped;
      // Branch based on loss type
      if (LOSS_TYPE == 0) {  // GRPO/DAPO/BNPO/DR_GRPO: standard PPO clipping
        auto coef_2 = tl::clamp(coef_1, 1 - EPS_LOW, 1 + EPS_HIGH);
        auto is_low_clipped = (coef_1 < 1 - EPS_LOW) & (advantage < 0);
        auto is_high_clipped = (coef_1 > 1 + EPS_HIGH) & (advantage > 0);
        is_clipped = is_low_clipped | is_high_clipped;
        // Apply delta (two-sided clipping from INTELLECT-2) to coef_1
        if (DELTA != 0.0) coef_1 = tl::minimum(coef_1, DELTA);
        auto per_token_loss1 = coef_1 * advantage;
        auto per_token_loss2 = coef_2 * advantage;
        per_token_loss = -tl::minimum(per_token_loss1, per_token_loss2);
      } else if (LOSS_TYPE == 1) {  // CISPO: upper-bound only clipping, detached, multiply by logp
        auto coef_2 = tl::minimum(coef_1, EPS_HIGH);  // upper-bound only (EPS_HIGH is the raw bound for CISPO)
        per_token_loss = -coef_2 * advantage * logp;  // includes logp term
        is_clipped = (coef_1 > EPS_HIGH) & (advantage > 0);
      } else if (LOSS_TYPE == 2) {  // SAPO: soft adaptive policy optimization with sigmoid gating
        auto temperature = tl::where(advantage > 0, SAPO_TEMP_POS, SAPO_TEMP_NEG);
        auto sigmoid_input = temperature * (coef_1 - 1.0);
        auto sapo_coef = tl::sigmoid(sigmoid_input) * 4.0 / temperature;
        per_token_loss = -sapo_coef * advantage;
        is_clipped = tl::full({}, 0.0, tl::float32);  // SAPO has no clipping concept
      } else if (LOSS_TYPE == 3) {  // VESPO: detached gamma weighting phi(w) on per-token logp
        auto phi_seq = tl::load(PHI_SEQ + off_b).to(tl::float32);
        per_token_loss = -phi_seq * advantage * logp;
        is_clipped = tl::full({}, 0.0, tl::float32);  // VESPO has no clipping concept
      }

      // Apply vLLM importance sampling correction BEFORE adding KL penalty (VESPO folds it into phi_seq)
      if (!VLLM_IS_RATIO.is_none() && LOSS_TYPE != 3) {
        // Use modulo to support both (B, L) per-token and (B, 1) per-sequence shapes
        auto vllm_is_ratio = tl::load(VLLM_IS_RATIO + off_b * VLLM_IS_RATIO_STRIDE + off_l % VLLM_IS_RATIO_STRIDE).to(tl::float32);
        per_token_loss = per_token_loss * vllm_is_ratio;
      }

      if (BETA != 0.0) {
        REF_LOGP += off_b * L + off_l;
        KL += off_b * L + off_l;
        auto ref_logp = tl::load(REF_LOGP).to(tl::float32);
        auto kl = tl::exp(ref_logp - logp) - (ref_logp - logp) - 1;
        // Importance-sampling-corrected KL (DeepSeek-V3.2): kl *= coef_1
        if (USE_BIAS_CORRECTION_KL) kl = kl * tl::exp(logp - old_logp);
        per_token_loss += BETA * kl;
        tl::store(KL, kl);
      }

      tl::store(LOSS, per_token_loss);
      tl::store(LSE, lse);
      tl::store(IS_CLIPPED, is_clipped);
    },
    {"LOGITS", "OLD_LOGP", "REF_LOGP", "INPUT_IDS", "COMPLETION_MASK", "ADVANTAGES", "VLLM_IS_RATIO",
     "VLLM_IS_RATIO_STRIDE", "PHI_SEQ", "LOSS", "LSE", "KL", "IS_CLIPPED", "TEMPERATURE", "BETA", "EPS_LOW", "EPS_HIGH",
     "LOSS_TYPE", "SAPO_TEMP_POS", "SAPO_TEMP_NEG", "DELTA", "USE_BIAS_CORRECTION_KL", "L", "N", "BLOCK_N"});

auto _grpo_loss_bwd_kernel = tritium::kernel(
    "_grpo_loss_bwd_kernel",
    [](P DLOSS, P DLOGITS, P LOGITS, P OLD_LOGP, P REF_LOGP, P INPUT_IDS, P ADVANTAGES, P COMPLETION_MASK, P LSE,
       P VLLM_IS_RATIO, tl::i32 VLLM_IS_RATIO_STRIDE, P PHI_SEQ, double TEMPERATURE, double BETA, double EPS_LOW,
       double EPS_HIGH, int LOSS_TYPE, double SAPO_TEMP_POS, double SAPO_TEMP_NEG, double DELTA,
       bool USE_BIAS_CORRECTION_KL, tl::i32 loss_stride0, tl::i32 loss_stride1, int L, int N, int BLOCK_N) {
      auto off_b = tl::program_id(0).to(tl::int64);
      auto off_l = tl::program_id(1).to(tl::int64);

      DLOGITS += off_b * (L + 1) * N + off_l * N;
      if (!COMPLETION_MASK.is_none()) {
        COMPLETION_MASK += off_b * L + off_l;
        auto not_skip = tl::load(COMPLETION_MASK);
        tl::if_(not_skip == 0, [&] {
          for (auto start : tl::range(0, N, BLOCK_N)) {
            auto cols = tl::arange(0, BLOCK_N) + start;
            tl::store(DLOGITS + cols, 0.0, cols < N);
          }
          tl::return_();
        });
      }

      LOGITS += off_b * (L + 1) * N + off_l * N;
      DLOSS += off_b * loss_stride0 + off_l * loss_stride1;
      INPUT_IDS += off_b * L + off_l;
      ADVANTAGES += off_b;
      LSE += off_b * L + off_l;

      auto dloss = tl::load(DLOSS).to(tl::float32);
      auto lse = tl::load(LSE).to(tl::float32);

      auto idx = tl::load(INPUT_IDS);
      auto x = tl::load(LOGITS + idx).to(tl::float32) / TEMPERATURE;
      auto logp = x - lse;
      tl::tensor old_logp;
      if (OLD_LOGP.is_none()) {
        old_logp = logp;
      } else {
        OLD_LOGP += off_b * L + off_l;
        old_logp = tl::load(OLD_LOGP).to(tl::float32);
      }
      auto coef_1 = tl::exp(logp - old_logp);
      auto advantage = tl::load(ADVANTAGES).to(tl::float32);

      tl::tensor dlogp;
      // Branch based on loss type for gradient computation
      if (LOSS_TYPE == 0) {  // GRPO/DAPO/BNPO/DR_GRPO: standard PPO clipping
        auto coef_2 = tl::clamp(coef_1, 1 - EPS_LOW, 1 + EPS_HIGH);
        tl::tensor coef_1_for_loss = DELTA != 0.0 ? tl::minimum(coef_1, DELTA) : coef_1;
        auto per_token_loss1 = coef_1_for_loss * advantage;
        auto per_token_loss2 = coef_2 * advantage;
        auto mask = per_token_loss2 >= per_token_loss1;
        // Gradient uses original coef_1; zero when delta-clamped (constant -> no gradient)
        dlogp = -coef_1 * advantage * mask;
        if (DELTA != 0.0) dlogp = dlogp * (coef_1 <= DELTA);
      } else if (LOSS_TYPE == 1) {  // CISPO: coef_2 is DETACHED, so gradient only flows through logp
        auto coef_2 = tl::minimum(coef_1, EPS_HIGH);
        dlogp = -coef_2 * advantage;
      } else if (LOSS_TYPE == 2) {  // SAPO: d(sapo_coef)/d(coef_1) = 4 * sigmoid * (1 - sigmoid)
        auto temperature = tl::where(advantage > 0, SAPO_TEMP_POS, SAPO_TEMP_NEG);
        auto sigmoid_input = temperature * (coef_1 - 1.0);
        auto sigmoid_val = tl::sigmoid(sigmoid_input);
        auto d_sapo_d_coef1 = 4.0 * sigmoid_val * (1.0 - sigmoid_val);
        dlogp = -advantage * d_sapo_d_coef1 * coef_1;
      } else if (LOSS_TYPE == 3) {  // VESPO: phi_seq is detached
        auto phi_seq = tl::load(PHI_SEQ + off_b).to(tl::float32);
        dlogp = -phi_seq * advantage;
      }

      // Apply vLLM IS ratio to PPO gradient (before KL gradient)
      if (!VLLM_IS_RATIO.is_none() && LOSS_TYPE != 3) {
        auto vllm_is_ratio = tl::load(VLLM_IS_RATIO + off_b * VLLM_IS_RATIO_STRIDE + off_l % VLLM_IS_RATIO_STRIDE).to(tl::float32);
        dlogp = dlogp * vllm_is_ratio;
      }

      if (BETA != 0.0) {
        REF_LOGP += off_b * L + off_l;
        auto ref_logp = tl::load(REF_LOGP).to(tl::float32);
        if (USE_BIAS_CORRECTION_KL)  // d(kl * coef_1)/d(logp) = coef_1 * (logp - ref_logp)
          dlogp += BETA * coef_1 * (logp - ref_logp);
        else
          dlogp += BETA * (1 - tl::exp(ref_logp - logp));
      }

      dlogp = dlogp * dloss / TEMPERATURE;
      tl::debug_barrier();
      for (auto start_n : tl::range(0, N, BLOCK_N)) {
        auto cols = start_n + tl::arange(0, BLOCK_N);
        auto logits = tl::load(LOGITS + cols, cols < N, -INFINITY).to(tl::float32) / TEMPERATURE;
        auto probs = tl::exp(logits - lse);
        auto dlogits = tl::where(cols == idx, 1 - probs, -probs) * dlogp;
        tl::store(DLOGITS + cols, dlogits, cols < N);
      }
    },
    {"DLOSS", "DLOGITS", "LOGITS", "OLD_LOGP", "REF_LOGP", "INPUT_IDS", "ADVANTAGES", "COMPLETION_MASK", "LSE",
     "VLLM_IS_RATIO", "VLLM_IS_RATIO_STRIDE", "PHI_SEQ", "TEMPERATURE", "BETA", "EPS_LOW", "EPS_HIGH", "LOSS_TYPE",
     "SAPO_TEMP_POS", "SAPO_TEMP_NEG", "DELTA", "USE_BIAS_CORRECTION_KL", "loss_stride0", "loss_stride1", "L", "N",
     "BLOCK_N"});

// Sequence-level importance sampling: the wrapper computes each sequence's coef_1 (the exp of the
// mean log-ratio over its tokens), coef_2 and clipping; the kernel applies them to every token.
auto _grpo_loss_fwd_kernel_seq = tritium::kernel(
    "_grpo_loss_fwd_kernel_seq",
    [](P LOGITS, P OLD_LOGP, P REF_LOGP, P INPUT_IDS, P COMPLETION_MASK, P ADVANTAGES,
       P COEF_1,          // Pre-computed sequence-level importance weight, post delta-clamp (B,)
       P COEF_1_RAW,      // Pre-computed sequence-level importance weight, pre delta-clamp (B,)
       P COEF_2,          // Pre-computed clipped coef (B,)
       P IS_CLIPPED_SEQ,  // Pre-computed clipping indicator (B,)
       P VLLM_IS_RATIO,   // vLLM importance sampling ratio (B, L) or (B, 1) or None
       tl::i32 VLLM_IS_RATIO_STRIDE, P LOSS, P LSE, P KL, P IS_CLIPPED, double TEMPERATURE, double BETA,
       bool USE_BIAS_CORRECTION_KL, int L, int N, int BLOCK_N) {
      (void)OLD_LOGP;  // unused, as in the original
      auto off_b = tl::program_id(0).to(tl::int64);
      auto off_l = tl::program_id(1).to(tl::int64);

      if (!COMPLETION_MASK.is_none()) {
        COMPLETION_MASK += off_b * L + off_l;
        auto not_skip = tl::load(COMPLETION_MASK);
        tl::if_(not_skip == 0, [&] { tl::return_(); });
      }

      LOGITS += off_b * (L + 1) * N + off_l * N;
      INPUT_IDS += off_b * L + off_l;
      ADVANTAGES += off_b;
      COEF_1 += off_b;
      COEF_1_RAW += off_b;
      COEF_2 += off_b;
      IS_CLIPPED_SEQ += off_b;
      LOSS += off_b * L + off_l;
      LSE += off_b * L + off_l;
      IS_CLIPPED += off_b * L + off_l;

      // Compute log softmax
      tl::tensor m_i = tl::full({}, -INFINITY, tl::float32);
      tl::tensor l_i = tl::full({}, 0.0, tl::float32);
      for (auto start : tl::range(0, N, BLOCK_N)) {
        auto cols = start + tl::arange(0, BLOCK_N);
        auto logits = tl::load(LOGITS + cols, cols < N, -INFINITY).to(tl::float32) / TEMPERATURE;
        auto new_m_i = tl::maximum(m_i, tl::max(logits));
        auto alpha = tl::exp(m_i - new_m_i);
        l_i = l_i * alpha + tl::sum(tl::exp(logits - new_m_i));
        m_i = new_m_i;
      }
      auto lse = m_i + tl::log(l_i);

      auto idx = tl::load(INPUT_IDS);
      auto x = tl::load(LOGITS + idx).to(tl::float32) / TEMPERATURE;
      auto logp = x - lse;

      // Load pre-computed sequence-level coefficients
      auto coef_1 = tl::load(COEF_1).to(tl::float32);
      auto coef_2 = tl::load(COEF_2).to(tl::float32);
      auto is_clipped_seq = tl::load(IS_CLIPPED_SEQ);

      auto advantage = tl::load(ADVANTAGES).to(tl::float32);
      auto per_token_loss1 = coef_1 * advantage;
      auto per_token_loss2 = coef_2 * advantage;
      auto per_token_loss = -tl::minimum(per_token_loss1, per_token_loss2);

      // Apply vLLM importance sampling correction BEFORE adding KL
      if (!VLLM_IS_RATIO.is_none()) {
        auto vllm_is_ratio = tl::load(VLLM_IS_RATIO + off_b * VLLM_IS_RATIO_STRIDE + off_l % VLLM_IS_RATIO_STRIDE).to(tl::float32);
        per_token_loss = per_token_loss * vllm_is_ratio;
      }

      if (BETA != 0.0) {
        REF_LOGP += off_b * L + off_l;
        KL += off_b * L + off_l;
        auto ref_logp = tl::load(REF_LOGP).to(tl::float32);
        auto kl = tl::exp(ref_logp - logp) - (ref_logp - logp) - 1;
        // Importance-sampling-corrected KL (DeepSeek-V3.2): kl *= the pre-clamp coef_1 (as TRL)
        if (USE_BIAS_CORRECTION_KL) kl = kl * tl::load(COEF_1_RAW).to(tl::float32);
        per_token_loss += BETA * kl;
        tl::store(KL, kl);
      }

      tl::store(LOSS, per_token_loss);
      tl::store(LSE, lse);
      tl::store(IS_CLIPPED, is_clipped_seq);  // Same for all tokens in sequence
    },
    {"LOGITS", "OLD_LOGP", "REF_LOGP", "INPUT_IDS", "COMPLETION_MASK", "ADVANTAGES", "COEF_1", "COEF_1_RAW", "COEF_2",
     "IS_CLIPPED_SEQ", "VLLM_IS_RATIO", "VLLM_IS_RATIO_STRIDE", "LOSS", "LSE", "KL", "IS_CLIPPED", "TEMPERATURE", "BETA",
     "USE_BIAS_CORRECTION_KL", "L", "N", "BLOCK_N"});

auto _grpo_loss_bwd_kernel_seq = tritium::kernel(
    "_grpo_loss_bwd_kernel_seq",
    [](P DLOSS, P DLOSS_SUM, P DLOGITS, P LOGITS, P OLD_LOGP, P REF_LOGP, P INPUT_IDS, P ADVANTAGES,
       P COMPLETION_MASK, P LSE,
       P COEF_1,   // Pre-computed sequence-level importance weight (B,)
       P SEQ_LEN,  // Number of valid tokens per sequence (B,)
       double TEMPERATURE, double BETA, bool USE_BIAS_CORRECTION_KL, double EPS_LOW, double EPS_HIGH, double DELTA,
       tl::i32 loss_stride0, tl::i32 loss_stride1, int L, int N, int BLOCK_N) {
      (void)OLD_LOGP;  // unused, as in the original
      auto off_b = tl::program_id(0).to(tl::int64);
      auto off_l = tl::program_id(1).to(tl::int64);

      DLOGITS += off_b * (L + 1) * N + off_l * N;
      if (!COMPLETION_MASK.is_none()) {
        COMPLETION_MASK += off_b * L + off_l;
        auto not_skip = tl::load(COMPLETION_MASK);
        tl::if_(not_skip == 0, [&] {
          for (auto start : tl::range(0, N, BLOCK_N)) {
            auto cols = tl::arange(0, BLOCK_N) + start;
            tl::store(DLOGITS + cols, 0.0, cols < N);
          }
          tl::return_();
        });
      }

      LOGITS += off_b * (L + 1) * N + off_l * N;
      DLOSS += off_b * loss_stride0 + off_l * loss_stride1;
      DLOSS_SUM += off_b;
      INPUT_IDS += off_b * L + off_l;
      ADVANTAGES += off_b;
      LSE += off_b * L + off_l;
      COEF_1 += off_b;
      SEQ_LEN += off_b;

      auto dloss = tl::load(DLOSS).to(tl::float32);
      auto dloss_sum = tl::load(DLOSS_SUM).to(tl::float32);
      auto lse = tl::load(LSE).to(tl::float32);
      auto coef_1 = tl::load(COEF_1).to(tl::float32);
      auto seq_len = tl::load(SEQ_LEN).to(tl::float32);

      auto idx = tl::load(INPUT_IDS);
      auto x = tl::load(LOGITS + idx).to(tl::float32) / TEMPERATURE;
      auto logp = x - lse;

      auto advantage = tl::load(ADVANTAGES).to(tl::float32);
      auto coef_2 = tl::clamp(coef_1, 1 - EPS_LOW, 1 + EPS_HIGH);
      tl::tensor coef_1_for_loss = DELTA != 0.0 ? tl::minimum(coef_1, DELTA) : coef_1;
      auto per_token_loss1 = coef_1_for_loss * advantage;
      auto per_token_loss2 = coef_2 * advantage;
      auto is_unclipped = per_token_loss2 >= per_token_loss1;

      // For sequence-level: gradient flows through mean, so scale by coef_1/seq_len
      auto dlogp = -coef_1 * advantage / seq_len * is_unclipped * dloss_sum;
      if (DELTA != 0.0) dlogp = dlogp * (coef_1 <= DELTA);

      if (BETA != 0.0) {
        REF_LOGP += off_b * L + off_l;
        auto ref_logp = tl::load(REF_LOGP).to(tl::float32);
        if (USE_BIAS_CORRECTION_KL)  // d(kl * coef_1)/d(logp) ~ coef_1 * (logp - ref_logp), coef_1 detached
          dlogp += BETA * coef_1 * (logp - ref_logp) * dloss;
        else
          dlogp += BETA * (1 - tl::exp(ref_logp - logp)) * dloss;
      }

      dlogp = dlogp / TEMPERATURE;
      tl::debug_barrier();
      for (auto start_n : tl::range(0, N, BLOCK_N)) {
        auto cols = start_n + tl::arange(0, BLOCK_N);
        auto logits = tl::load(LOGITS + cols, cols < N, -INFINITY).to(tl::float32) / TEMPERATURE;
        auto probs = tl::exp(logits - lse);
        auto dlogits = tl::where(cols == idx, 1 - probs, -probs) * dlogp;
        tl::store(DLOGITS + cols, dlogits, cols < N);
      }
    },
    {"DLOSS", "DLOSS_SUM", "DLOGITS", "LOGITS", "OLD_LOGP", "REF_LOGP", "INPUT_IDS", "ADVANTAGES", "COMPLETION_MASK",
     "LSE", "COEF_1", "SEQ_LEN", "TEMPERATURE", "BETA", "USE_BIAS_CORRECTION_KL", "EPS_LOW", "EPS_HIGH", "DELTA",
     "loss_stride0", "loss_stride1", "L", "N", "BLOCK_N"});


bool g_poison = false;  // while checking: dlogits (torch.empty_like) starts as NaN

struct Params {
  double temperature = 1.0, beta = 0.0, eps_low = 0.2, eps_high = 0.2;
  bool inplace = false;
  std::string loss_type = "grpo";
  std::optional<int64_t> max_completion_length;
  bool reduce = true;
  double sapo_temperature_pos = 1.0, sapo_temperature_neg = 1.05;
  std::optional<double> delta;
  bool use_bias_correction_kl = false;
  std::optional<double> num_items_in_batch;
  std::string importance_sampling_level = "token";
};

struct Inputs {
  Tensor logits, old_logp, ref_logp, completion_ids, advantages, completion_mask, vllm_is_ratio, phi_seq;
};

struct Saved {
  Tensor lse;
  Tensor mask;  // [B, L] f32: the wrapper's float mask
  int64_t B = 0, L = 0;
  int32_t vllm_is_ratio_stride = 0;
  int loss_type_int = 0;
  Tensor coef_1, seq_lens;  // sequence level: the pre-clamp coef_1 and the token counts, [B] f32
  Tensor vllm_is_ratio, phi_seq;  // as the kernels read them (contiguous), or undefined
};

// Device tensors, as the original returns them: reduce: the 0-dim loss, kl_mean (undefined when
// beta is 0) and clip_ratio; not reduce: the [B, L] masked loss, kl (or undefined) and is_clipped.
struct Outputs {
  Tensor loss, kl, clip;
};

namespace ops = tritium::ops;

// _compute_dapo_normalizer with one process (world_size 1, no all-reduce): num_items_in_batch, or
// the mask's sum, at least 1; a 0-dim f32 tensor on the mask's device.
Tensor _compute_dapo_normalizer(const Tensor& completion_mask, std::optional<double> num_items_in_batch) {
  if (num_items_in_batch)
    return ops::clamp_min(ops::full({}, *num_items_in_batch, DType::f32, completion_mask.device()), 1.0);
  return ops::clamp_min(ops::sum(ops::to_dtype(completion_mask, DType::f32)), 1.0);
}

// _reduce_loss: the loss reduction of each loss type, a 0-dim device tensor.
Tensor _reduce_loss(const Tensor& per_token_loss, const Tensor& mask, const std::string& loss_type,
                    std::optional<int64_t> max_completion_length, int64_t B, int64_t L,
                    std::optional<double> num_items_in_batch) {
  if (loss_type == "grpo" || loss_type == "sapo")
    return ops::mean(ops::div(ops::sum(ops::mul(per_token_loss, mask), {-1}), ops::clamp_min(ops::sum(mask, {-1}), 1.0)));
  if (loss_type == "bnpo") return ops::div(ops::sum(ops::mul(per_token_loss, mask)), ops::clamp_min(ops::sum(mask), 1.0));
  if (loss_type == "dr_grpo") {
    const int64_t max_len = max_completion_length.value_or(L);
    return ops::div(ops::sum(ops::mul(per_token_loss, mask)), double(B * max_len));
  }
  if (loss_type == "dapo" || loss_type == "cispo" || loss_type == "vespo")
    return ops::div(ops::sum(ops::mul(per_token_loss, mask)), _compute_dapo_normalizer(mask, num_items_in_batch));
  if (loss_type == "luspo") return ops::mean(ops::mul(per_token_loss, ops::sum(mask, {-1}, true)));
  tritium::fail("Unknown loss_type: {}. Expected one of: grpo, bnpo, dr_grpo, dapo, cispo, sapo, luspo, vespo", loss_type);
}

// GrpoLossFunction.forward: kernels and device ops only; nothing is read back.
Outputs grpo_forward(const Inputs& in, const Params& p, Saved& saved) {
  if (p.importance_sampling_level != "token" && p.importance_sampling_level != "sequence")
    tritium::fail("importance_sampling_level must be 'token' or 'sequence', got {}", p.importance_sampling_level);
  const int loss_type_int = str_to_loss_type(p.loss_type);
  if (p.delta && (p.loss_type == "cispo" || p.loss_type == "sapo" || p.loss_type == "vespo"))
    tritium::fail("delta (two-sided clipping) is not supported for loss_type='{}'.", p.loss_type);
  const double delta_val = p.delta.value_or(0.0);
  if (p.importance_sampling_level == "sequence" && (p.loss_type == "cispo" || p.loss_type == "sapo" || p.loss_type == "vespo"))
    tritium::fail("Sequence-level importance sampling is not supported for loss_type='{}'. Use importance_sampling_level='token' "
                  "instead.",
                  p.loss_type);
  if (p.loss_type == "sapo" && p.sapo_temperature_pos <= 0)
    tritium::fail("sapo_temperature_pos must be positive, got {}", p.sapo_temperature_pos);
  if (p.loss_type == "sapo" && p.sapo_temperature_neg <= 0)
    tritium::fail("sapo_temperature_neg must be positive, got {}", p.sapo_temperature_neg);
  const int64_t B = in.logits.size(0), L = in.logits.size(1) - 1, N = in.logits.size(2);
  const tritium::Device device = in.logits.device();

  // VESPO requires phi_seq pre-computed by the caller (uses get_gamma_weights).
  Tensor phi_seq;
  if (p.loss_type == "vespo") {
    if (!in.phi_seq.defined()) tritium::fail("loss_type='vespo' requires phi_seq pre-computed (use the triton_grpo_loss wrapper).");
    phi_seq = ops::contiguous(in.phi_seq.reshape({B}));
  }

  Tensor mask = in.completion_mask.defined() ? ops::to_dtype(in.completion_mask, DType::f32)
                                             : ops::ones({B, L}, DType::f32, device);

  // Handle vLLM IS ratio
  Tensor vllm_is_ratio;
  int32_t vllm_is_ratio_stride = int32_t(L);  // default to per-token (unused when ptr is None)
  if (in.vllm_is_ratio.defined()) {
    vllm_is_ratio = ops::contiguous(in.vllm_is_ratio);
    vllm_is_ratio_stride = vllm_is_ratio.dim() > 1 ? int32_t(vllm_is_ratio.size(1)) : 1;
  }

  // Allocate outputs
  Tensor loss = ops::zeros({B, L}, DType::f32, device);
  Tensor lse = ops::zeros_like(loss);
  Tensor is_clipped = ops::zeros_like(loss);
  Tensor kl = p.beta != 0.0 ? ops::zeros_like(loss) : Tensor();

  saved = {lse, mask, B, L, vllm_is_ratio_stride, loss_type_int, Tensor(), Tensor(), vllm_is_ratio, phi_seq};
  if (p.importance_sampling_level == "sequence") {
    // Step 1: Get per-token log probs using the selective log-softmax kernel
    Tensor per_token_logps = fused_selective_log_softmax(in.logits, in.completion_ids, p.temperature, in.completion_mask);
    // Step 2: Compute sequence-level importance weights
    Tensor log_ratio = in.old_logp.defined() ? ops::sub(per_token_logps, in.old_logp) : ops::zeros_like(per_token_logps);
    Tensor seq_lens = ops::clamp_min(ops::sum(mask, {-1}), 1.0);                         // (B,)
    Tensor seq_log_importance = ops::div(ops::sum(ops::mul(log_ratio, mask), {-1}), seq_lens);  // (B,)
    Tensor coef_1 = ops::exp(seq_log_importance);                                       // (B,)
    Tensor coef_2 = ops::clamp(coef_1, 1 - p.eps_low, 1 + p.eps_high);                  // (B,)
    // Compute is_clipped at sequence level (using original coef_1)
    Tensor is_clipped_seq = ops::logical_or(
        ops::logical_and(ops::lt(coef_1, 1 - p.eps_low), ops::lt(in.advantages, 0)),
        ops::logical_and(ops::gt(coef_1, 1 + p.eps_high), ops::gt(in.advantages, 0)));
    is_clipped_seq = ops::to_dtype(is_clipped_seq, DType::f32);  // (B,)
    // Apply delta clamp for loss computation (keep original coef_1 for backward)
    Tensor coef_1_for_loss = p.delta ? ops::clamp_max(coef_1, *p.delta) : coef_1;
    // Step 3: Run the kernel with pre-computed coefficients
    _grpo_loss_fwd_kernel_seq[{B, L}](in.logits, in.old_logp, in.ref_logp, in.completion_ids, in.completion_mask,
                                      in.advantages, coef_1_for_loss, coef_1, coef_2, is_clipped_seq, vllm_is_ratio,
                                      vllm_is_ratio_stride, loss, lse, kl, is_clipped, p.temperature, p.beta,
                                      p.use_bias_correction_kl, int(L), int(N), 2048,
                                      tritium::Options{.num_warps = 1, .num_stages = 2, .device = {}});
    saved.coef_1 = coef_1, saved.seq_lens = seq_lens;
  } else {
    // Token-level: one kernel with LOSS_TYPE branching
    _grpo_loss_fwd_kernel[{B, L}](in.logits, in.old_logp, in.ref_logp, in.completion_ids, in.completion_mask, in.advantages,
                                  vllm_is_ratio, vllm_is_ratio_stride, phi_seq, loss, lse, kl, is_clipped, p.temperature,
                                  p.beta, p.eps_low, p.eps_high, loss_type_int, p.sapo_temperature_pos,
                                  p.sapo_temperature_neg, delta_val, p.use_bias_correction_kl, int(L), int(N), 2048,
                                  tritium::Options{.num_warps = 1, .num_stages = 2, .device = {}});
  }

  // Compute metrics before reduction
  Tensor mask_sum = ops::clamp_min(ops::sum(mask), 1.0);
  Tensor kl_mean = kl.defined() ? ops::div(ops::sum(ops::mul(kl, mask)), mask_sum) : Tensor();
  Tensor clip_ratio = ops::div(ops::sum(ops::mul(is_clipped, mask)), mask_sum);

  if (!p.reduce) return {ops::mul(loss, mask), kl.defined() ? ops::mul(kl, mask) : Tensor(), ops::mul(is_clipped, mask)};
  return {_reduce_loss(loss, mask, p.loss_type, p.max_completion_length, B, L, p.num_items_in_batch), kl_mean, clip_ratio};
}

// GrpoLossFunction.backward: dloss_input is the loss's gradient on the device (0-dim when
// reduced, [B, L] otherwise). Returns dlogits [B, L + 1, N]; nothing is read back.
Tensor grpo_backward(const Inputs& in, const Params& p, const Saved& s, const Tensor& dloss_input) {
  const int64_t B = s.B, L = s.L, N = in.logits.size(2);
  const Tensor& mask = s.mask;
  // Compute per-token gradient scaling based on loss_type
  const std::string& lt = p.loss_type;
  Tensor dloss;
  if (!p.reduce) {
    dloss = dloss_input;
  } else if (lt == "grpo" || lt == "sapo") {
    Tensor seq_lens_bwd = ops::clamp_min(ops::sum(mask, {-1}, true), 1.0);
    dloss = ops::div(ops::mul(dloss_input, mask), ops::mul(seq_lens_bwd, double(B)));
  } else if (lt == "bnpo") {
    dloss = ops::div(ops::mul(dloss_input, mask), ops::clamp_min(ops::sum(mask), 1.0));
  } else if (lt == "dr_grpo") {
    const int64_t max_len = p.max_completion_length.value_or(L);
    dloss = ops::div(ops::mul(dloss_input, mask), double(B * max_len));
  } else if (lt == "dapo" || lt == "cispo" || lt == "vespo") {
    dloss = ops::div(ops::mul(dloss_input, mask), _compute_dapo_normalizer(mask, p.num_items_in_batch));
  } else if (lt == "luspo") {
    // loss = mean(per_token_loss * seq_lens), mean divides by B*L. [B, 1]: read below through a
    // [B, L] view (the original passes the [B, 1] tensor's strides, see the header).
    Tensor seq_lens_bwd = ops::clamp_min(ops::sum(mask, {-1}, true), 1.0);
    dloss = ops::div(ops::mul(dloss_input, seq_lens_bwd), double(B * L)).expand({B, L});
  } else {
    tritium::fail("Unknown loss_type: {}", lt);
  }

  Tensor dlogits = p.inplace ? in.logits
                             : g_poison ? ops::full(in.logits.shape(), NAN, in.logits.dtype(), in.logits.device())
                                        : Tensor::empty(in.logits.shape(), in.logits.dtype(), in.logits.device());
  if (p.importance_sampling_level == "sequence") {
    Tensor dloss_sum;
    if (!s.vllm_is_ratio.defined()) {
      dloss_sum = ops::contiguous(ops::sum(dloss, {-1}));
    } else {
      Tensor ratio = s.vllm_is_ratio.dim() == 1 ? s.vllm_is_ratio.unsqueeze(-1) : s.vllm_is_ratio;
      dloss_sum = ops::contiguous(ops::sum(ops::mul(dloss, ratio), {-1}));
    }
    _grpo_loss_bwd_kernel_seq[{B, L}](dloss, dloss_sum, dlogits, in.logits, in.old_logp, in.ref_logp, in.completion_ids,
                                      in.advantages, in.completion_mask, s.lse, s.coef_1, s.seq_lens, p.temperature, p.beta,
                                      p.use_bias_correction_kl, p.eps_low, p.eps_high, p.delta.value_or(0.0),
                                      int32_t(dloss.stride(0)), int32_t(dloss.stride(1)), int(L), int(N), 4096,
                                      tritium::Options{.num_warps = 16, .num_stages = 1, .device = {}});
  } else {
    _grpo_loss_bwd_kernel[{B, L}](dloss, dlogits, in.logits, in.old_logp, in.ref_logp, in.completion_ids, in.advantages,
                                  in.completion_mask, s.lse, s.vllm_is_ratio, s.vllm_is_ratio_stride, s.phi_seq,
                                  p.temperature, p.beta, p.eps_low, p.eps_high, s.loss_type_int, p.sapo_temperature_pos,
                                  p.sapo_temperature_neg, p.delta.value_or(0.0), p.use_bias_correction_kl,
                                  int32_t(dloss.stride(0)), int32_t(dloss.stride(1)), int(L), int(N), 4096,
                                  tritium::Options{.num_warps = 16, .num_stages = 1, .device = {}});
  }
  Tensor last = dlogits.select(1, L);  // dlogits[:, -1, :] = 0
  ops::fill_(last, 0.0);
  return dlogits;
}

// ---- check ------------------------------------------------------------------------------------

// float64 _reduce_loss on the host, from the loss definitions (the reference of the check).
double reduce_loss_reference(const std::vector<double>& loss, const std::vector<double>& mask, const std::string& loss_type,
                             std::optional<int64_t> max_completion_length, int64_t B, int64_t L,
                             std::optional<double> num_items) {
  double total = 0, msum = 0;
  for (size_t i = 0; i < loss.size(); ++i) total += loss[i] * mask[i], msum += mask[i];
  if (loss_type == "grpo" || loss_type == "sapo") {
    double mean = 0;
    for (int64_t b = 0; b < B; ++b) {
      double s = 0, m = 0;
      for (int64_t l = 0; l < L; ++l) s += loss[size_t(b * L + l)] * mask[size_t(b * L + l)], m += mask[size_t(b * L + l)];
      mean += s / std::max(m, 1.0);
    }
    return mean / double(B);
  }
  if (loss_type == "bnpo") return total / std::max(msum, 1.0);
  if (loss_type == "dr_grpo") return total / double(B * max_completion_length.value_or(L));
  if (loss_type == "dapo" || loss_type == "cispo" || loss_type == "vespo") return total / std::max(num_items.value_or(msum), 1.0);
  double s = 0;  // luspo
  for (int64_t b = 0; b < B; ++b) {
    double m = 0;
    for (int64_t l = 0; l < L; ++l) m += mask[size_t(b * L + l)];
    for (int64_t l = 0; l < L; ++l) s += loss[size_t(b * L + l)] * m;
  }
  return s / double(B * L);
}

struct Case {
  int64_t B, L, N;
  DType dtype;
  Params p;
  bool old_logp, mask, vllm_per_token, vllm_per_seq, phi;
};

// float64 per-token loss, KL, clipping and d(loss)/d(logp) by the loss definitions.
struct TokenRef {
  double logp, loss, kl, clipped, dlogp;
  double dlogp_seq = 0;  // sequence level: the part of dlogp taken by the sequence's summed dloss
};

TokenRef token_reference(const Params& p, double logp, std::optional<double> old, double adv, double ratio, double ref,
                         double phi) {
  const double c1 = std::exp(logp - old.value_or(logp));
  TokenRef t{logp, 0, 0, 0, 0};
  const std::string& lt = p.loss_type;
  if (lt == "cispo") {
    const double c2 = std::min(c1, p.eps_high);
    t.loss = -c2 * adv * logp, t.dlogp = -c2 * adv, t.clipped = c1 > p.eps_high && adv > 0;
  } else if (lt == "sapo") {
    const double tau = adv > 0 ? p.sapo_temperature_pos : p.sapo_temperature_neg;
    const double s = 1 / (1 + std::exp(-tau * (c1 - 1)));
    t.loss = -s * 4 / tau * adv, t.dlogp = -adv * 4 * s * (1 - s) * c1;
  } else if (lt == "vespo") {
    t.loss = -phi * adv * logp, t.dlogp = -phi * adv;
  } else {
    const double c2 = std::clamp(c1, 1 - p.eps_low, 1 + p.eps_high);
    const double c1l = p.delta ? std::min(c1, *p.delta) : c1;
    t.clipped = (c1 < 1 - p.eps_low && adv < 0) || (c1 > 1 + p.eps_high && adv > 0);
    t.loss = -std::min(c1l * adv, c2 * adv);
    // the derivative of the minimum's term (d coef_1 / d logp = coef_1): the capped term's where
    // it is the minimum, the clipped term's elsewhere (ties: the same slope inside the clip range)
    const bool first = c1l * adv <= c2 * adv;
    const bool slope = first ? !p.delta || c1 <= *p.delta : c1 >= 1 - p.eps_low && c1 <= 1 + p.eps_high;
    t.dlogp = slope ? -c1 * adv : 0.0;
  }
  if (lt != "vespo") t.loss *= ratio, t.dlogp *= ratio;
  if (p.beta != 0) {
    t.kl = std::exp(ref - logp) - (ref - logp) - 1;
    if (p.use_bias_correction_kl) t.kl *= c1, t.dlogp += p.beta * c1 * (logp - ref);
    else t.dlogp += p.beta * (1 - std::exp(ref - logp));
    t.loss += p.beta * t.kl;
  }
  return t;
}

double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  const int64_t B = c.B, L = c.L, N = c.N;
  std::vector<double> lv;
  Inputs in;
  in.logits = liger::random_tensor({B, L + 1, N}, c.dtype, device, rng, lv, 2.0);
  std::vector<int64_t> ids(size_t(B * L));
  for (auto& v : ids) v = int64_t(rng() % uint32_t(N));
  in.completion_ids = Tensor::from_vector(ids, {B, L}, device);
  const size_t nb = static_cast<size_t>(B), nt = static_cast<size_t>(B * L);
  std::vector<double> adv(nb), mask(nt, 1.0), ratio(nt, 1.0), ref(nt), phi(nb);
  for (auto& v : adv) v = normal(rng);
  in.advantages = Tensor::from_vector(adv, {B}, device).to(DType::f32);
  adv = liger::host(in.advantages);
  // exact log-probabilities of the completion tokens, for old_logp and ref_logp near them
  std::vector<double> logp(size_t(B * L)), lse(size_t(B * L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < L; ++l) {
      const double* row = lv.data() + (b * (L + 1) + l) * N;
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < N; ++j) m = std::max(m, row[j] / c.p.temperature);
      for (int64_t j = 0; j < N; ++j) s += std::exp(row[j] / c.p.temperature - m);
      lse[size_t(b * L + l)] = m + std::log(s);
      logp[size_t(b * L + l)] = row[ids[size_t(b * L + l)]] / c.p.temperature - lse[size_t(b * L + l)];
    }
  std::vector<double> old(logp.size());
  for (size_t i = 0; i < old.size(); ++i) old[i] = logp[i] + 0.25 * normal(rng), ref[i] = logp[i] + 0.5 * normal(rng);
  if (c.old_logp) in.old_logp = Tensor::from_vector(old, {B, L}, device).to(DType::f32), old = liger::host(in.old_logp);
  if (c.p.beta != 0) in.ref_logp = Tensor::from_vector(ref, {B, L}, device).to(DType::f32), ref = liger::host(in.ref_logp);
  if (c.mask) {
    std::vector<int32_t> mi(mask.size());
    for (size_t i = 0; i < mi.size(); ++i) mi[i] = int32_t(i % 3 != 1), mask[i] = mi[i];
    in.completion_mask = Tensor::from_vector(mi, {B, L}, device);
  }
  if (c.vllm_per_token || c.vllm_per_seq) {
    std::uniform_real_distribution<double> u(0.5, 1.5);
    std::vector<double> r(size_t(c.vllm_per_token ? B * L : B));
    for (auto& v : r) v = u(rng);
    in.vllm_is_ratio = Tensor::from_vector(r, c.vllm_per_token ? std::vector<int64_t>{B, L} : std::vector<int64_t>{B, 1}, device)
                           .to(DType::f32);
    r = liger::host(in.vllm_is_ratio);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t l = 0; l < L; ++l) ratio[size_t(b * L + l)] = r[size_t(c.vllm_per_token ? b * L + l : b)];
  }
  if (c.phi) {
    std::uniform_real_distribution<double> u(0.2, 1.0);
    for (auto& v : phi) v = u(rng);
    in.phi_seq = Tensor::from_vector(phi, {B}, device).to(DType::f32);
    phi = liger::host(in.phi_seq);
  }

  // fused_selective_log_softmax: the tokens' log-probabilities, 0 where masked out
  double worst = 0;
  {
    Tensor lp = fused_selective_log_softmax(in.logits, in.completion_ids, c.p.temperature, in.completion_mask);
    std::vector<double> want(logp.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = mask[i] != 0 ? logp[i] : 0.0;
    worst = std::max(worst, liger::rel_error(liger::host(lp), want));
  }

  // per-token references (the loss's gradient per token: dloss)
  std::vector<TokenRef> tr(logp.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < L; ++l) {
      const size_t i = size_t(b * L + l);
      tr[i] = token_reference(c.p, logp[i], c.old_logp ? std::optional<double>(old[i]) : std::nullopt, adv[size_t(b)],
                              ratio[i], ref[i], phi[size_t(b)]);
    }
  if (c.p.importance_sampling_level == "sequence") {
    // coef_1 = exp(the mean masked log-ratio of the sequence); every token's loss uses it, and
    // d coef_1 / d logp_t = coef_1 mask_t / seq_len (old_logp detached)
    for (int64_t b = 0; b < B; ++b) {
      double n = 0, sum = 0;
      for (int64_t l = 0; l < L; ++l) {
        const size_t i = size_t(b * L + l);
        n += mask[i], sum += (c.old_logp ? logp[i] - old[i] : 0.0) * mask[i];
      }
      n = std::max(n, 1.0);
      const double c1 = std::exp(sum / n), A = adv[size_t(b)];
      const double c2 = std::clamp(c1, 1 - c.p.eps_low, 1 + c.p.eps_high);
      const double c1l = c.p.delta ? std::min(c1, *c.p.delta) : c1;
      for (int64_t l = 0; l < L; ++l) {
        const size_t i = size_t(b * L + l);
        TokenRef t{logp[i], -std::min(c1l * A, c2 * A) * ratio[i], 0, double((c1 < 1 - c.p.eps_low && A < 0) || (c1 > 1 + c.p.eps_high && A > 0)), 0};
        const bool first = c1l * A <= c2 * A;  // as per token: the slope of the minimum's term
        const bool slope = first ? !c.p.delta || c1 <= *c.p.delta : c1 >= 1 - c.p.eps_low && c1 <= 1 + c.p.eps_high;
        t.dlogp_seq = slope ? -c1 * A / n : 0.0;
        if (c.p.beta != 0) {
          t.kl = std::exp(ref[i] - logp[i]) - (ref[i] - logp[i]) - 1;
          if (c.p.use_bias_correction_kl) t.kl *= c1, t.dlogp = c.p.beta * c1 * (logp[i] - ref[i]);  // coef_1 detached
          else t.dlogp = c.p.beta * (1 - std::exp(ref[i] - logp[i]));
          t.loss += c.p.beta * t.kl;
        }
        tr[i] = t;
      }
    }
  }
  std::vector<double> per_token(tr.size());
  // masked-out tokens' losses are 0 (their programs return early); luspo's reduction does not mask
  for (size_t i = 0; i < tr.size(); ++i) per_token[i] = tr[i].loss * mask[i];

  Saved saved;
  std::vector<double> logits_before = lv;
  g_poison = true;
  Outputs o = grpo_forward(in, c.p, saved);
  // Everything the forward returns is a device tensor (nothing was read back inside it).
  for (const Tensor* t : {&o.loss, &o.kl, &o.clip})
    if (t->defined() && t->device() != device) return INFINITY;
  if ((c.p.beta != 0) != o.kl.defined()) return INFINITY;
  std::vector<double> dloss_input;
  if (c.p.reduce) {
    if (o.loss.dim() != 0 || o.clip.dim() != 0) return INFINITY;
    const double want = reduce_loss_reference(per_token, mask, c.p.loss_type, c.p.max_completion_length, B, L, c.p.num_items_in_batch);
    const double got = liger::host(o.loss)[0];
    worst = std::max(worst, std::abs(got - want) / std::max(std::abs(want), 1e-12));
    double ms = 0, kls = 0, cls = 0;
    for (size_t i = 0; i < mask.size(); ++i) ms += mask[i], kls += tr[i].kl * mask[i], cls += tr[i].clipped * mask[i];
    ms = std::max(ms, 1.0);
    if (c.p.beta != 0)
      worst = std::max(worst, std::abs(liger::host(o.kl)[0] - kls / ms) / std::max(std::abs(kls / ms), 1e-12));
    if (std::abs(liger::host(o.clip)[0] - cls / ms) > 1e-6) return INFINITY;
    dloss_input = {0.75};
  } else {
    std::vector<double> wl(mask.size()), wk(mask.size()), wc(mask.size());
    for (size_t i = 0; i < mask.size(); ++i) wl[i] = tr[i].loss * mask[i], wk[i] = tr[i].kl * mask[i], wc[i] = tr[i].clipped * mask[i];
    worst = std::max(worst, liger::rel_error(liger::host(o.loss), wl));
    if (c.p.beta != 0) worst = std::max(worst, liger::rel_error(liger::host(o.kl), wk));
    if (liger::host(o.clip) != wc) return INFINITY;
    dloss_input.resize(mask.size());
    std::uniform_real_distribution<double> u(0.5, 1.5);
    for (auto& v : dloss_input) v = float(u(rng));  // as the f32 tensor holds them
  }

  // the gradient over the logits: (onehot - softmax) * dlogp * dloss / T, 0 where masked out and
  // at the last position
  const double g = c.p.reduce ? dloss_input[0] : 0;
  double msum = 0;
  for (double m : mask) msum += m;
  std::vector<double> want(lv.size(), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    double seq = 0;
    for (int64_t l = 0; l < L; ++l) seq += mask[size_t(b * L + l)];
    seq = std::max(seq, 1.0);
    for (int64_t l = 0; l < L; ++l) {
      const size_t i = size_t(b * L + l);
      if (mask[i] == 0) continue;
      double scale;  // d(reduced loss)/d(per-token loss)
      const std::string& lt = c.p.loss_type;
      if (!c.p.reduce) scale = dloss_input[i];
      else if (lt == "grpo" || lt == "sapo") scale = g / (seq * double(B));
      else if (lt == "bnpo") scale = g / std::max(msum, 1.0);
      else if (lt == "dr_grpo") scale = g / double(B * c.p.max_completion_length.value_or(L));
      else if (lt == "luspo") scale = g * seq / double(B * L);
      else scale = g / std::max(c.p.num_items_in_batch.value_or(msum), 1.0);
      // sequence level: the sequence's part times its dloss summed over its tokens (times their
      // vLLM ratios), which is the same scale for every token of a reduced loss
      double dlogp = tr[i].dlogp * scale;
      if (c.p.importance_sampling_level == "sequence") {
        double dsum = 0;
        for (int64_t t = 0; t < L; ++t) dsum += (mask[size_t(b * L + t)] != 0 ? scale : 0.0) * ratio[size_t(b * L + t)];
        dlogp += tr[i].dlogp_seq * dsum;
      }
      const double* row = logits_before.data() + (b * (L + 1) + l) * N;
      for (int64_t j = 0; j < N; ++j) {
        const double prob = std::exp(row[j] / c.p.temperature - lse[i]);
        want[size_t((b * (L + 1) + l) * N + j)] = ((j == ids[i] ? 1.0 : 0.0) - prob) * dlogp / c.p.temperature;
      }
    }
  }
  // the loss's gradient as a device tensor: 0-dim when reduced, [B, L] otherwise
  Tensor dl = c.p.reduce ? tritium::ops::full({}, dloss_input[0], DType::f32, device)
                         : Tensor::from_vector(dloss_input, {B, L}, device).to(DType::f32);
  Tensor dlogits = grpo_backward(in, c.p, saved, dl);
  g_poison = false;
  return std::max(worst, liger::rel_error(liger::host(dlogits), want));
}

bool check(const tritium::Device& device) {
  Params grpo;
  // delta >= 1 + eps_high (TRL's recommended range): below it the original's gradient rule (0
  // wherever coef_1 > delta) is not the derivative of its loss, which the reference computes.
  grpo.beta = 0.1, grpo.delta = 1.25;
  Params cispo;
  cispo.loss_type = "cispo", cispo.eps_high = 1.1, cispo.inplace = true;
  Params sapo;
  sapo.loss_type = "sapo", sapo.beta = 0.05, sapo.use_bias_correction_kl = true, sapo.reduce = false;
  Params vespo;
  vespo.loss_type = "vespo", vespo.temperature = 0.7, vespo.num_items_in_batch = 7;
  Params dr;
  dr.loss_type = "dr_grpo", dr.max_completion_length = 6;
  Params luspo;
  luspo.loss_type = "luspo", luspo.beta = 0.2;
  Params seq;
  seq.importance_sampling_level = "sequence", seq.beta = 0.1, seq.use_bias_correction_kl = true, seq.delta = 1.25;
  Params seq_bnpo;
  seq_bnpo.importance_sampling_level = "sequence", seq_bnpo.loss_type = "bnpo";
  // Every loss type and both importance-sampling levels, masks with masked-out tokens (their programs return early), a vocabulary of
  // 5000 (three forward and two backward chunks, the last partial) and ones under a block; per
  // token and per sequence vLLM ratios; old_logp given and not (on-policy); KL with and without
  // the bias correction; unreduced losses; the in-place gradient; f32 and bf16 logits.
  const std::vector<Case> cases = {{3, 4, 700, DType::f32, grpo, true, true, false, false, false},
                                   {2, 3, 5000, DType::bf16, cispo, true, false, false, true, false},
                                   {2, 3, 300, DType::f32, sapo, true, true, true, false, false},
                                   {2, 2, 300, DType::f32, vespo, true, true, true, false, true},
                                   {2, 3, 300, DType::f16, dr, false, true, false, false, false},
                                   {3, 2, 200, DType::f32, luspo, true, true, false, false, false},
                                   {3, 4, 300, DType::f32, seq, true, true, true, false, false},
                                   {2, 3, 300, DType::bf16, seq_bnpo, false, false, false, false, false}};
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.B * 100 + c.L * 10 + c.N));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    detail += fmt::format("{}{} {}x{}x{} {}{}{}{} {:.1e}", detail.empty() ? "(logp, loss, kl, dlogits: " : ", ",
                          tritium::dtype_name(c.dtype), c.B, c.L, c.N, c.p.loss_type,
                          c.p.importance_sampling_level == "sequence" ? " seq" : "", c.p.reduce ? "" : " unreduced",
                          c.p.inplace ? " inplace" : "", rel);
  }
  // A loss type the wrapper does not know is an error naming it.
  bool refused = false;
  try {
    Params bad;
    bad.loss_type = "ppo";
    Saved s;
    Inputs in;
    in.logits = tritium::ops::zeros({1, 2, 8}, DType::f32, device);
    grpo_forward(in, bad, s);
  } catch (const tritium::Error& e) {
    refused = std::string(e.what()).find("Unknown loss_type 'ppo'") != std::string::npos;
  }
  ok = ok && refused;
  detail += fmt::format("; bounds f32 1e-5, f16 1e-3, bf16 1e-2; shown: worst error / bound; unknown loss type {})",
                        refused ? "refused" : "NOT REFUSED");
  return suite::report("grpo_loss", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_grpo_loss_kernel.py: B in 2, 4, 8, 16, T = 512, V = 32000, bf16 logits, beta 0.1,
// on-policy (old_logp None), all-ones bool completion mask, temperature 1, eps 0.2, grpo, reduced;
// forward and backward. GB/s from the bytes the kernels move (forward: the logits read; backward:
// read and the gradient written).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t T = 512, V = 32000;
  std::vector<int64_t> bs = device.is_cuda() ? std::vector<int64_t>{2, 4, 8, 16} : std::vector<int64_t>{1};
  const int64_t Tb = device.is_cuda() ? T : 16;
  std::vector<suite::Row> rows;
  for (int64_t B : bs) {
    auto& gen = tritium::ops::default_generator();
    Inputs in;
    in.logits = tritium::ops::randn({B, Tb + 1, V}, gen, DType::bf16, device);
    in.completion_ids = tritium::ops::randint(0, V, {B, Tb}, gen, DType::i64, device);
    in.advantages = tritium::ops::randn({B}, gen, DType::bf16, device);
    in.completion_mask = tritium::ops::ones({B, Tb}, DType::i1, device);
    in.ref_logp = tritium::ops::randn({B, Tb}, gen, DType::f32, device);
    Params p;
    p.beta = 0.1;
    Saved s;
    const double bytes = double(B) * double(Tb) * double(V) * 2.0;
    const double fwd = tritium::do_bench([&] { grpo_forward(in, p, s); }, device).median_ms;
    rows.push_back({fmt::format("fwd B={} T={} V={} bf16", B, Tb, V), fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
    grpo_forward(in, p, s);
    const Tensor one = tritium::ops::full({}, 1.0, DType::f32, device);
    const double bwd = tritium::do_bench([&] { grpo_backward(in, p, s, one); }, device).median_ms;
    rows.push_back({fmt::format("bwd B={} T={} V={} bf16", B, Tb, V), bwd, 2 * bytes * 1e-9 / (bwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "grpo_loss",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/grpo_loss.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
