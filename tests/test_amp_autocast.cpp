// nn::autocast (issue 31 item 4): the dtype each autocast class gives (lower_precision_fp, fp32,
// promote, none) against float64 host references of the same rounding, nested and disabled
// scopes, scopes of the other device type, PyTorch's cast cache, gradients of an autocast forward
// against the f32 ones, the declared classes against PyTorch's lists, and the bad arguments.
// Every test runs on every backend.
#include <cmath>
#include <string>
#include <vector>

#include "nn/autocast.h"
#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/matmul_family.h"
#include "ops/decl/op_decl.h"
#include "profiler/profile.h"
#include "test_support.h"

namespace tt = tritium::test;
using namespace tritium;

namespace {

Tensor random_f32(const std::vector<int64_t>& shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Tensor::from_vector(tt::random_vector<float>(static_cast<size_t>(n), seed), ops::Shape(shape));
}

std::vector<double> as_f64(const Tensor& t) {
  auto v = ops::to_dtype(t, DType::f64).to_vector<double>();
  return std::vector<double>(v.begin(), v.end());
}

// x rounded to dtype (bf16 / f16 / f32) and back, in double.
double rounded(double x, DType dtype) {
  if (dtype == DType::bf16) return tt::round_to<bf16_t>(x);
  if (dtype == DType::f16) return tt::round_to<f16_t>(x);
  return static_cast<float>(x);
}

// a [m, k] @ b [k, n] with the inputs rounded to dtype first (what the kernel sees), in double.
std::vector<double> matmul_ref(const std::vector<double>& a, const std::vector<double>& b, int m, int k, int n,
                               DType dtype) {
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int l = 0; l < k; ++l) s += rounded(a[i * k + l], dtype) * rounded(b[l * n + j], dtype);
      out[i * n + j] = s;
    }
  return out;
}

Device::Kind other_kind(Device d) { return d.is_cpu() ? Device::Kind::cuda : Device::Kind::cpu; }

const DType kLow[] = {DType::bf16, DType::f16};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_amp_autocast)

// lower_precision_fp: matmul's inputs are cast to the scope's dtype; the values are those of the
// rounded inputs (f32 accumulation), to the output's rounding. Sizes not multiples of a block.
BOOST_AUTO_TEST_CASE(lower_precision_ops_run_in_the_autocast_dtype) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int m = 37, k = 19, n = 23;
    Tensor a = random_f32({m, k}, 1), b = random_f32({k, n}, 2);
    for (DType low : kLow) {
      BOOST_TEST_CONTEXT(dtype_name(low)) {
        nn::autocast amp(be.device.kind, low);
        BOOST_TEST(nn::is_autocast_enabled(be.device.kind));
        Tensor y = tritium::matmul(a, b);
        BOOST_TEST(std::string(dtype_name(y.dtype())) == dtype_name(low));
        auto ref = matmul_ref(as_f64(a), as_f64(b), m, k, n, low);
        double tol = low == DType::bf16 ? 1e-2 : 2e-3;  // the output's rounding
        BOOST_TEST(tt::rel_error<double>(as_f64(y), ref) < tol);
        // The rounding really happened: the f32 product differs from the rounded-input one.
        auto exact = matmul_ref(as_f64(a), as_f64(b), m, k, n, DType::f32);
        BOOST_TEST(tt::rel_error<double>(ref, exact) > 1e-5);
        // bmm and conv-like ops of the same class; f64 inputs are never cast (PyTorch's rule).
        BOOST_TEST(std::string(dtype_name(tritium::bmm(a.unsqueeze(0), b.unsqueeze(0)).dtype())) == dtype_name(low));
        BOOST_TEST((tritium::matmul(a.to(DType::f64), b.to(DType::f64)).dtype() == DType::f64));
      }
    }
    BOOST_TEST(!nn::is_autocast_enabled(be.device.kind));
    BOOST_TEST((tritium::matmul(a, b).dtype() == DType::f32));  // after the scope
  });
}

