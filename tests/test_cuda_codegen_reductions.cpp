// The kernels of the statistics reductions, scans, sorts and unique (ops/reduce_kernels.h) turned
// into CUDA C++ and compiled by NVRTC for sm_90a and sm_80 without a GPU, for every kind and the
// dtypes the ops launch them with. Running them is the shared suites' job on a GPU machine
// (test_ops_reduce_stats, test_ops_sort). Skips when NVRTC cannot be opened or the CUDA backend
// is not built.
#include <algorithm>

#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include "test_support.h"

#if TRITIUM_HAS_CUDA_BACKEND
#include "cuda_codegen_check.h"
#include "ir/ir.h"
#include "ops/reduce_kernels.h"
#include "ops/select.h"

namespace cuda = tritium::jit::cuda;
using tritium::DType;

namespace {

template <class T> T* addr(uint64_t i) { return tritium::test::fake_address<T>(i); }

// Traces `k` for `args`, generates CUDA C++ and compiles it for sm_90a, and for sm_80 too while
// `also_sm80` is set (a few kernels of each family: NVRTC is slow on the 2-core CI machine).
bool also_sm80 = false;
template <class... A> void compile(tritium::Kernel& k, const std::string& what, const A&... args) {
  tritium::test::CudaCheck check = tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).named(what);
  if (also_sm80) check.also_for("sm_80");
  tritium::test::compile_cuda(k, check, args...);
}

using tritium::test::nvrtc_or_skip;

int d(DType t) { return static_cast<int>(t); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_reductions)

BOOST_AUTO_TEST_CASE(row_stats_every_kind) {
  if (!nvrtc_or_skip()) return;
  auto& k = tritium::ops::detail::row_stats_kernel();
  const int64_t O = 1000, R = 333;
  for (int kind = 0; kind < tritium::ops::detail::kRowStatKinds; ++kind) {
    // f32 input, f32 accumulation; one row per program of 1024 lanes, and 8 rows of 256.
    also_sm80 = kind == 0 || kind == 3 || kind == 8;
    DType out = kind == 12 ? DType::i64 : kind == 10 || kind == 11 ? DType::i1 : DType::f32;  // count_nonzero; all, any
    compile(k, "row_stats kind " + std::to_string(kind), addr<float>(0), addr<float>(1), addr<float>(2), addr<float>(2),
            addr<int32_t>(3), O, R, int64_t(1), R, 2.0, 0.5, kind, d(DType::f32), d(out), kind <= 1, 8, 256, 0, 0, 0,
            0);
  }
  also_sm80 = false;
  {
    compile(k, "var of row chunks, 1024 lanes per program", addr<float>(0), addr<float>(1), addr<float>(2),
            addr<float>(2), addr<int32_t>(3), O, R, int64_t(4), int64_t(1024), 1.0, 0.5, 0, d(DType::f32),
            d(DType::f32), true, 1, 1024, 0, 0, 0, 0);
    compile(tritium::ops::detail::var_combine_kernel(), "var_combine", addr<float>(0), addr<float>(1), addr<float>(2),
            addr<float>(3), R, int64_t(40), int64_t(1024), 0.5, true, true, d(DType::f32), d(DType::f32), 64);
  }
  // f16 input (f32 accumulation, f16 result), f64, integer products and bool inputs.
  compile(k, "var of f16", addr<tritium::f16_t>(0), addr<tritium::f16_t>(1), addr<tritium::f16_t>(2),
          addr<tritium::f16_t>(2), addr<int32_t>(3), O, R, int64_t(1), R, 1.0, 0.5, 0, d(DType::f32), d(DType::f16),
          true, 4, 256, 0, 0, 0, 0);
  compile(k, "logsumexp of f64", addr<double>(0), addr<double>(1), addr<double>(2), addr<double>(2), addr<int32_t>(3),
          O, R, int64_t(1), R, 1.0, 0.5, 3, d(DType::f64), d(DType::f64), false, 4, 256, 0, 0, 0, 0);
  compile(k, "prod of i32", addr<int32_t>(0), addr<int64_t>(1), addr<int64_t>(2), addr<int64_t>(2), addr<int32_t>(3), O,
          R, int64_t(1), R, 0.0, 0.0, 2, d(DType::i64), d(DType::i64), false, 4, 256, 0, 0, 0, 0);
  compile(k, "all of bool", addr<bool>(0), addr<bool>(1), addr<bool>(2), addr<bool>(2), addr<int32_t>(3), O, R,
          int64_t(1), R, 0.0, 0.0, 10, d(DType::i32), d(DType::i1), false, 4, 256, 0, 0, 0, 0);
  compile(k, "count_nonzero of bool", addr<bool>(0), addr<int64_t>(1), addr<int64_t>(2), addr<int64_t>(2),
          addr<int32_t>(3), O, R, int64_t(1), R, 0.0, 0.0, 12, d(DType::i32), d(DType::i64), false, 4, 256, 0, 0, 0, 0);
}

