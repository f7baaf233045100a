// ops::matmul: torch.matmul semantics against a float64 host reference; odd sizes, strided and
// transposed operands (read in place), batched with broadcasting, 1-D operands, f16/bf16/f64,
// errors.
#include "test_support.h"
#include "matmul_reference.h"

#include "ops/ops.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ops = tritium::ops;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
using tritium::Tensor;
using Shape = std::vector<int64_t>;
using namespace tritium::runtime;

using namespace tritium::test::matmul_reference;

BOOST_AUTO_TEST_SUITE(test_matmul)

BOOST_AUTO_TEST_CASE(two_d_odd_sizes) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int sizes[][3] = {{100, 77, 130}, {1, 1, 1},     {17, 1, 33},   {3, 200, 5},
                            {64, 64, 64},   {65, 31, 129}, {128, 512, 10}};
    uint32_t seed = 1;
    for (auto& s : sizes) {
      Tensor a = random_tensor<float>({s[0], s[1]}, seed++), b = random_tensor<float>({s[1], s[2]}, seed++);
      check<float>(a, b, fmt::format("{}x{}x{}", s[0], s[1], s[2]));
    }
  });
}

// Sizes around the CPU blocks (128, or 64 where that pads less: 192 = 3 x 64) and K around its
// block of 32, in every dtype.
BOOST_AUTO_TEST_CASE(sizes_around_the_blocks) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int sizes[][3] = {{192, 33, 129}, {200, 1, 257}, {129, 64, 127}, {256, 31, 16}, {16, 65, 300}};
    uint32_t seed = 200;
    for (auto& s : sizes) {
      auto what = fmt::format("{}x{}x{}", s[0], s[1], s[2]);
      check<float>(random_tensor<float>({s[0], s[1]}, seed), random_tensor<float>({s[1], s[2]}, seed + 1), what);
      check<double>(random_tensor<double>({s[0], s[1]}, seed + 2), random_tensor<double>({s[1], s[2]}, seed + 3), what);
      check<f16_t>(random_tensor<f16_t>({s[0], s[1]}, seed + 4), random_tensor<f16_t>({s[1], s[2]}, seed + 5), what);
      check<bf16_t>(random_tensor<bf16_t>({s[0], s[1]}, seed + 6), random_tensor<bf16_t>({s[1], s[2]}, seed + 7), what);
      seed += 8;
    }
  });
}

// The test binary picks matmul's configs by heuristic (TRITIUM_AUTOTUNE=heuristic, tests/main.cpp);
// here the tuner benchmarks every fitting config, as the product does by default, and the kernel it
// picks is checked: a shape large enough for the large tiles and one off every block, per dtype.
BOOST_AUTO_TEST_CASE(tuned_configs_against_float64) {
  tt::ScopedEnv tune("TRITIUM_AUTOTUNE", "tune");
  tt::for_each_backend([&](const tt::Backend&) {
    const int sizes[][3] = {{384, 192, 520}, {129, 72, 257}};
    uint32_t seed = 700;
    for (auto& s : sizes) {
      auto what = fmt::format("tuned {}x{}x{}", s[0], s[1], s[2]);
      check<float>(random_tensor<float>({s[0], s[1]}, seed), random_tensor<float>({s[1], s[2]}, seed + 1), what);
      check<f16_t>(random_tensor<f16_t>({s[0], s[1]}, seed + 2), random_tensor<f16_t>({s[1], s[2]}, seed + 3), what);
      check<bf16_t>(random_tensor<bf16_t>({s[0], s[1]}, seed + 4), random_tensor<bf16_t>({s[1], s[2]}, seed + 5), what);
      seed += 6;
    }
  });
}

BOOST_AUTO_TEST_CASE(training_shapes_with_transposed_views) {
  tt::for_each_backend([&](const tt::Backend&) {
    // The MLP's matmuls: x @ W^T (W^T a view), g @ W, x^T @ g.
    Tensor x = random_tensor<float>({128, 784}, 11), w1 = random_tensor<float>({512, 784}, 12);
    Tensor w3 = random_tensor<float>({10, 512}, 13), h = random_tensor<float>({128, 512}, 14);
    Tensor g = random_tensor<float>({128, 512}, 15), g3 = random_tensor<float>({128, 10}, 16);
    check<float>(x, t_of(w1), "x @ W1^T");
    check<float>(h, t_of(w3), "h @ W3^T");
    check<float>(g3, w3, "g3 @ W3");
    check<float>(t_of(x), g, "x^T @ g");
    check<float>(t_of(h), g3, "h^T @ g3");
    // The transposed operand is read in place: the result does not depend on a copy.
    BOOST_TEST(!t_of(w1).is_contiguous());
  });
}

