// Split-K in ops::matmul (ops/matmul_split_k.h): the heuristic and TRITIUM_MATMUL_SPLIT_K, and
// the values of split products against a float64 host reference - forced splits of 2, 3 and 7
// with K a multiple of neither the block nor the split, the heuristic's split of a long K,
// batched and broadcast batches, transposed operands, f32/f16/bf16/f64 and tf32, and autograd
// through Linear. The test binary poisons every new buffer (tests/main.cpp), so C and the
// workspace of partial tiles hold NaN until the kernels write them.
#include "test_support.h"
#include "gradcheck_support.h"
#include "matmul_reference.h"

#include "nn/linear_functional.h"
#include "ops/matmul_split_k.h"
#include "ops/ops.h"
#include "runtime/thread_pool.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ops = tritium::ops;
namespace split_k = tritium::ops::split_k;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
using tritium::Tensor;
using namespace tritium::runtime;
using namespace tritium::test::matmul_reference;

namespace {

constexpr const char* kVar = "TRITIUM_MATMUL_SPLIT_K";

// K for which a forced split of S gives exactly S chunks with chunks in multiples of 32 (the
// CPU's BLOCK_K) and of 64 (the GPU's granule): none of them a multiple of the block or of S.
int64_t k_for(int64_t s) { return s == 2 ? 200 : s == 3 ? 333 : 445; }

// The split ops::matmul takes for a @ b on the current backend (2-D, or batched with nbatch).
int64_t splits_of(int64_t M, int64_t N, int64_t K, int64_t nbatch, DType dtype) {
  return split_k::plan_for_product(M, N, K, nbatch, dtype, tritium::default_device()).splits;
}

std::string env_value(int64_t s) { return std::to_string(s); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_matmul_split_k)

// The heuristic on its own: split while the tiles leave workers idle, as far as each split keeps
// 8 granules of K, at most 16, taking the split of least modelled time (whole waves of programs,
// each a chunk plus 4 granules, and the partials' cost per split); TRITIUM_MATMUL_SPLIT_K forces a
// split or none.
BOOST_AUTO_TEST_CASE(plan) {
  tt::ScopedEnv unset(kVar, nullptr);
  auto is = [](split_k::Plan p, int64_t s, int64_t chunk) { return p.splits == s && p.chunk == chunk; };
  // A GPT Linear's weight gradient on an H100: 1536 x 384 = 36 tiles of 128 for 132 SMs, K = 16384.
  // 4 splits (the old rule, cdiv(132, 36)) are 144 programs: a second wave of 12 that costs a whole
  // chunk (2 x 4096 + prologues); 3 are one wave of 108 (5504); with free partials 7 splits fill 2
  // waves (2 x 2368).
  BOOST_TEST(is(split_k::plan(36, 16384, 64, 132, 328), 3, 5504));
  BOOST_TEST(is(split_k::plan(36, 16384, 64, 132), 7, 2368));
  BOOST_TEST(is(split_k::plan(9, 16384, 64, 132, 37), 14, 1216));  // 126 programs, not 15 x 9 = 135
  BOOST_TEST(is(split_k::plan(27, 16384, 64, 132, 110), 4, 4096));  // 108 programs, not 5 x 27 = 135
  BOOST_TEST(is(split_k::plan(36, 16384, 64, 132, 100000), 1, 16384));  // partials dearer than any split
  BOOST_TEST(is(split_k::plan(1536, 384, 64, 132), 1, 384));    // enough tiles
  BOOST_TEST(is(split_k::plan(16, 512, 64, 132), 1, 512));      // K too short for 2 splits of 8 x 64
  BOOST_TEST(is(split_k::plan(16, 1024, 64, 132), 2, 512));     // 2 splits of 8 x 64
  BOOST_TEST(is(split_k::plan(1, 100000, 64, 132), 16, 6272));  // at most 16
  BOOST_TEST(is(split_k::plan(1, 4096, 32, 2), 2, 2048));       // 2 CPU threads, one tile
  BOOST_TEST(is(split_k::plan(1, 4096, 32, 1), 1, 4096));       // one thread: nothing to fill
  {
    tt::ScopedEnv forced(kVar, "7");
    BOOST_TEST(is(split_k::plan(1000, 445, 64, 132), 7, 64));  // forced, whatever the tiles
    BOOST_TEST(is(split_k::plan(1, 100, 32, 2), 4, 32));      // K has 4 granules: 4 splits
  }
  {
    tt::ScopedEnv never(kVar, "1");
    BOOST_TEST(is(split_k::plan(1, 100000, 64, 132), 1, 100000));
  }
  {
    tt::ScopedEnv heuristic(kVar, "0");
    BOOST_TEST(is(split_k::plan(36, 16384, 64, 132, 328), 3, 5504));
  }
}

BOOST_AUTO_TEST_CASE(forced_splits_in_every_dtype) {
  tt::for_each_backend([&](const tt::Backend&) {
    uint32_t seed = 1;
    for (int64_t s : {2, 3, 7}) {
      tt::ScopedEnv forced(kVar, env_value(s).c_str());
      const int64_t K = k_for(s);
      BOOST_TEST_CONTEXT("S = " << s << ", K = " << K) {
        for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16}) BOOST_TEST(splits_of(37, 45, K, 1, d) == s);
        check<float>(random_tensor<float>({37, K}, seed), random_tensor<float>({K, 45}, seed + 1), "f32");
        check<double>(random_tensor<double>({37, K}, seed + 2), random_tensor<double>({K, 45}, seed + 3), "f64");
        check<f16_t>(random_tensor<f16_t>({37, K}, seed + 4), random_tensor<f16_t>({K, 45}, seed + 5), "f16");
        check<bf16_t>(random_tensor<bf16_t>({37, K}, seed + 6), random_tensor<bf16_t>({K, 45}, seed + 7), "bf16");
        // Transposed (column-major) operands, read through their strides.
        check<float>(t_of(random_tensor<float>({K, 37}, seed + 8)), t_of(random_tensor<float>({45, K}, seed + 9)),
                     "A^T @ B^T");
        check<bf16_t>(random_tensor<bf16_t>({37, K}, seed + 10), t_of(random_tensor<bf16_t>({45, K}, seed + 11)),
                      "bf16 A @ B^T");
        // One row or one column: a matrix-vector product split along K.
        check<float>(random_tensor<float>({1, K}, seed + 12), random_tensor<float>({K, 300}, seed + 13), "1 row");
        check<float>(random_tensor<float>({130, K}, seed + 14), random_tensor<float>({K}, seed + 15), "matrix @ vector");
      }
      seed += 16;
    }
  });
}