BOOST_AUTO_TEST_CASE(row_scan_every_kind) {
  if (!nvrtc_or_skip()) return;
  auto& k = tritium::ops::detail::row_scan_kernel();
  const int64_t O = 100, R = 5000;
  for (int kind = 0; kind < tritium::ops::detail::kRowScanKinds; ++kind) {
    also_sm80 = kind == 2 || kind == 5;
    compile(k, "row_scan kind " + std::to_string(kind), addr<float>(0), addr<float>(1), addr<float>(2), addr<int64_t>(3),
            addr<float>(4), O, R, int64_t(1), R, kind, d(DType::f32), d(DType::f32), false, 2, 1024, false);
  }
  // Rows of one block (no loop, no carries): every kind.
  for (int kind = 0; kind < tritium::ops::detail::kRowScanKinds; ++kind)
    compile(k, "row_scan kind " + std::to_string(kind) + ", one block", addr<float>(0), addr<float>(1), addr<float>(2),
            addr<int64_t>(3), addr<float>(4), O, int64_t(1000), int64_t(1), int64_t(1000), kind, d(DType::f32),
            d(DType::f32), false, 2, 1024, true);
  also_sm80 = true;
  compile(k, "cumsum of row chunks from offsets", addr<float>(0), addr<float>(1), addr<float>(2), addr<int64_t>(3),
          addr<float>(4), O, R, int64_t(5), int64_t(1024), 0, d(DType::f32), d(DType::f32), true, 1, 1024, false);
  also_sm80 = false;
  compile(k, "cumsum of i32 in i64", addr<int32_t>(0), addr<int32_t>(1), addr<int64_t>(2), addr<int64_t>(3),
          addr<int64_t>(4), O, R, int64_t(1), R, 0, d(DType::i64), d(DType::i64), false, 8, 256, false);
  compile(k, "cummax of bool", addr<bool>(0), addr<bool>(1), addr<bool>(2), addr<int64_t>(3), addr<bool>(4), O, R,
          int64_t(1), R, 2, d(DType::i32), d(DType::i1), false, 8, 256, false);
  compile(k, "cummax's backward: bf16 gradient, i64 indices", addr<int64_t>(0), addr<tritium::bf16_t>(1),
          addr<tritium::bf16_t>(2), addr<int64_t>(3), addr<float>(4), O, R, int64_t(1), R, 7, d(DType::f32),
          d(DType::bf16), false, 2, 1024, false);
  compile(k, "cumprod of f16 from offsets", addr<tritium::f16_t>(0), addr<tritium::f16_t>(1), addr<tritium::f16_t>(2),
          addr<int64_t>(3), addr<float>(4), O, R, int64_t(5), int64_t(1024), 1, d(DType::f32), d(DType::f16), true, 1, 1024, false);
}

BOOST_AUTO_TEST_CASE(sort_and_merge_runs) {
  if (!nvrtc_or_skip()) return;
  auto& runs = tritium::ops::detail::sort_runs_kernel();
  auto& merge = tritium::ops::detail::merge_runs_kernel();
  const int64_t R = 1 << 20;
  for (bool desc : {false, true}) {
    also_sm80 = desc;
    compile(runs, "sort_runs f32", addr<float>(0), addr<float>(1), addr<int64_t>(2), R, R / 64, desc, d(DType::f32), 64);
    compile(merge, "merge_runs f32", addr<float>(0), addr<int64_t>(1), addr<float>(2), addr<int64_t>(3), R, int64_t(64),
            R / 1024, int64_t(8), desc, d(DType::f32), 1024);
  }
  also_sm80 = false;
  compile(runs, "sort_runs f16", addr<tritium::f16_t>(0), addr<tritium::f16_t>(1), addr<int64_t>(2), R, R / 64, false,
          d(DType::f32), 64);
  compile(runs, "sort_runs i64", addr<int64_t>(0), addr<int64_t>(1), addr<int64_t>(2), R, R / 64, false, d(DType::i64), 64);
  compile(runs, "sort_runs bool", addr<bool>(0), addr<bool>(1), addr<int64_t>(2), R, R / 16, false, d(DType::i32), 16);
  compile(merge, "merge_runs i32", addr<int32_t>(0), addr<int64_t>(1), addr<int32_t>(2), addr<int64_t>(3), R, int64_t(64),
          R / 1024, int64_t(8), false, d(DType::i32), 1024);
  auto& uniq = tritium::ops::detail::unique_runs_kernel();
  for (int mode : {0, 1})
    compile(uniq, "unique_runs mode " + std::to_string(mode), addr<float>(0), addr<int64_t>(1), addr<float>(2),
            addr<int64_t>(3), R, int64_t(1000), mode, d(DType::f32), 1024);
  compile(uniq, "unique_runs counts", addr<float>(0), addr<int64_t>(1), addr<int64_t>(2), addr<int64_t>(3), R,
          int64_t(1000), 2, d(DType::f32), 1024);
}