BOOST_AUTO_TEST_CASE(strided_operands) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor big = random_tensor<float>({60, 90}, 21);
    Tensor a = slice_of(slice_of(big, 0, 3, 50), 1, 1, 90, 2);  // [47, 45], strides [90, 2], offset
    Tensor b = slice_of(random_tensor<float>({45, 70}, 22), 1, 5, 70, 3);  // [45, 22], strides [70, 3]
    check<float>(a, b, "sliced with steps");
    check<float>(t_of(random_tensor<float>({90, 47}, 24)), t_of(slice_of(big, 0, 0, 33)),
                 "both transposed");  // [47,90]@[90,33]
    Tensor e = expand_of(random_tensor<float>({1, 45}, 23), {30, 45});  // stride-0 rows
    check<float>(e, b, "expanded rows");
  });
}

BOOST_AUTO_TEST_CASE(batched_and_broadcast) {
  tt::for_each_backend([&](const tt::Backend&) {
    check<float>(random_tensor<float>({2, 3, 20, 17}, 31), random_tensor<float>({17, 19}, 32), "[2,3,M,K] @ [K,N]");
    check<float>(random_tensor<float>({20, 17}, 33), random_tensor<float>({5, 17, 19}, 34), "[M,K] @ [5,K,N]");
    check<float>(random_tensor<float>({3, 1, 20, 17}, 35), random_tensor<float>({1, 4, 17, 19}, 36),
                 "[3,1] x [1,4] batch");
    check<float>(random_tensor<float>({4, 33, 40}, 37), random_tensor<float>({4, 40, 18}, 38), "same batch");
    // Non-collapsible batch strides: permuted batch dims, and three of them (host loop + kernel).
    Tensor p = permute_of(random_tensor<float>({3, 2, 4, 16, 9}, 39), {2, 0, 1, 3, 4});  // [4,3,2,16,9]
    check<float>(p, random_tensor<float>({2, 9, 7}, 40), "permuted 3 batch dims");
    Tensor q = transpose_of(random_tensor<float>({5, 6, 16, 9}, 41), 0, 1);  // [6,5,16,9]
    check<float>(q, t_of(random_tensor<float>({7, 9}, 42)), "transposed batch dims, B^T");
    tt::check_throws([] { ops::matmul(random_tensor<float>({2, 4, 3}, 1), random_tensor<float>({3, 3, 5}, 2)); },
                     {"matmul", "batch dimensions", "[2, 4, 3]", "[3, 3, 5]"}, "batch mismatch");
  });
}

BOOST_AUTO_TEST_CASE(one_d_operands) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor v = random_tensor<float>({37}, 51), w = random_tensor<float>({37}, 52);
    Tensor m = random_tensor<float>({23, 37}, 53), n = random_tensor<float>({37, 29}, 54);
    check<float>(v, w, "dot product");
    BOOST_TEST(ops::matmul(v, w).dim() == 0);
    check<float>(m, v, "matrix @ vector");
    check<float>(v, n, "vector @ matrix");
    check<float>(v, random_tensor<float>({3, 37, 8}, 55), "vector @ batch");
    check<float>(random_tensor<float>({3, 5, 37}, 56), v, "batch @ vector");
    check<float>(slice_of(random_tensor<float>({74}, 57), 0, 0, 74, 2), w, "strided vector");
  });
}

BOOST_AUTO_TEST_CASE(dtypes) {
  tt::for_each_backend([&](const tt::Backend&) {
    check<double>(random_tensor<double>({50, 70}, 61), random_tensor<double>({70, 33}, 62), "f64");
    check<double>(random_tensor<double>({2, 50, 70}, 63), t_of(random_tensor<double>({33, 70}, 64)), "f64 batched B^T");
    check<f16_t>(random_tensor<f16_t>({100, 77}, 65), random_tensor<f16_t>({77, 130}, 66), "f16");
    check<f16_t>(t_of(random_tensor<f16_t>({77, 100}, 67)), random_tensor<f16_t>({77, 30}, 68), "f16 A^T");
    check<bf16_t>(random_tensor<bf16_t>({100, 77}, 69), random_tensor<bf16_t>({77, 130}, 70), "bf16");
    check<bf16_t>(random_tensor<bf16_t>({3, 40, 64}, 71), random_tensor<bf16_t>({64, 24}, 72), "bf16 batched");
    // f16 accumulates in f32: a long K does not lose the small terms.
    check<f16_t>(random_tensor<f16_t>({16, 2048}, 73), random_tensor<f16_t>({2048, 16}, 74), "f16 long K");
  });
}

