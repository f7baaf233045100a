// The kernel of kernels/fused_moe.cpp (see there: the original, its source and the deviations), in a
// header so that tests/test_layout_dot_ports.cpp generates code for the very kernel the suite runs.
#pragma once

#include <utility>

#include <tritium/tritium.h>

namespace tritium_ports::fused_moe {

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::DType;
using P = tl::ptr<tl::any>;

inline void write_zeros_to_output(const tl::tensor& c_ptr, const tl::tensor& stride_cm, const tl::tensor& stride_cn,
                                  const tl::tensor& pid_n, const tl::tensor& N, const tl::tensor& offs_token,
                                  const tl::tensor& token_mask, int BLOCK_SIZE_M, int BLOCK_SIZE_N,
                                  DType compute_type) {
  auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, compute_type);
  auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
  auto c_ptrs = c_ptr + stride_cm * offs_token(_, None) + stride_cn * offs_cn(None, _);
  auto c_mask = token_mask(_, None) & (offs_cn(None, _) < N);
  tl::store(c_ptrs, accumulator, c_mask);
}

inline auto fused_moe_kernel = tritium::kernel(
    "fused_moe_kernel",
    [](  // Pointers to matrices
        P a_ptr, P b_ptr, P c_ptr, P b_bias_ptr, tl::ptr<float> a_scale_ptr, tl::ptr<float> b_scale_ptr,
        tl::ptr<float> topk_weights_ptr, tl::ptr<int32_t> sorted_token_ids_ptr, tl::ptr<int32_t> expert_ids_ptr,
        tl::ptr<int32_t> num_tokens_post_padded_ptr,
        // Matrix dimensions
        tl::i32 N, tl::i32 K, tl::i32 EM, tl::i32 num_valid_tokens,
        // The stride variables represent how much to increase the ptr by when moving by 1 element
        // in a particular dimension. E.g. `stride_am` is how much to increase `a_ptr` by to get the
        // element one row down (A has M rows).
        tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_be, tl::i32 stride_bk, tl::i32 stride_bn,
        tl::i32 stride_cm, tl::i32 stride_cn, tl::i32 stride_asm, tl::i32 stride_ask, tl::i32 stride_bse,
        tl::i32 stride_bsk, tl::i32 stride_bsn, tl::i32 stride_bbe,  // bias expert stride
        tl::i32 stride_bbn,                                          // bias N stride
        // Block size for block-wise quantization
        int group_n, int group_k,
        // Meta-parameters
        int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, int SPLIT_K, int MUL_ROUTED_WEIGHT,
        int top_k, int compute_type_, int use_fp8_w8a8, int use_int8_w8a8, int use_int8_w8a16, int per_channel_quant,
        int HAS_BIAS) {
      (void)SPLIT_K;  // set to 1 by the wrapper; the kernel does not read it (as upstream)
      const DType compute_type = static_cast<DType>(compute_type_);
      // -----------------------------------------------------------
      // Map program ids `pid` to the block of C it should compute.
      // This is done in a grouped ordering to promote L2 data reuse.
      auto pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(EM, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
      auto group_id = pid / num_pid_in_group;
      auto first_pid_m = group_id * GROUP_SIZE_M;
      auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
      auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
      auto pid_n = (pid % num_pid_in_group) / group_size_m;

      // ----------------------------------------------------------
      // Create pointers for the first blocks of A and B.
      // We will advance this pointer as we move in the K direction and accumulate
      // `a_ptrs` is a block of [BLOCK_SIZE_M, BLOCK_SIZE_K] pointers
      // `b_ptrs` is a block of [BLOCK_SIZE_K, BLOCK_SIZE_N] pointers
      auto num_tokens_post_padded = tl::load(num_tokens_post_padded_ptr);
      // if pid_m * BLOCK_SIZE_M >= num_tokens_post_padded: return
      tl::if_(pid_m * BLOCK_SIZE_M < num_tokens_post_padded, [&] {
        auto offs_token_id = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M).to(tl::int64);
        auto offs_token = tl::load(sorted_token_ids_ptr + offs_token_id);
        auto token_mask = offs_token < num_valid_tokens;

        auto off_experts = tl::load(expert_ids_ptr + pid_m).to(tl::int64);
        tl::if_(
            off_experts == -1,
            [&] {
              // -----------------------------------------------------------
              // Write back zeros to the output when the expert is not in the current expert
              // parallel rank (then return).
              write_zeros_to_output(c_ptr, stride_cm, stride_cn, pid_n, N, offs_token, token_mask, BLOCK_SIZE_M,
                                    BLOCK_SIZE_N, compute_type);
            },
            [&] {
              auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N).to(tl::int64)) % N;
              auto offs_k = tl::arange(0, BLOCK_SIZE_K);
              auto a_ptrs = a_ptr + (offs_token(_, None) / top_k * stride_am + offs_k(None, _) * stride_ak);

              auto b_ptrs = b_ptr + off_experts * stride_be + (offs_k(_, None) * stride_bk + offs_bn(None, _) * stride_bn);
              tl::tensor b_scale, a_scale, a_scale_ptrs, b_scale_ptrs;
              if (use_int8_w8a16) {
                b_scale_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bn(None, _) * stride_bsn;
                b_scale = tl::load(b_scale_ptrs);
              }

              if (use_fp8_w8a8 || use_int8_w8a8) {
                // block-wise
                if (group_k > 0 && group_n > 0) {
                  a_scale_ptrs = a_scale_ptr + (offs_token / top_k) * stride_asm;
                  auto offs_bsn = offs_bn / group_n;
                  b_scale_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bsn * stride_bsn;
                }
                // channel-wise
                else if (per_channel_quant) {
                  b_scale_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bn(None, _) * stride_bsn;
                  b_scale = tl::load(b_scale_ptrs);
                  // Load per-token scale for activations
                  a_scale_ptrs = a_scale_ptr + (offs_token / top_k) * stride_asm;
                  a_scale = tl::load(a_scale_ptrs, token_mask, 0.0)(_, None);
                }
                // tensor-wise
                else {
                  a_scale = tl::load(a_scale_ptr);
                  b_scale = tl::load(b_scale_ptr + off_experts);
                }
              }
              tl::tensor bias;
              if (HAS_BIAS) {
                // bias shape: [num_experts, N]
                auto bias_ptrs = b_bias_ptr + off_experts * stride_bbe + offs_bn * stride_bbn;
                bias = tl::load(bias_ptrs, offs_bn < N, 0.0);
              }
              // -----------------------------------------------------------
              // Iterate to compute a block of the C matrix.
              // We accumulate into a `[BLOCK_SIZE_M, BLOCK_SIZE_N]` block of fp32 values for
              // higher accuracy. `accumulator` will be converted back to fp16 after the loop.
              auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
              for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
                // Load the next block of A and B, generate a mask by checking the K dimension.
                auto a = tl::load(a_ptrs, token_mask(_, None) & (offs_k(None, _) < K - k * BLOCK_SIZE_K), 0.0);
                auto b = tl::load(b_ptrs, offs_k(_, None) < K - k * BLOCK_SIZE_K, 0.0);
                // We accumulate along the K dimension.
                if (use_int8_w8a16) {
                  accumulator = tl::dot(a, b.to(compute_type), accumulator);
                } else if (use_fp8_w8a8 || use_int8_w8a8) {
                  if (group_k > 0 && group_n > 0) {
                    auto k_start = k * BLOCK_SIZE_K;
                    auto offs_ks = k_start / group_k;
                    // (a_scale / b_scale of this K group: new values each trip, not carried)
                    auto a_scale_k = tl::load(a_scale_ptrs + offs_ks * stride_ask, token_mask, 0.0);
                    auto b_scale_k = tl::load(b_scale_ptrs + offs_ks * stride_bsk);

                    accumulator += tl::dot(a, b) * a_scale_k(_, None) * b_scale_k(None, _);
                  } else {
                    if (use_fp8_w8a8)
                      // acc used to enable fp8_fast_accum
                      accumulator = tl::dot(a, b, accumulator);
                    else
                      accumulator += tl::dot(a, b);
                  }
                } else {
                  accumulator += tl::dot(a, b);
                }
                // Advance the ptrs to the next K block.
                a_ptrs += BLOCK_SIZE_K * stride_ak;
                b_ptrs += BLOCK_SIZE_K * stride_bk;
              }
              if (HAS_BIAS) accumulator = accumulator + bias(None, _);
              if (MUL_ROUTED_WEIGHT) {
                auto moe_weight = tl::load(topk_weights_ptr + offs_token, token_mask, 0);
                accumulator = accumulator * moe_weight(_, None);
              }
              tl::tensor out;
              if (use_int8_w8a16) {
                out = (accumulator * b_scale).to(compute_type);
              } else if (use_fp8_w8a8 || use_int8_w8a8) {
                if (group_k > 0 && group_n > 0)
                  out = accumulator.to(compute_type);
                else
                  out = (accumulator * a_scale * b_scale).to(compute_type);
              } else {
                out = accumulator.to(compute_type);
              }

              // -----------------------------------------------------------
              // Write back the block of the output
              auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
              auto c_ptrs = c_ptr + stride_cm * offs_token(_, None) + stride_cn * offs_cn(None, _);
              auto c_mask = token_mask(_, None) & (offs_cn(None, _) < N);
              tl::store(c_ptrs, out, c_mask);
            });
      });
    },
    {"a_ptr", "b_ptr", "c_ptr", "b_bias_ptr", "a_scale_ptr", "b_scale_ptr", "topk_weights_ptr", "sorted_token_ids_ptr",
     "expert_ids_ptr", "num_tokens_post_padded_ptr", "N", "K", "EM", "num_valid_tokens", "stride_am", "stride_ak",
     "stride_be", "stride_bk", "stride_bn", "stride_cm", "stride_cn", "stride_asm", "stride_ask", "stride_bse",
     "stride_bsk", "stride_bsn", "stride_bbe", "stride_bbn", "group_n", "group_k", "BLOCK_SIZE_M", "BLOCK_SIZE_N",
     "BLOCK_SIZE_K", "GROUP_SIZE_M", "SPLIT_K", "MUL_ROUTED_WEIGHT", "top_k", "compute_type", "use_fp8_w8a8",
     "use_int8_w8a8", "use_int8_w8a16", "per_channel_quant", "HAS_BIAS"});

}  // namespace tritium_ports::fused_moe