// sort_block (rows of <= 4096 in one launch: tl::sort / tl::topk over packed i64 keys) goes
// through the layout generator, whose reshapes to [2, .., 2] move no data: no buffer in global
// scratch (the element-loop generator spilled 1.7 MB a program for a 4096-wide tl::sort) and few
// barriers (one exchange a layer whose bit is a warp bit; 157 in the element-loop's 4096 sort).
BOOST_AUTO_TEST_CASE(sort_block_through_layouts) {
  if (!nvrtc_or_skip()) return;
  auto& k = tritium::ops::detail::sort_block_kernel();
  const int64_t O = 1000, R = 200;
  struct Case {
    std::string what;
    cuda::KernelSource ks;
  };
  std::vector<Case> cases;
  auto check = tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).warps(8);
  cases.push_back({"sort_block f32, 8 rows of 256 a program, descending",
                   tritium::test::compile_cuda(k, check.named("sort_block f32"), addr<float>(0), addr<float>(1),
                                               addr<int64_t>(2), O, R, R, true, 8, 256, 256)});
  cases.push_back({"sort_block bf16, top 8 of 256",
                   tritium::test::compile_cuda(k, check.named("sort_block bf16 top 8"), addr<tritium::bf16_t>(0),
                                               addr<tritium::bf16_t>(1), addr<int64_t>(2), O, R, int64_t(5), false, 8,
                                               256, 8)});
  cases.push_back({"sort_block i8", tritium::test::compile_cuda(k, check.named("sort_block i8"), addr<int8_t>(0),
                                                                addr<int8_t>(1), addr<int64_t>(2), O, R, R, false, 8,
                                                                256, 256)});
  for (const Case& c : cases) {
    const std::string body = tritium::test::kernel_body(c.ks);
    BOOST_TEST(body.find("tt_scratch_cta +") == std::string::npos, c.what << ": a buffer in global scratch");
    BOOST_TEST(body.find("tt_tc0") != std::string::npos, c.what << ": not the layout generator's thread coordinates");
    BOOST_TEST(tritium::test::occurrences(body, "__syncthreads") <= 40u, c.what);
  }
}