BOOST_AUTO_TEST_CASE(batched_and_broadcast) {
  tt::for_each_backend([&](const tt::Backend&) {
    tt::ScopedEnv forced(kVar, "3");
    const int64_t K = k_for(3);
    BOOST_TEST(splits_of(20, 19, K, 6, DType::f32) == 3);
    check<float>(random_tensor<float>({2, 3, 20, K}, 31), random_tensor<float>({K, 19}, 32), "[2,3,M,K] @ [K,N]");
    check<float>(random_tensor<float>({20, K}, 33), random_tensor<float>({5, K, 19}, 34), "[M,K] @ [5,K,N]");
    check<float>(random_tensor<float>({3, 1, 20, K}, 35), random_tensor<float>({1, 4, K, 19}, 36),
                 "[3,1] x [1,4] batch");
    check<bf16_t>(random_tensor<bf16_t>({4, 33, K}, 37), t_of(random_tensor<bf16_t>({18, K}, 38)), "bf16 [4] @ B^T");
    // Non-collapsible batch strides: three permuted batch dims (a host loop over the first).
    Tensor p = permute_of(random_tensor<float>({3, 2, 4, 16, K}, 39), {2, 0, 1, 3, 4});  // [4,3,2,16,K]
    check<float>(p, random_tensor<float>({2, K, 7}, 40), "permuted 3 batch dims");
    check<double>(random_tensor<double>({3, 17, K}, 41), random_tensor<double>({3, K, 9}, 42), "f64 batched");
  });
}

// Without the variable, a product of one tile over a long K splits on any device with more than
// one worker (SMs, or threads), and gives the product's values.
BOOST_AUTO_TEST_CASE(heuristic_splits_a_long_k) {
  tt::for_each_backend([&](const tt::Backend& be) {
    tt::ScopedEnv unset(kVar, nullptr);
    const bool parallel = !be.device.is_cpu() || tritium::runtime::ThreadPool::global().size() > 1;
    if (parallel) BOOST_TEST(splits_of(16, 20, 4100, 1, DType::f32) > 1);
    BOOST_TEST(splits_of(2048, 2048, 4100, 1, DType::f32) == 1);  // tiles enough
    check<float>(random_tensor<float>({16, 4100}, 51), random_tensor<float>({4100, 20}, 52), "f32 long K");
    check<f16_t>(t_of(random_tensor<f16_t>({4100, 16}, 53)), random_tensor<f16_t>({4100, 20}, 54), "f16 A^T long K");
    check<double>(random_tensor<double>({16, 4100}, 55), random_tensor<double>({4100, 20}, 56), "f64 long K");
  });
}

// The partials are added in a fixed order: a split product is the same, bit for bit, every time;
// and it agrees with the unsplit one to rounding.
BOOST_AUTO_TEST_CASE(deterministic) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = random_tensor<float>({40, 445}, 61), b = random_tensor<float>({445, 50}, 62);
    std::vector<float> first, second, unsplit;
    {
      tt::ScopedEnv forced(kVar, "7");
      first = ops::matmul(a, b).to_vector<float>();
      second = ops::matmul(a, b).to_vector<float>();
    }
    {
      tt::ScopedEnv never(kVar, "1");
      BOOST_TEST(splits_of(40, 50, 445, 1, DType::f32) == 1);
      unsplit = ops::matmul(a, b).to_vector<float>();
    }
    BOOST_TEST(first == second);
    auto [shape, ref, mag] = reference<float>(a, b);
    tt::check_dot<float>(tt::host_vector<float>(unsplit.begin(), unsplit.end()), ref, mag, tol<float>(), "unsplit");
  });
}

