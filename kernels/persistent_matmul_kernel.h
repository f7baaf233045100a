// The kernel of kernels/persistent_matmul.cpp (see there: the original, its source and the deviations), in a
// header so that tests/test_layout_dot_ports.cpp generates code for the very kernel the suite runs.
#pragma once

#include <utility>

#include <tritium/tritium.h>

namespace tritium_ports::persistent_matmul {

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::DType;
using P = tl::ptr<tl::any>;

// Triton's @triton.jit _compute_pid: a C++ function called while tracing (inlined). NUM_SMS is a
// parameter of the original that it does not use.
inline std::pair<tl::tensor, tl::tensor> _compute_pid(const tl::tensor& tile_id, const tl::tensor& num_pid_in_group,
                                                      const tl::tensor& num_pid_m, int GROUP_SIZE_M, int /*NUM_SMS*/) {
  auto group_id = tile_id / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_SIZE_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);  // Python's min
  auto pid_m = first_pid_m + (tile_id % group_size_m);
  auto pid_n = (tile_id % num_pid_in_group) / group_size_m;
  return {pid_m, pid_n};
}

inline auto matmul_kernel_persistent = tritium::kernel(
    "matmul_kernel_persistent",
    [](P a_ptr, P b_ptr, P c_ptr,  //
       tl::i32 M, tl::i32 N, tl::i32 K,  //
       tl::i32 stride_am, tl::i32 stride_ak,  //
       tl::i32 stride_bk, tl::i32 stride_bn,  //
       tl::i32 stride_cm, tl::i32 stride_cn,  //
       int BLOCK_SIZE_M,  //
       int BLOCK_SIZE_N,  //
       int BLOCK_SIZE_K,  //
       int GROUP_SIZE_M,  //
       int NUM_SMS) {
      auto start_pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
      auto num_tiles = num_pid_m * num_pid_n;

      // NOTE: There is currently a bug in blackwell pipelining that means it can't handle a value being
      // used in both the prologue and epilogue, so we duplicate the counters as a work-around.
      auto tile_id_c = start_pid - NUM_SMS;

      auto offs_k_for_mask = tl::arange(0, BLOCK_SIZE_K);
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;

      for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS, {.flatten = true})) {
        tl::tensor pid_m, pid_n;
        std::tie(pid_m, pid_n) = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto start_m = pid_m * BLOCK_SIZE_M;
        auto start_n = pid_n * BLOCK_SIZE_N;
        auto offs_am = start_m + tl::arange(0, BLOCK_SIZE_M);
        auto offs_bn = start_n + tl::arange(0, BLOCK_SIZE_N);
        offs_am = tl::where(offs_am < M, offs_am, 0);
        offs_bn = tl::where(offs_bn < N, offs_bn, 0);
        offs_am = tl::max_contiguous(tl::multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M);
        offs_bn = tl::max_contiguous(tl::multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N);

        auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
        for (auto ki : tl::range(k_tiles)) {
          auto offs_k = ki * BLOCK_SIZE_K + tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + (offs_am(tl::_, tl::None) * stride_am + offs_k(tl::None, tl::_) * stride_ak);
          auto b_ptrs = b_ptr + (offs_k(tl::_, tl::None) * stride_bk + offs_bn(tl::None, tl::_) * stride_bn);

          auto a = tl::load(a_ptrs, offs_k_for_mask(tl::None, tl::_) < K - ki * BLOCK_SIZE_K, 0.0);
          auto b = tl::load(b_ptrs, offs_k_for_mask(tl::_, tl::None) < K - ki * BLOCK_SIZE_K, 0.0);
          accumulator = tl::dot(a, b, accumulator);
        }

        tile_id_c += NUM_SMS;
        std::tie(pid_m, pid_n) = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
        auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
        auto c_ptrs = c_ptr + stride_cm * offs_cm(tl::_, tl::None) + stride_cn * offs_cn(tl::None, tl::_);
        auto c_mask = (offs_cm(tl::_, tl::None) < M) & (offs_cn(tl::None, tl::_) < N);
        tl::tensor c;
        if (c_ptr.type().pointee == tl::float8e4nv)  // c_ptr.dtype.element_ty == tl.float8e4nv
          c = accumulator.to(tl::float8e4nv);
        else
          c = accumulator.to(tl::float16);
        tl::store(c_ptrs, c, c_mask);
      }
    },
    {"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
     "stride_cn", "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "NUM_SMS"});

}  // namespace tritium_ports::persistent_matmul