// Radix selection (ops/select.cpp) through the element-loop generator: select_rows for a row of
// 1024 f32 (4 warps, 32 one-bit counts) and 4 rows of 256 bf16; the digit passes (a histogram in
// shared memory, atomics once per bin), the median's one-program launch, and for long rows the
// chunk counts of the selected key and the program per row that finds its index. No buffer in
// global scratch.
BOOST_AUTO_TEST_CASE(radix_select) {
  if (!nvrtc_or_skip()) return;
  namespace od = tritium::ops::detail;
  auto check = tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).warps(4);
  std::vector<std::pair<std::string, cuda::KernelSource>> cases;
  cases.emplace_back("select_rows bf16 4 x 256",
                     tritium::test::compile_cuda(od::select_rows_kernel(), check.named("select_rows bf16"),
                                                 addr<tritium::bf16_t>(0), addr<tritium::bf16_t>(1), addr<int64_t>(2),
                                                 int64_t(1000), int64_t(200), int64_t(7), 16, 4, 256));
  cases.emplace_back("select_rows f32 1024", tritium::test::compile_cuda(od::select_rows_kernel(), check.named("select_rows f32"),
                                                                         addr<float>(0), addr<float>(1), addr<int64_t>(2),
                                                                         int64_t(1024), int64_t(1024), int64_t(0), 32, 1, 1024));
  for (int pass : {0, 3})
    cases.emplace_back("select_count f32 pass " + std::to_string(pass),
                       tritium::test::compile_cuda(od::select_count_kernel(), check.named("select_count f32"), addr<float>(0),
                                                   addr<int32_t>(1), int64_t(1) << 20, int64_t(0), int64_t(2048), int64_t(512), 32,
                                                   pass, false, 2048));
  cases.emplace_back("select_count f16 pass 1",
                     tritium::test::compile_cuda(od::select_count_kernel(), check.named("select_count f16"),
                                                 addr<tritium::f16_t>(0), addr<int32_t>(1), int64_t(100000), int64_t(7),
                                                 int64_t(4096), int64_t(25), 16, 1, true, 1024));
  cases.emplace_back("select_rows f64 2048",
                     tritium::test::compile_cuda(od::select_rows_kernel(), check.named("select_rows f64"), addr<double>(0),
                                                 addr<double>(1), addr<int64_t>(2), int64_t(100), int64_t(2000), int64_t(0),
                                                 64, 1, 2048));
  cases.emplace_back("select_count i64 pass 5",
                     tritium::test::compile_cuda(od::select_count_kernel(), check.named("select_count i64"), addr<int64_t>(0),
                                                 addr<int32_t>(1), int64_t(100000), int64_t(3), int64_t(4096), int64_t(25),
                                                 64, 5, true, 1024));
  cases.emplace_back("select_find f32",
                     tritium::test::compile_cuda(od::select_find_kernel(), check.named("select_find f32"), addr<float>(0),
                                                 addr<int32_t>(1), addr<int32_t>(2), int64_t(100000), int64_t(0),
                                                 int64_t(4096), int64_t(25), 32, 1024));
  cases.emplace_back("select_index bf16",
                     tritium::test::compile_cuda(od::select_index_kernel(), check.named("select_index bf16"),
                                                 addr<tritium::bf16_t>(0), addr<int32_t>(1), addr<int32_t>(2),
                                                 addr<tritium::bf16_t>(3), addr<int64_t>(4), int64_t(100000), int64_t(0),
                                                 int64_t(4096), int64_t(25), 16, 32, 1024));
  cases.emplace_back("select_value bf16",
                     tritium::test::compile_cuda(od::select_value_kernel(), check.named("select_value bf16"), addr<int32_t>(0),
                                                 addr<tritium::bf16_t>(1), int64_t(1) << 20, 16, d(DType::bf16)));
  for (const auto& [what, ks] : cases) {
    const std::string body = tritium::test::kernel_body(ks);
    BOOST_TEST(body.find("tt_scratch_cta +") == std::string::npos, what << ": a buffer in global scratch");
  }
  // Through the layout generator too (TRITIUM_CUDA_CODEGEN=layouts, scripts/gpu_layouts.sh).
  auto layouts = tritium::test::CudaCheck().budget(cuda::kSharedMemoryBudget).warps(4);
  tritium::test::compile_cuda(od::select_rows_kernel(), layouts.named("select_rows f32 (layouts)"), addr<float>(0),
                              addr<float>(1), addr<int64_t>(2), int64_t(1024), int64_t(1024), int64_t(0), 32, 1, 1024);
  tritium::test::compile_cuda(od::select_rows_kernel(), layouts.named("select_rows bf16 4 x 256 (layouts)"),
                              addr<tritium::bf16_t>(0), addr<tritium::bf16_t>(1), addr<int64_t>(2), int64_t(1000),
                              int64_t(200), int64_t(7), 16, 4, 256);
  tritium::test::compile_cuda(od::select_count_kernel(), layouts.named("select_count f32 (layouts)"), addr<float>(0),
                              addr<int32_t>(1), int64_t(1) << 20, int64_t(0), int64_t(2048), int64_t(512), 32, 2, false, 2048);
  tritium::test::compile_cuda(od::select_index_kernel(), layouts.named("select_index f32 (layouts)"), addr<float>(0),
                              addr<int32_t>(1), addr<int32_t>(2), addr<float>(3), addr<int64_t>(4), int64_t(100000),
                              int64_t(0), int64_t(4096), int64_t(25), 32, 32, 2048);
}

// What sends a kernel through layouts: a reshape that moves elements between dims, not one that
// only adds or drops dims of size 1.
BOOST_AUTO_TEST_CASE(reshapes_that_move_elements) {
  namespace tl = tritium::tl;
  auto moves = [](tritium::Kernel& k, auto... args) {
    auto f = k.optimized_function(args...);
    int found = 0, moving = 0;
    f->walk([&](tritium::ir::Op* op) {
      if (op->kind != tritium::ir::OpKind::Reshape) return;
      ++found;
      moving += cuda::reshape_moves_elements(*op);
    });
    return std::pair{found, moving};
  };
  auto unit = tritium::kernel("unit_reshape", [](tl::ptr<float> x, tl::ptr<float> y) {
    auto v = tl::load(x + tl::arange(0, 64));
    tl::store(y + tl::arange(0, 64)(tl::_, tl::None), tl::reshape(v * 2, {64, 1}));
  });
  auto split = tritium::kernel("split_reshape", [](tl::ptr<float> x, tl::ptr<float> y) {
    auto v = tl::load(x + tl::arange(0, 64));
    tl::store(y + tl::arange(0, 64), tl::reshape(tl::sum(tl::reshape(v, {8, 8}), 0, true) + tl::zeros({8, 8}, tl::float32), {64}));
  });
  auto [n_unit, m_unit] = moves(unit, addr<float>(0), addr<float>(1));
  auto [n_split, m_split] = moves(split, addr<float>(0), addr<float>(1));
  BOOST_TEST(n_unit >= 1);
  BOOST_TEST(m_unit == 0);
  BOOST_TEST(m_split == 2);
  BOOST_TEST(n_split == 2);
}