// fp32: low-precision inputs are cast up (softmax, exp, sum, log_softmax); promote: the widest
// input (dot: f32 with any f32, else the low dtype); none: type promotion decides (add).
BOOST_AUTO_TEST_CASE(fp32_promote_and_none_classes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x32 = random_f32({5, 33}, 3);
    Tensor x = x32.to(DType::bf16);
    Tensor v = random_f32({41}, 4), w = random_f32({41}, 5);
    nn::autocast amp(be.device.kind, DType::bf16);
    Tensor s = tritium::softmax(x, 1);
    BOOST_TEST((s.dtype() == DType::f32));
    // The values are softmax of the bf16 values computed in f32.
    auto xs = as_f64(x);
    std::vector<double> ref(xs.size());
    for (int r = 0; r < 5; ++r) {
      double mx = -INFINITY, z = 0;
      for (int c = 0; c < 33; ++c) mx = std::max(mx, xs[r * 33 + c]);
      for (int c = 0; c < 33; ++c) z += std::exp(xs[r * 33 + c] - mx);
      for (int c = 0; c < 33; ++c) ref[r * 33 + c] = std::exp(xs[r * 33 + c] - mx) / z;
    }
    BOOST_TEST(tt::rel_error<double>(as_f64(s), ref) < 1e-5);
    BOOST_TEST((tritium::exp(x).dtype() == DType::f32));
    BOOST_TEST((tritium::log_softmax(x, 1).dtype() == DType::f32));
    BOOST_TEST((tritium::sum(x).dtype() == DType::f32));
    // promote
    BOOST_TEST((tritium::dot(v.to(DType::bf16), w).dtype() == DType::f32));
    BOOST_TEST((tritium::dot(v.to(DType::bf16), w.to(DType::bf16)).dtype() == DType::bf16));
    // none: bf16 + f32 promotes to f32 as without autocast; bf16 + bf16 stays bf16
    BOOST_TEST((tritium::add(x, x32).dtype() == DType::f32));
    BOOST_TEST((tritium::add(x, x).dtype() == DType::bf16));
    BOOST_TEST((tritium::relu(x).dtype() == DType::bf16));
  });
}

// Scopes nest: an inner scope may disable autocast or change the dtype, and the outer state
// comes back when it ends. A scope of the other device type changes nothing here.
BOOST_AUTO_TEST_CASE(nested_and_disabled_scopes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor a = random_f32({9, 13}, 6), b = random_f32({13, 7}, 7);
    auto dtype = [&] { return std::string(dtype_name(tritium::matmul(a, b).dtype())); };
    {
      nn::autocast outer(be.device.kind, DType::bf16);
      BOOST_TEST(dtype() == "bf16");
      {
        nn::autocast off(be.device.kind, std::nullopt, /*enabled=*/false);
        BOOST_TEST(dtype() == "f32");
        BOOST_TEST(!nn::is_autocast_enabled(be.device.kind));
        {
          nn::autocast again(be.device.kind, DType::f16);
          BOOST_TEST(dtype() == "f16");
        }
        BOOST_TEST(dtype() == "f32");
      }
      BOOST_TEST(dtype() == "bf16");
      {
        nn::autocast f16(be.device.kind, DType::f16);
        BOOST_TEST(dtype() == "f16");
      }
      BOOST_TEST(dtype() == "bf16");
      BOOST_TEST((nn::get_autocast_dtype(be.device.kind) == DType::bf16));
    }
    BOOST_TEST(dtype() == "f32");
    {
      nn::autocast elsewhere(other_kind(be.device), DType::bf16);
      BOOST_TEST(dtype() == "f32");  // a scope of the other device type
    }
    // PyTorch's default dtypes: f16 on cuda, bf16 on cpu.
    BOOST_TEST((nn::get_autocast_dtype(Device::Kind::cpu) == DType::bf16));
    BOOST_TEST((nn::get_autocast_dtype(Device::Kind::cuda) == DType::f16));
  });
}