// tf32 (set_float32_matmul_precision("high")): the split kernel's dot takes the same precision.
BOOST_AUTO_TEST_CASE(tf32) {
  tt::for_each_backend([&](const tt::Backend& be) {
    tt::ScopedEnv forced(kVar, "3");
    struct Restore {
      ~Restore() { ops::set_float32_matmul_precision("highest"); }
    } restore;
    ops::set_float32_matmul_precision("high");
    Tensor a = random_tensor<float>({70, 333}, 71), b = t_of(random_tensor<float>({90, 333}, 72));
    auto [shape, ref, mag] = reference<float>(a, b);
    auto out = ops::matmul(a, b).to_vector<float>();
    tt::host_vector<float> got(out.begin(), out.end());
    tt::check_dot<float>(got, ref, mag, be.name == "cpu" ? 1e-5 : 1e-3, "tf32 A @ B^T");
    if (be.name != "cpu") BOOST_TEST(tt::rel_error<float>(got, ref) > 3e-5, "tf32 on tensor cores, not fp32");
  });
}

// A Linear layer's three products (x W^T, dY W, dY^T x: the last two from autograd, on transposed
// views) all split 3 ways: the output and gradients against float64 on the host.
BOOST_AUTO_TEST_CASE(linear_autograd) {
  tt::for_each_backend([&](const tt::Backend&) {
    tt::ScopedEnv forced(kVar, "3");
    // Each product's reduction (K, N, M) is in (128, 192], so it splits in 3 chunks of 64: the GPU's
    // granule and two CPU blocks of 32. (90 x 77 x 70, as first written, gave 3 chunks of 32 on the
    // CPU but 2 of 64 on the H100.)
    const int64_t M = 150, K = 170, N = 140;
    for (auto [m, n, k] : {std::tuple{M, N, K}, std::tuple{M, K, N}, std::tuple{N, K, M}})
      BOOST_TEST(splits_of(m, n, k, 1, DType::f32) == 3);
    Tensor x = random_tensor<float>({M, K}, 81), w = random_tensor<float>({N, K}, 82), b = random_tensor<float>({N}, 83);
    Tensor g = random_tensor<float>({M, N}, 84);
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_();
    Tensor y = tritium::linear(x, w, b);
    y.backward(g);
    auto xv = logical<float>(x), wv = logical<float>(w), bv = logical<float>(b), gv = logical<float>(g);
    std::vector<double> y_ref(M * N), dx(M * K), dw(N * K), db(N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = bv[j];
        for (int64_t k = 0; k < K; ++k) {
          s += xv[i * K + k] * wv[j * K + k];
          dx[i * K + k] += gv[i * N + j] * wv[j * K + k];
          dw[j * K + k] += gv[i * N + j] * xv[i * K + k];
        }
        y_ref[i * N + j] = s;
        db[j] += gv[i * N + j];
      }
    auto host = [](const Tensor& t) {
      auto v = t.to_vector<float>();
      return tt::host_vector<float>(v.begin(), v.end());
    };
    tt::check_close<float>(host(y.detach()), y_ref, 1e-5, "y");
    tt::check_close<float>(host(x.grad()), dx, 1e-5, "dx");
    tt::check_close<float>(host(w.grad()), dw, 1e-5, "dw");
    tt::check_close<float>(host(b.grad()), db, 1e-5, "db");
  });
}

// The weight's gradient by central differences (f64), with the forward product and the weight
// gradient's product (reduction over 66 rows) both split in 3.
BOOST_AUTO_TEST_CASE(linear_gradcheck) {
  tt::for_each_backend([&](const tt::Backend&) {
    tt::ScopedEnv forced(kVar, "3");
    BOOST_TEST(splits_of(66, 2, 66, 1, DType::f64) == 3);
    BOOST_TEST(splits_of(2, 66, 66, 1, DType::f64) == 3);
    Tensor x = Tensor::from_vector(tt::random_vector<double>(66 * 66, 91), {66, 66});
    tt::gradcheck("linear, split K", [](const tt::GradInputs& in) { return tritium::linear(in[0], in[1], in[2]); },
                  {x, tt::input({2, 66}, 92), tt::input({2}, 93)});
  });
}

BOOST_AUTO_TEST_CASE(bad_environment_value) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = random_tensor<float>({8, 300}, 101), b = random_tensor<float>({300, 8}, 102);
    for (const char* v : {"abc", "-1", "3x", "2000", " 2"}) {
      tt::ScopedEnv bad(kVar, v);
      tt::check_throws([&] { ops::matmul(a, b); }, {"TRITIUM_MATMUL_SPLIT_K", v, "expected an integer in [0, 1024]"},
                       std::string("TRITIUM_MATMUL_SPLIT_K=") + v);
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