// ops/reduce.cpp's kernel in the launches of a split reduction (ops/reduce_plan.h): [16384, 1024]
// over dim 0 as an H100's plan cuts it (128 chunks of 128 rows, tiles [16, 256]) and a full
// reduction of 2^24 (512 chunks of 32768, tiles [1, 1024]), both launches, every kind.
// ops/reduce.cpp's kernel without a second factor or epilogue (y and z are x, MUL false, EPI 0).
template <class X, class XI, class O, class OV, class S>
void reduce_launch(const std::string& what, X* x, XI* xi, O* out, OV* out_v, int64_t o, int64_t r, int64_t i,
                   int64_t so, int64_t sr, int64_t si, int64_t chunk, double scale, int kind, int acc, bool inner,
                   S t0, S t1, bool idx_in, bool val_out) {
  const int64_t chunks = (std::max<int64_t>(r, 1) + chunk - 1) / chunk;
  compile(tritium::ops::detail::plain_reduce_kernel(), what, x, xi, x, x, out, out_v, out, out, o, r, i, so, sr, si,
          int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(0), chunk, chunks, scale, 0.0, kind, acc, inner,
          static_cast<int>(t0), static_cast<int>(t1), idx_in, val_out, false, 0, false, 0);
}

BOOST_AUTO_TEST_CASE(split_reduce_launches) {
  if (!nvrtc_or_skip()) return;
  const int64_t R = 16384, I = 1024, S = 128;
  for (int kind = 0; kind < 6; ++kind) {
    const bool arg = kind >= 4;
    const int first = kind == 1 ? 0 : kind;  // mean's first launch sums
    also_sm80 = kind == 0 || kind == 5;
    const std::string name = "reduce kind " + std::to_string(kind);
    // Columns, f16 input: partials in f32 (argmax/argmin: i64 indices and f32 values).
    if (arg) {
      reduce_launch(name + " columns, first launch", addr<tritium::f16_t>(0), addr<tritium::f16_t>(0), addr<int64_t>(1),
                    addr<float>(2), int64_t(1), R, I, R * I, I, int64_t(1), S, 1.0, first, d(DType::f32), true, 16, 256,
                    false, true);
      reduce_launch(name + " columns, over the partials", addr<float>(2), addr<int64_t>(1), addr<int64_t>(3),
                    addr<int64_t>(3), int64_t(1), S, I, S * I, I, int64_t(1), S, 1.0 / R, kind, d(DType::f32), true, 16,
                    256, true, false);
    } else {
      reduce_launch(name + " columns, first launch", addr<tritium::f16_t>(0), addr<tritium::f16_t>(0), addr<float>(1),
                    addr<float>(1), int64_t(1), R, I, R * I, I, int64_t(1), S, 1.0, first, d(DType::f32), true, 16, 256,
                    false, false);
      reduce_launch(name + " columns, over the partials", addr<float>(1), addr<float>(1), addr<tritium::f16_t>(3),
                    addr<tritium::f16_t>(3), int64_t(1), S, I, S * I, I, int64_t(1), S, 1.0 / R, kind, d(DType::f32), true,
                    16, 256, false, false);
    }
  }
  also_sm80 = false;
  // Rows, f32: a full reduction's chunks, then one program over 512 partials.
  const int64_t N = int64_t(1) << 24, C = 32768, P = 512;
  reduce_launch("reduce sum rows, first launch", addr<float>(0), addr<float>(0), addr<float>(1), addr<float>(1),
                int64_t(1), N, int64_t(1), N, int64_t(1), int64_t(0), C, 1.0, 0, d(DType::f32), false, 1, 1024, false, false);
  reduce_launch("reduce argmax rows, first launch", addr<float>(0), addr<float>(0), addr<int64_t>(1), addr<float>(2),
                int64_t(1), N, int64_t(1), N, int64_t(1), int64_t(0), C, 1.0, 4, d(DType::f32), false, 1, 1024, false, true);
  reduce_launch("reduce argmax rows, over the partials", addr<float>(2), addr<int64_t>(1), addr<int64_t>(3),
                addr<int64_t>(3), int64_t(1), P, int64_t(1), P, int64_t(1), int64_t(1), P, 1.0, 4, d(DType::f32), false, 4,
                1024, true, false);
  reduce_launch("reduce amin i32 columns, first launch", addr<int32_t>(0), addr<int32_t>(0), addr<int32_t>(1),
                addr<int32_t>(1), int64_t(3), R, int64_t(5), R * 5, int64_t(5), int64_t(1), int64_t(1024), 1.0, 3,
                d(DType::i32), true, 256, 16, false, false);
  // max.dim of [16384, 1024] bf16 along dim -1 (no split): indices and the values, one launch.
  reduce_launch("max.dim bf16 rows, one launch", addr<tritium::bf16_t>(0), addr<tritium::bf16_t>(0), addr<int64_t>(1),
                addr<tritium::bf16_t>(2), int64_t(16384), int64_t(1024), int64_t(1), int64_t(1024), int64_t(1),
                int64_t(0), int64_t(1024), 1.0, 4, d(DType::f32), false, 1, 1024, false, true);
}

