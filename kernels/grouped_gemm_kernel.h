// The kernel of kernels/grouped_gemm.cpp (see there: the original, its source and the deviations), in a
// header so that tests/test_layout_dot_ports.cpp generates code for the very kernel the suite runs.
#pragma once

#include <utility>

#include <tritium/tritium.h>

namespace tritium_ports::grouped_gemm {

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::DType;
using P = tl::ptr<tl::any>;

inline auto grouped_matmul_kernel = tritium::kernel(
    "grouped_matmul_kernel",
    [](  // device tensor of matrices pointers
        tl::ptr<int64_t> group_a_ptrs, tl::ptr<int64_t> group_b_ptrs, tl::ptr<int64_t> group_c_ptrs,
        // device tensor of gemm sizes. its shape is [group_size, 3]
        // dim 0 is group_size, dim 1 is the values of <M, N, K> of each gemm
        tl::ptr<int32_t> group_gemm_sizes,
        // device tensor of leading dimension sizes. its shape is [group_size, 3]
        // dim 0 is group_size, dim 1 is the values of <lda, ldb, ldc> of each gemm
        tl::ptr<int32_t> g_lds,
        // number of gemms
        tl::i32 group_size,
        // number of virtual SM
        int NUM_SM,
        // tile sizes
        int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K) {
      auto tile_idx = tl::program_id(0);
      auto last_problem_end = tl::full({}, 0, tl::int32);  // Python's 0, carried as an i32 as in Triton
      for (auto g : tl::range(0, group_size)) {
        // get the gemm size of the current problem
        auto gm = tl::load(group_gemm_sizes + g * 3);
        auto gn = tl::load(group_gemm_sizes + g * 3 + 1);
        auto gk = tl::load(group_gemm_sizes + g * 3 + 2);
        auto num_m_tiles = tl::cdiv(gm, BLOCK_SIZE_M);
        auto num_n_tiles = tl::cdiv(gn, BLOCK_SIZE_N);
        auto num_tiles = num_m_tiles * num_n_tiles;
        // iterate through the tiles in the current gemm problem
        tl::while_([&] { return (tile_idx >= last_problem_end) && (tile_idx < last_problem_end + num_tiles); }, [&] {
          // pick up a tile from the current gemm problem
          auto k = gk;
          auto lda = tl::load(g_lds + g * 3);
          auto ldb = tl::load(g_lds + g * 3 + 1);
          auto ldc = tl::load(g_lds + g * 3 + 2);
          auto a_ptr = tl::load(group_a_ptrs + g).to(tl::pointer_type(tl::float16));
          auto b_ptr = tl::load(group_b_ptrs + g).to(tl::pointer_type(tl::float16));
          auto c_ptr = tl::load(group_c_ptrs + g).to(tl::pointer_type(tl::float16));
          // figure out tile coordinates
          auto tile_idx_in_gemm = tile_idx - last_problem_end;
          auto tile_m_idx = tile_idx_in_gemm / num_n_tiles;  // Triton's `//`
          auto tile_n_idx = tile_idx_in_gemm % num_n_tiles;

          // do regular gemm here
          auto offs_am = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_bn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto offs_k = tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + offs_am(tl::_, tl::None) * lda + offs_k(tl::None, tl::_);
          auto b_ptrs = b_ptr + offs_k(tl::_, tl::None) * ldb + offs_bn(tl::None, tl::_);
          auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, tl::float32);
          for ([[maybe_unused]] auto kk : tl::range(0, tl::cdiv(k, BLOCK_SIZE_K))) {
            // hint to Triton compiler to do proper loop pipelining
            a_ptrs = tl::multiple_of(a_ptrs, {16, 16});
            b_ptrs = tl::multiple_of(b_ptrs, {16, 16});
            // assume full tile for now
            auto a = tl::load(a_ptrs);
            auto b = tl::load(b_ptrs);
            accumulator += tl::dot(a, b);
            a_ptrs += BLOCK_SIZE_K;
            b_ptrs += BLOCK_SIZE_K * ldb;
          }
          auto c = accumulator.to(tl::float16);

          auto offs_cm = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_cn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto c_ptrs = c_ptr + ldc * offs_cm(tl::_, tl::None) + offs_cn(tl::None, tl::_);

          // assumes full tile for now
          tl::store(c_ptrs, c);

          // go to the next tile by advancing NUM_SM
          tile_idx += NUM_SM;
        });

        // get ready to go to the next gemm problem
        last_problem_end = last_problem_end + num_tiles;
      }
    },
    {"group_a_ptrs", "group_b_ptrs", "group_c_ptrs", "group_gemm_sizes", "g_lds", "group_size", "NUM_SM",
     "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"});

}  // namespace tritium_ports::grouped_gemm