BOOST_AUTO_TEST_CASE(empty_sizes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor z = ops::matmul(random_tensor<float>({4, 0}, 81), random_tensor<float>({0, 3}, 82));
    BOOST_TEST(z.shape() == (Shape{4, 3}));
    BOOST_TEST((z.device() == be.device));
    auto zv = z.to_vector<float>();
    BOOST_TEST(std::all_of(zv.begin(), zv.end(), [](float f) { return f == 0; }));  // K = 0: zeros
    BOOST_TEST(ops::matmul(random_tensor<float>({0, 5}, 83), random_tensor<float>({5, 3}, 84)).shape() ==
               (Shape{0, 3}));
    BOOST_TEST(ops::matmul(random_tensor<float>({2, 0, 5}, 85), random_tensor<float>({5, 3}, 86)).numel() == 0);
  });
}

// set_float32_matmul_precision: "highest" (the default) keeps fp32 exact on every backend (the
// other tests); "high" puts fp32 matmuls on tf32 tensor cores on a GPU - the error of tf32
// (~3e-4), well above fp32's - and changes nothing on the CPU.
BOOST_AUTO_TEST_CASE(float32_matmul_precision) {
  BOOST_TEST(ops::get_float32_matmul_precision() == "highest");
  tt::check_throws([] { ops::set_float32_matmul_precision("fast"); },
                   {"set_float32_matmul_precision", "\"highest\", \"high\" or \"medium\"", "\"fast\""}, "bad value");
  BOOST_TEST(ops::get_float32_matmul_precision() == "highest");
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor a = random_tensor<float>({300, 517}, 101), b = t_of(random_tensor<float>({260, 517}, 102));
    auto [shape, ref, mag] = reference<float>(a, b);
    struct Restore {
      ~Restore() { ops::set_float32_matmul_precision("highest"); }
    } restore;
    for (const char* p : {"high", "medium"}) {
      ops::set_float32_matmul_precision(p);
      BOOST_TEST(ops::get_float32_matmul_precision() == "high");
      auto out = ops::matmul(a, b).to_vector<float>();
      tt::host_vector<float> got(out.begin(), out.end());
      BOOST_TEST_CONTEXT("precision " << p) {
        tt::check_dot<float>(got, ref, mag, be.name == "cpu" ? 1e-5 : 1e-3, "A @ B^T");
        if (be.name != "cpu") BOOST_TEST(tt::rel_error<float>(got, ref) > 3e-5, "tf32 on tensor cores, not fp32");
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = random_tensor<float>({128, 784}, 91), b = random_tensor<float>({512, 10}, 92);
    tt::check_throws([&] { ops::matmul(a, b); },
                     {"matmul: shapes [128, 784] and [512, 10] cannot be multiplied (784 vs 512)"}, "inner dim");
    tt::check_throws([&] { ops::matmul(random_tensor<float>({5}, 1), random_tensor<float>({6}, 2)); },
                     {"shapes [5] and [6] cannot be multiplied (5 vs 6)"}, "1-D mismatch");
    tt::check_throws([&] { ops::matmul(a, random_tensor<double>({784, 3}, 3)); },
                     {"matmul", "same dtype", "f32", "f64"}, "dtype mismatch");
    Tensor s = select_of(random_tensor<float>({3}, 4), 0, 1);  // 0-dim
    tt::check_throws([&] { ops::matmul(s, a); }, {"at least 1D", "0D and 2D"}, "0-dim operand");
    tt::check_throws([&] { ops::matmul(random_tensor<int32_t>({2, 2}, 5), random_tensor<int32_t>({2, 2}, 6)); },
                     {"matmul", "i32", "floating-point dtype"}, "integer dtype");
    tt::check_throws([&] { ops::matmul(Tensor(), a); }, {"undefined"}, "undefined operand");
  });
}

BOOST_AUTO_TEST_SUITE_END()