// argmax of [16384, 1024] f32 and bf16 along the last dim as the plan launches it (one program a
// row, tiles [1, 1024], no split): the lanes carry i32 positions (no [1,1024] i64 block in
// registers; the only i64 is the stored index) and compare no index per element.
BOOST_AUTO_TEST_CASE(argmax_rows_carry_i32_positions) {
  if (!nvrtc_or_skip()) return;
  const int64_t O = 16384, R = 1024;
  for (bool bf : {false, true}) {
    const std::string what = std::string("argmax rows ") + (bf ? "bf16" : "f32");
    auto check = tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).named(what);
    auto run = [&](auto* x) {
      return tritium::test::compile_cuda(tritium::ops::detail::plain_reduce_kernel(), check, x, x, x, x,
                                         addr<int64_t>(1), addr<int64_t>(1), addr<int64_t>(1), addr<int64_t>(1), O, R, int64_t(1), R, int64_t(1),
                                         int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(0), R,
                                         int64_t(1), 1.0, 0.0, 4, d(DType::f32), false, 1, 1024, false, false, false, 0,
                                         false, 0);
    };
    cuda::KernelSource ks = bf ? run(addr<tritium::bf16_t>(0)) : run(addr<float>(0));
    const std::string body = tritium::test::kernel_body(ks);
    BOOST_TEST(body.find("int32_t r") != std::string::npos, what << ": no i32 position block");
    BOOST_TEST(body.find("int64_t r") == std::string::npos, what << ": an i64 block in registers");
    // bf16 rows of 1024 launch 2 warps (ops/reduce_plan.h's row_warps: 32 bytes a thread).
    if (bf) {
      check.warps(2).named(what + ", 2 warps");
      run(addr<tritium::bf16_t>(0));
    }
  }
}