// The cast cache: a parameter (f32 leaf requiring grad) is cast once per scope however often it
// is used; tensors that are not parameters are not cached; the cache empties when the outermost
// scope ends, and an entry is redone after the parameter changed in place.
BOOST_AUTO_TEST_CASE(cast_cache_holds_parameters_once_per_scope) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor w = random_f32({13, 7}, 8);
    w.requires_grad_(true);
    Tensor x = random_f32({5, 13}, 9);
    BOOST_TEST(nn::autocast_cache_size() == 0u);
    {
      nn::autocast amp(be.device.kind, DType::bf16);
      Tensor y1 = tritium::matmul(x, w);
      BOOST_TEST(nn::autocast_cache_size() == 1u);
      Tensor y2 = tritium::matmul(x, w);
      BOOST_TEST(nn::autocast_cache_size() == 1u);
      {
        nn::autocast inner(be.device.kind, DType::bf16);
        tritium::matmul(x, w);
        BOOST_TEST(nn::autocast_cache_size() == 1u);
      }
      BOOST_TEST(nn::autocast_cache_size() == 1u);  // an inner scope's end keeps it
      tritium::matmul(x, x.t());                     // no parameter: nothing cached
      BOOST_TEST(nn::autocast_cache_size() == 1u);
      // Both uses share the one cast: the gradient reaches w through both products.
      tritium::sum(tritium::add(y1, y2)).backward();
      Tensor g = w.grad();
      BOOST_TEST((g.dtype() == DType::f32));
      // d/dw sum(x w) * 2 = 2 * x^T 1, computed from the bf16-rounded x.
      auto xs = as_f64(x);
      std::vector<double> ref(13 * 7);
      for (int i = 0; i < 13; ++i)
        for (int j = 0; j < 7; ++j) {
          double s = 0;
          for (int r = 0; r < 5; ++r) s += rounded(xs[r * 13 + i], DType::bf16);
          ref[i * 7 + j] = 2 * s;
        }
      BOOST_TEST(tt::rel_error<double>(as_f64(g), ref) < 1e-2);
      // In-place change of the parameter: the next use casts afresh.
      {
        nn::NoGradGuard no_grad;
        w.mul_(2.0);
      }
      Tensor y3 = tritium::matmul(x, w);
      BOOST_TEST(tt::rel_error<double>(as_f64(y3), as_f64(ops::mul(y1.detach(), 2.0))) < 1e-2);
    }
    BOOST_TEST(nn::autocast_cache_size() == 0u);
    {
      nn::autocast no_cache(be.device.kind, DType::bf16, true, /*cache_enabled=*/false);
      tritium::matmul(x, w);
      BOOST_TEST(nn::autocast_cache_size() == 0u);
    }
  });
}

// PyTorch's rule as the profiler sees it: a weight used twice in one region (h = x w, then h w)
// costs one cast launch, not two, and in backward one cast of the summed gradient instead of two
// casts and an f32 sum; its gradient equals the uncached run's within bf16 rounding (the two uses'
// gradients meet in bf16 at the one cast instead of in f32 after two); a new region casts again and
// sees the parameter's in-place update since. (As in PyTorch only the leaf itself is cached: a
// view such as w.t() is a new tensor each time, cast each time.)
BOOST_AUTO_TEST_CASE(cast_cache_casts_a_weight_used_twice_once) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = random_f32({9, 13}, 31);
    Tensor c = random_f32({9, 13}, 33);
    auto run = [&](const Tensor& w, bool cache, int64_t& launches) {
      profiler::Profile prof;
      Tensor loss;
      {
        nn::autocast amp(be.device.kind, DType::bf16, true, cache);
        Tensor h = tritium::matmul(x, w);                             // [9, 13]
        loss = tritium::sum(tritium::mul(tritium::matmul(h, w), c));  // w used again
      }
      loss.backward();
      prof.stop();
      launches = 0;
      for (const profiler::Event& e : prof.events()) launches += e.kind == profiler::EventKind::kernel;

      return loss;
    };
    Tensor w1 = random_f32({13, 13}, 32), w2 = random_f32({13, 13}, 32);
    w1.requires_grad_(true), w2.requires_grad_(true);
    int64_t cached = 0, uncached = 0;
    {
      // Warm up first: on a GPU the first bf16 matmul autotunes, launching thousands of kernels.
      Tensor w0 = random_f32({13, 13}, 34);
      w0.requires_grad_(true);
      run(w0, true, cached), run(w0, false, uncached);
    }
    Tensor l1 = run(w1, true, cached), l2 = run(w2, false, uncached);
    BOOST_TEST(cached == uncached - 2);  // one cast forward, one (instead of two and an add) backward
    BOOST_TEST(as_f64(l1) == as_f64(l2));
    BOOST_TEST(tt::rel_error<double>(as_f64(w1.grad()), as_f64(w2.grad())) < 2e-2);
    BOOST_TEST(nn::autocast_cache_size() == 0u);  // the region's end dropped the copy
    // An in-place update between regions: the next region's cast sees it.
    {
      nn::NoGradGuard no_grad;
      w1.mul_(2.0);
    }
    w1.zero_grad();  // set to none, as PyTorch's default: no accumulation launch in the next run
    int64_t again = 0;
    Tensor l3 = run(w1, true, again);
    BOOST_TEST(again == cached);
    // (x 2w)(2w): four times the loss, exactly (scaling by 2 is exact in bf16); a stale cast
    // would give the old loss.
    BOOST_TEST(as_f64(l3).at(0) == 4 * as_f64(l1).at(0));
  });
}