// bf16 rows as the reductions launch them: rows of 1024 one a program (tile [1, 1024]) and two
// ([2, 1024], row_stats' tile for them before), sum and var; full reductions in blocks of 2048.
BOOST_AUTO_TEST_CASE(bf16_rows_of_1024) {
  if (!nvrtc_or_skip()) return;
  using bf = tritium::bf16_t;
  const int64_t O = 16384, R = 1024;
  for (int bo : {2, 1}) {  // the tile the ops launch last (TRITIUM_DUMP keeps the last)
    reduce_launch("reduce sum bf16 rows, tile [" + std::to_string(bo) + ", 1024]", addr<bf>(0), addr<bf>(0), addr<bf>(1),
                  addr<bf>(1), O, R, int64_t(1), R, int64_t(1), int64_t(0), R, 1.0, 0, d(DType::f32), false, bo, 1024,
                  false, false);
    compile(tritium::ops::detail::row_stats_kernel(), "row_stats var bf16, tile [" + std::to_string(bo) + ", 1024]",
            addr<bf>(0), addr<bf>(1), addr<bf>(2), addr<bf>(2), addr<int32_t>(3), O, R, int64_t(1), R, 1.0 / 1023, 0.5, 0,
            d(DType::f32), d(DType::bf16), false, bo, 1024, 0, 0, 0, 0);
  }
  // A full reduction of 2^24 bf16: blocks of 2048 (ops/reduce_plan.h's max_row_block), argmax too.
  const int64_t N = int64_t(1) << 24, C = 32768;
  reduce_launch("reduce sum bf16 all, first launch, [1, 2048]", addr<bf>(0), addr<bf>(0), addr<float>(1), addr<float>(1),
                int64_t(1), N, int64_t(1), N, int64_t(1), int64_t(0), C, 1.0, 0, d(DType::f32), false, 1, 2048, false, false);
  reduce_launch("reduce argmax bf16 all, first launch, [1, 2048]", addr<bf>(0), addr<bf>(0), addr<int64_t>(1),
                addr<float>(2), int64_t(1), N, int64_t(1), N, int64_t(1), int64_t(0), C, 1.0, 4, d(DType::f32), false, 1,
                2048, false, true);
  compile(tritium::ops::detail::row_stats_kernel(), "row_stats prod bf16 chunks, [1, 2048]", addr<bf>(0), addr<float>(1),
          addr<float>(2), addr<float>(2), addr<int32_t>(3), int64_t(1), N, int64_t(512), C, 0.0, 0.0, 2, d(DType::f32),
          d(DType::f32), false, 1, 2048, 0, 0, 0, 0);
  // prod of all 2^24 bf16 in one launch: 512 chunks, the last program multiplies the partials.
  compile(tritium::ops::detail::row_stats_kernel(), "row_stats prod bf16 all, one launch", addr<bf>(0), addr<bf>(1),
          addr<bf>(1), addr<float>(2), addr<int32_t>(3), int64_t(1), N, int64_t(512), C, 0.0, 0.0, 2, d(DType::f32),
          d(DType::bf16), false, 1, 2048, 2, d(DType::f32), d(DType::f32), 1024);
  // all of f32 rows split (bool partials, i32 second accumulation).
  compile(tritium::ops::detail::row_stats_kernel(), "row_stats all f32, one launch", addr<float>(0), addr<bool>(1),
          addr<bool>(1), addr<bool>(2), addr<int32_t>(3), int64_t(3), N, int64_t(100), C, 0.0, 0.0, 10, d(DType::f32),
          d(DType::i1), false, 1, 2048, 10, d(DType::i32), d(DType::i1), 128);
}

// The matrix-vector products of ops::mv / addmv / dot (detail::matrix_vector): products x * y summed
// in f32, alpha * sum + beta * z in the epilogue; rows (bf16 [M, K] @ [K]), columns (a transposed
// f32 matrix) and a split dot product's two launches.
BOOST_AUTO_TEST_CASE(matrix_vector_launches) {
  if (!nvrtc_or_skip()) return;
  auto& k = tritium::ops::detail::plain_reduce_kernel();
  using bf = tritium::bf16_t;
  const int64_t M = 16384, K = 1024;
  also_sm80 = true;
  compile(k, "mv bf16 rows, addmv epilogue", addr<bf>(0), addr<bf>(0), addr<bf>(1), addr<bf>(2), addr<bf>(3),
          addr<bf>(3), addr<bf>(3), addr<bf>(3), M, K, int64_t(1), K, int64_t(1), int64_t(0), int64_t(0), int64_t(1), int64_t(0), int64_t(1),
          int64_t(0), K, int64_t(1), 2.0, 0.5, 0, d(DType::f32), false, 1, 1024, false, false, true, 2, false, 0);
  also_sm80 = false;
  // Fewer warps compile too (ops/reduce_plan.h's row_warps gives the compare kinds - amax,
  // max.dim, argmax - 2 for bf16 rows of 1024 and 1 for [1, 16] f32; sums and mv launch 4).
  auto warps = [](int w, const char* what) {
    return tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).warps(w).named(what);
  };
  tritium::test::compile_cuda(k, warps(2, "mv bf16 rows, 2 warps"),
                              addr<bf>(0), addr<bf>(0), addr<bf>(1), addr<bf>(2), addr<bf>(3), addr<bf>(3), addr<bf>(3),
                              addr<bf>(3), M, K, int64_t(1), K, int64_t(1), int64_t(0), int64_t(0), int64_t(1), int64_t(0),
                              int64_t(1), int64_t(0), K, int64_t(1), 2.0, 0.5, 0, d(DType::f32), false, 1, 1024, false,
                              false, true, 2, false, 0);
  tritium::test::compile_cuda(k, warps(1, "sum f32 rows of 16, 1 warp"),
                              addr<float>(0), addr<float>(0), addr<float>(0), addr<float>(0), addr<float>(1), addr<float>(1),
                              addr<float>(1), addr<float>(1), int64_t(1), int64_t(16), int64_t(1), int64_t(16), int64_t(1),
                              int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(16), int64_t(1),
                              1.0, 0.0, 0, d(DType::f32), false, 1, 16, false, false, false, 0, false, 0);
  compile(k, "mv f32 columns", addr<float>(0), addr<float>(0), addr<float>(1), addr<float>(0), addr<float>(3),
          addr<float>(3), addr<float>(3), addr<float>(3), int64_t(1), K, M, int64_t(0), M, int64_t(1), int64_t(0), int64_t(1), int64_t(0), int64_t(0),
          int64_t(0), K, int64_t(1), 1.0, 0.0, 0, d(DType::f32), true, 16, 256, false, false, true, 1, false, 0);
  const int64_t N = int64_t(1) << 24, C = 32768, P = 512;
  compile(k, "dot f32, first launch", addr<float>(0), addr<float>(0), addr<float>(1), addr<float>(0), addr<float>(2),
          addr<float>(2), addr<float>(2), addr<float>(2), int64_t(1), N, int64_t(1), N, int64_t(1), int64_t(0), int64_t(0), int64_t(1), int64_t(0),
          int64_t(0), int64_t(0), C, N / C, 1.0, 0.0, 0, d(DType::f32), false, 1, 1024, false, false, true, 0, false, 0);
  compile(k, "dot f32, over the partials", addr<float>(2), addr<float>(2), addr<float>(2), addr<float>(2),
          addr<float>(3), addr<float>(3), addr<float>(3), addr<float>(3), int64_t(1), P, int64_t(1), P, int64_t(1), int64_t(1), int64_t(0), int64_t(0),
          int64_t(0), int64_t(0), int64_t(0), P, int64_t(1), 1.0, 0.0, 0, d(DType::f32), false, 4, 1024, false, false, false, 1, false, 0);
}