// Gradients of an autocast forward (two bf16/f16 matmuls, a ReLU, an f32 log_softmax and NLL)
// reach the f32 leaves as f32 and equal the f32 run's within the low precision's tolerance.
BOOST_AUTO_TEST_CASE(gradients_flow_back_to_f32_leaves) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = random_f32({17, 29}, 10);
    Tensor w1 = random_f32({29, 31}, 11), w2 = random_f32({31, 5}, 12);
    auto run = [&](std::optional<DType> low) {
      Tensor a = w1.detach().to(DType::f32), b = w2.detach().to(DType::f32);
      a = ops::add(a, 0.0), b = ops::add(b, 0.0);  // fresh leaves
      a.requires_grad_(true), b.requires_grad_(true);
      Tensor loss;
      {
        nn::autocast amp(be.device.kind, low.value_or(DType::bf16), low.has_value());
        Tensor h = tritium::relu(tritium::matmul(x, a));
        Tensor z = tritium::log_softmax(tritium::matmul(h, b), 1);
        BOOST_TEST((z.dtype() == DType::f32));
        loss = tritium::mean(tritium::neg(z));
      }
      loss.backward();
      BOOST_TEST((a.grad().dtype() == DType::f32));
      BOOST_TEST((b.grad().dtype() == DType::f32));
      return std::make_pair(as_f64(a.grad()), as_f64(b.grad()));
    };
    auto [ga, gb] = run(std::nullopt);
    for (DType low : kLow) {
      BOOST_TEST_CONTEXT(dtype_name(low)) {
        auto [la, lb] = run(low);
        double tol = low == DType::bf16 ? 3e-2 : 5e-3;
        BOOST_TEST(tt::rel_error<double>(la, ga) < tol);
        BOOST_TEST(tt::rel_error<double>(lb, gb) < tol);
        BOOST_TEST(tt::rel_error<double>(la, ga) > 0.0);  // it did run in low precision
      }
    }
  });
}

// The declared classes follow PyTorch's lists (aten/src/ATen/autocast_mode.h, 2.x).
BOOST_AUTO_TEST_CASE(declared_classes_match_pytorch) {
  using ops::AutocastClass;
  const auto& r = ops::op_registry();
  auto check = [&](const char* name, AutocastClass expected) {
    const ops::OpDecl* op = r.find(name);
    if (!op) return;  // not declared here
    BOOST_TEST(std::string(ops::autocast_class_name(op->autocast)) == ops::autocast_class_name(expected), name);
  };
  for (const char* n : {"matmul", "mm", "bmm", "mv", "addmm", "addmv", "addr", "baddbmm", "addbmm", "conv1d",
                        "conv2d", "conv_transpose2d", "scaled_dot_product_attention", "linear", "prelu"})
    check(n, AutocastClass::lower_precision_fp);
  for (const char* n : {"exp", "log", "log2", "log10", "log1p", "expm1", "acos", "asin", "cosh", "sinh", "tan",
                        "erfinv", "reciprocal", "rsqrt", "pow", "pow.Tensor", "softplus", "layer_norm", "group_norm",
                        "rms_norm", "softmax", "log_softmax", "sum", "prod", "cumsum", "cumprod", "logsumexp",
                        "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
                        "binary_cross_entropy_with_logits", "cross_entropy_loss", "cosine_similarity"})
    check(n, AutocastClass::fp32);
  for (const char* n : {"dot", "vdot", "addcmul", "addcdiv", "atan2", "cross", "tensordot"})
    check(n, AutocastClass::promote);
  for (const char* n : {"add", "mul", "relu", "tanh", "sigmoid", "gelu", "mean", "amax", "sqrt", "dropout"})
    check(n, AutocastClass::none);
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_clear_errors) {
  tt::check_throws([] { nn::autocast a(Device::Kind::cpu, DType::f32); }, {"dtype f32 is not supported"});
  tt::check_throws([] { nn::autocast a("tpu"); }, {"unknown device_type 'tpu'"});
  BOOST_TEST(!nn::is_autocast_enabled(Device::Kind::cpu));  // a failed constructor left no state
  nn::autocast ok("cuda:1", DType::bf16);
  BOOST_TEST(nn::is_autocast_enabled(Device::Kind::cuda));
}

BOOST_AUTO_TEST_SUITE_END()