// Split reductions in one launch (ops/reduce.cpp, TS > 0): every program stores its partial and
// counts itself in an i32 counter (a scalar acq_rel atomic: barrier, fences, one thread), the last
// of a tile combines the partials from L2 (.cg) in order and zeroes the counter. A full sum of
// 2^24 bf16 (512 chunks, [1, 2048] tiles), amax of f32 columns (128 chunks of [16, 256]) and a
// split addmv-like dot with its epilogue.
BOOST_AUTO_TEST_CASE(split_reductions_in_one_launch) {
  if (!nvrtc_or_skip()) return;
  auto& k = tritium::ops::detail::plain_reduce_kernel();
  using bf = tritium::bf16_t;
  const int64_t N = int64_t(1) << 24, C = 32768, S = N / C;
  auto check = tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).named("sum bf16 all, one launch");
  cuda::KernelSource ks = tritium::test::compile_cuda(
      k, check, addr<bf>(0), addr<bf>(0), addr<bf>(0), addr<bf>(0), addr<bf>(1), addr<bf>(1), addr<float>(2),
      addr<int32_t>(3), int64_t(1), N, int64_t(1), N, int64_t(1), int64_t(0), int64_t(0), int64_t(0), int64_t(0),
      int64_t(0), int64_t(0), C, S, 1.0, 0.0, 0, d(DType::f32), false, 1, 2048, false, false, false, 0, false, 1024);
  const std::string body = tritium::test::kernel_body(ks);
  BOOST_TEST(tritium::test::occurrences(body, "atomicAdd") == 1u);
  BOOST_TEST(tritium::test::occurrences(body, "tt_fence_acq_rel()") == 2u);
  BOOST_TEST(body.find("_cg") != std::string::npos, "the partials are not loaded from L2 (.cg)");
  const int64_t R = 16384, I = 1024;
  also_sm80 = true;
  compile(k, "amax f32 columns, one launch", addr<float>(0), addr<float>(0), addr<float>(0), addr<float>(0),
          addr<float>(1), addr<float>(1), addr<float>(2), addr<int32_t>(3), int64_t(1), R, I, R * I, I, int64_t(1),
          int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(0), int64_t(128), int64_t(128), 1.0, 0.0, 2,
          d(DType::f32), true, 16, 256, false, false, false, 0, false, 16);
  also_sm80 = false;
  compile(k, "dot bf16 with epilogue, one launch", addr<bf>(0), addr<bf>(0), addr<bf>(1), addr<bf>(2), addr<bf>(3),
          addr<bf>(3), addr<float>(4), addr<int32_t>(5), int64_t(1), N, int64_t(1), N, int64_t(1), int64_t(0), int64_t(0),
          int64_t(1), int64_t(0), int64_t(0), int64_t(0), C, S, 2.0, 0.5, 0, d(DType::f32), false, 1, 2048, false, false,
          true, 2, false, 1024);
}

BOOST_AUTO_TEST_SUITE_END()

#else

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_reductions)
BOOST_AUTO_TEST_CASE(skipped_without_the_cuda_backend) { BOOST_TEST_MESSAGE("skipped: the CUDA backend is not built"); }
BOOST_AUTO_TEST_SUITE_END()

#endif
