// Autograd mechanics: .grad accumulation, tensors used twice, no_grad and the other grad-mode guards,
// gradient hooks and retain_grad, detach, retain_graph, the
// errors (backward twice, non-scalar root, requires_grad_ on an integer tensor or a non-leaf), and
// the graph's saved tensors being freed by backward, graphs millions of nodes deep (freed and
// walked without recursion). Every test runs on every backend (tt::for_each_backend: the tensors
// it creates live on that backend's device).
#include "test_support.h"

#include "nn/autograd.h"
#include "nn/functional.h"

namespace tt = tritium::test;
using tritium::Tensor;
using tritium::DType;
using Shape = std::vector<int64_t>;

namespace {

Tensor leaf(Shape shape, uint32_t seed, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor t = Tensor::from_vector(tt::random_vector<double>(static_cast<size_t>(n), seed, lo, hi), shape);
  t.requires_grad_();
  return t;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// Appends `depth` nodes to the graph of t through nn::record, the mechanism every differentiable op
// uses, without launching kernels: each node passes its gradient on (to its first input; with
// `twice` a node takes t twice, as x * x does, and gives the second edge no gradient). A loss
// summed over `depth` steps builds such a chain.
Tensor deepen(Tensor t, int64_t depth, bool twice = false) {
  const Tensor out = t.detach();  // storage for every node's output; each gets its own autograd state
  for (int64_t i = 0; i < depth; ++i) {
    if (twice)
      t = tritium::nn::record(out, {t, t}, "TwiceBackward", [](const Tensor& g) { return std::vector<Tensor>{g, Tensor()}; });
    else
      t = tritium::nn::record(out, {t}, "StepBackward", [](const Tensor& g) { return std::vector<Tensor>{g}; });
  }
  return t;
}

std::vector<double> map(const std::vector<double>& v, double (*f)(double)) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f(v[i]);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd)

BOOST_AUTO_TEST_CASE(leaf_state) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = leaf({3}, 1);
    BOOST_TEST(x.requires_grad());
    BOOST_TEST(x.is_leaf());
    BOOST_TEST(!x.grad().defined());
    Tensor y = tritium::mul(x, x);
    BOOST_TEST(y.requires_grad());
    BOOST_TEST(!y.is_leaf());
    BOOST_TEST(y.autograd()->grad_fn->name() == "MulBackward");
    BOOST_TEST((x.device() == be.device));
    BOOST_TEST((y.device() == be.device));
    Tensor c = tritium::ops::ones({3}, DType::f64);
    BOOST_TEST(!c.requires_grad());
    BOOST_TEST(c.is_leaf());
    BOOST_TEST(!tritium::mul(c, c).requires_grad());
  });
}

BOOST_AUTO_TEST_CASE(gradients_accumulate_over_two_backwards) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = leaf({5}, 2);
    auto xv = values(x);
    tritium::sum(tritium::mul(x, x)).backward();
    tt::check_close<double>(values(x.grad()), map(xv, [](double v) { return 2 * v; }), 1e-12, "first backward");
    BOOST_TEST((x.grad().device() == be.device));
    tritium::sum(tritium::mul(x, x)).backward();
    tt::check_close<double>(values(x.grad()), map(xv, [](double v) { return 4 * v; }), 1e-12, "accumulated");
    x.zero_grad();
    BOOST_TEST(!x.grad().defined());
    tritium::sum(x).backward();
    tt::check_close<double>(values(x.grad()), std::vector<double>(5, 1.0), 0, "after zero_grad");
  });
}

BOOST_AUTO_TEST_CASE(tensor_used_twice) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = leaf({4}, 3);
    auto xv = values(x);
    // y = x*x + x: dy/dx = 2x + 1 (two paths into x, and two into the node x*x).
    tritium::sum(tritium::mul(x, x) + x).backward();
    tt::check_close<double>(values(x.grad()), map(xv, [](double v) { return 2 * v + 1; }), 1e-12, "x*x + x");
    x.zero_grad();
    // A non-leaf used twice: h = exp(x); y = h * h -> dy/dx = 2 exp(2x).
    Tensor h = tritium::exp(x);
    tritium::sum(h * h).backward();
    tt::check_close<double>(values(x.grad()), map(xv, [](double v) { return 2 * std::exp(2 * v); }), 1e-12, "h*h");
    BOOST_TEST((x.grad().device() == be.device));
  });
}

BOOST_AUTO_TEST_CASE(broadcast_and_mixed_dtype_gradients) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor a = leaf({3, 1}, 4), b = leaf({1, 4}, 5);
    tritium::sum(a + b).backward();
    BOOST_TEST(a.grad().shape() == Shape({3, 1}));
    BOOST_TEST(b.grad().shape() == Shape({1, 4}));
    tt::check_close<double>(values(a.grad()), std::vector<double>(3, 4.0), 0, "a");
    tt::check_close<double>(values(b.grad()), std::vector<double>(4, 3.0), 0, "b");

    Tensor f = Tensor::from_vector(std::vector<float>{1, 2, 3});
    f.requires_grad_();
    Tensor d = leaf({3}, 6);
    tritium::sum(f * d).backward();  // f64 result: f's gradient comes back as f32
    BOOST_TEST((f.grad().dtype() == DType::f32));
    BOOST_TEST((d.grad().dtype() == DType::f64));
    BOOST_TEST((f.grad().device() == be.device));
    BOOST_TEST((a.grad().device() == be.device));
    auto dv = values(d);
    auto fg = f.grad().to_vector<float>();
    for (size_t i = 0; i < 3; ++i) BOOST_TEST(fg[i] == static_cast<float>(dv[i]));
  });
}

BOOST_AUTO_TEST_CASE(no_grad_guard_records_nothing) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3}, 7);
    BOOST_TEST(tritium::nn::grad_enabled());
    {
      tritium::nn::NoGradGuard guard;
      BOOST_TEST(!tritium::nn::grad_enabled());
      Tensor y = tritium::exp(x) * 2.0;
      BOOST_TEST(!y.requires_grad());
      BOOST_TEST(y.is_leaf());
      Tensor v = x.view({3, 1});
      BOOST_TEST(!v.requires_grad());
      {
        tritium::nn::NoGradGuard nested;
        BOOST_TEST(!tritium::nn::grad_enabled());
      }
      BOOST_TEST(!tritium::nn::grad_enabled());
      tt::check_throws([&] { y.backward(); }, {"does not require grad"}, "backward of a no_grad result");
    }
    BOOST_TEST(tritium::nn::grad_enabled());
    BOOST_TEST(tritium::exp(x).requires_grad());
  });
}

// torch.enable_grad / set_grad_enabled (function and guard) / inference_mode: each guard restores
// the mode it found, nested either way; inference mode records nothing even under enable_grad.
BOOST_AUTO_TEST_CASE(grad_mode_guards) {
  namespace nn = tritium::nn;
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3}, 8);
    auto records = [&] { return (tritium::exp(x) * 2.0).requires_grad(); };
    {
      nn::NoGradGuard off;
      BOOST_TEST(!records());
      {
        nn::EnableGradGuard on;
        BOOST_TEST(nn::grad_enabled());
        BOOST_TEST(records());
        {
          nn::GradModeGuard set(false);
          BOOST_TEST(!records());
        }
        BOOST_TEST(records());
      }
      BOOST_TEST(!records());
      {
        nn::GradModeGuard set(true);
        BOOST_TEST(records());
      }
    }
    BOOST_TEST(records());
    nn::set_grad_enabled(false);
    BOOST_TEST(!nn::grad_enabled());
    BOOST_TEST(!records());
    nn::set_grad_enabled(true);
    BOOST_TEST(records());

    BOOST_TEST(!nn::is_inference_mode_enabled());
    {
      nn::InferenceModeGuard inference;
      BOOST_TEST(nn::is_inference_mode_enabled());
      BOOST_TEST(!nn::grad_enabled());
      BOOST_TEST(!records());
      {
        nn::EnableGradGuard on;  // cannot turn recording back on inside inference mode
        BOOST_TEST(!records());
      }
      {
        nn::InferenceModeGuard off(false);
        BOOST_TEST(!nn::is_inference_mode_enabled());
        BOOST_TEST(!records());  // grad mode stays as the outer inference mode left it (off)
      }
      BOOST_TEST(nn::is_inference_mode_enabled());
    }
    BOOST_TEST(!nn::is_inference_mode_enabled());
    BOOST_TEST(records());
    {
      nn::InferenceModeGuard disabled(false);
      BOOST_TEST(!nn::is_inference_mode_enabled());
      BOOST_TEST(records());
    }
  });
}

// register_hook on a leaf and on a non-leaf (seeing the summed gradient, replacing it or not) and
// retain_grad (a non-leaf's .grad, accumulated over two backwards), with their errors.
BOOST_AUTO_TEST_CASE(hooks_and_retain_grad) {
  namespace nn = tritium::nn;
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3}, 9);
    std::vector<std::vector<double>> seen;
    int calls = 0;
    nn::register_hook(x, [&](const Tensor& g) {
      seen.push_back(values(g));
      return Tensor();  // keeps the gradient
    });
    nn::register_hook(x, [&](const Tensor& g) {
      ++calls;
      return tritium::ops::mul(g, 2.0);  // doubles it
    });
    Tensor y = x * 3.0;
    nn::register_hook(y, [&](const Tensor& g) { return tritium::ops::mul(g, 10.0); });
    nn::retain_grad(y);
    // y is used twice: its hook sees the sum of both consumers' gradients (1 + 2 = 3 per element).
    Tensor loss = tritium::sum(y + y * 2.0);
    loss.backward(tritium::ops::ones({}, DType::f64), /*retain_graph=*/true);
    BOOST_TEST(calls == 1);
    BOOST_TEST(seen.size() == 1u);
    BOOST_TEST(seen.at(0) == std::vector<double>(3, 90.0));  // 3 (sum) * 10 (y's hook) * 3 (dy/dx)
    BOOST_TEST(values(x.grad()) == std::vector<double>(3, 180.0));
    BOOST_TEST(values(y.grad()) == std::vector<double>(3, 30.0));  // after y's own hook
    loss.backward(tritium::ops::ones({}, DType::f64), false);
    BOOST_TEST(values(y.grad()) == std::vector<double>(3, 60.0));
    BOOST_TEST(values(x.grad()) == std::vector<double>(3, 360.0));
    BOOST_TEST(calls == 2);

    Tensor z = tritium::exp(x);
    BOOST_TEST(!z.grad().defined());  // a non-leaf keeps no gradient without retain_grad
    tritium::sum(z).backward();
    BOOST_TEST(!z.grad().defined());

    Tensor plain = Tensor::from_vector(std::vector<double>{1, 2}, {2});
    tt::check_throws([&] { nn::register_hook(plain, [](const Tensor& g) { return g; }); },
                     {"register_hook", "doesn't require gradient"}, "hook on a tensor without grad");
    tt::check_throws([&] { nn::retain_grad(plain); }, {"retain_grad", "requires_grad=False"}, "retain_grad without grad");
    Tensor w = leaf({2}, 10);
    nn::register_hook(w, [](const Tensor&) { return tritium::ops::ones({5}, DType::f64); });
    tt::check_throws([&] { tritium::sum(w).backward(); }, {"hook", "shape [5]", "shape [2]"}, "hook changing the shape");
  });
}

BOOST_AUTO_TEST_CASE(detach_shares_storage_without_history) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({4}, 8);
    Tensor h = tritium::exp(x);
    Tensor d = h.detach();
    BOOST_TEST(!d.requires_grad());
    BOOST_TEST(d.is_leaf());
    BOOST_TEST(d.storage() == h.storage());
    BOOST_TEST(h.requires_grad());  // the original keeps its history
    // Gradient flows through x only, not through the detached factor: d(sum(d * x))/dx = d.
    tritium::sum(d * x).backward();
    tt::check_close<double>(values(x.grad()), values(d), 0, "detached factor is a constant");
  });
}

BOOST_AUTO_TEST_CASE(retain_graph_allows_a_second_backward) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3}, 9);
    auto xv = values(x);
    Tensor y = tritium::sum(tritium::exp(x));
    y.backward(tritium::ops::ones(Shape{}, DType::f64), /*retain_graph=*/true);
    tt::check_close<double>(values(x.grad()), map(xv, [](double v) { return std::exp(v); }), 1e-12, "first");
    y.backward();  // the graph was retained: works, and accumulates
    tt::check_close<double>(values(x.grad()), map(xv, [](double v) { return 2 * std::exp(v); }), 1e-12, "second");
    // That one did not retain it.
    tt::check_throws([&] { y.backward(); }, {"backward through the graph a second time", "retain_graph=true"},
                     "third backward");
  });
}

BOOST_AUTO_TEST_CASE(backward_twice_without_retain_graph_fails) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({3}, 10);
    Tensor y = tritium::sum(tritium::tanh(x) * x);
    y.backward();
    auto first = values(x.grad());
    tt::check_throws([&] { y.backward(); },
                     {"Trying to backward through the graph a second time",
                      "(or directly access saved tensors after they have already been freed)", "retain_graph=true"},
                     "second backward");
    tt::check_close<double>(values(x.grad()), first, 0, "grad unchanged by the failed backward");
    // A new graph from the same leaf is fine.
    tritium::sum(tritium::tanh(x) * x).backward();
  });
}

BOOST_AUTO_TEST_CASE(backward_errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({2, 3}, 11);
    Tensor y = x * x;
    tt::check_throws([&] { y.backward(); }, {"grad can be implicitly created only for scalar outputs", "[2, 3]"},
                     "non-scalar root");
    tt::check_throws([&] { y.backward(tritium::ops::ones({3, 2}, DType::f64)); },
                     {"gradient has shape [3, 2]", "[2, 3]"}, "gradient of the wrong shape");
    Tensor c = tritium::ops::ones({1}, DType::f64);
    tt::check_throws([&] { c.backward(); }, {"does not require grad"}, "tensor without grad");
    // With an explicit gradient a non-scalar root works.
    y.backward(tritium::ops::ones({2, 3}, DType::f64));
    auto xv = values(x);
    tt::check_close<double>(values(x.grad()), map(xv, [](double v) { return 2 * v; }), 1e-12, "explicit gradient");
  });
}

BOOST_AUTO_TEST_CASE(requires_grad_errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor i = Tensor::from_vector(std::vector<int64_t>{1, 2, 3});
    tt::check_throws([&] { i.requires_grad_(); }, {"requires_grad_", "floating point", "i64"}, "integer tensor");
    BOOST_TEST(!i.requires_grad());
    i.requires_grad_(false);  // switching it off is always fine
    Tensor x = leaf({3}, 12);
    Tensor y = tritium::exp(x);
    tt::check_throws([&] { y.requires_grad_(); }, {"only leaf tensors", "ExpBackward"}, "non-leaf");
    x.requires_grad_(false);
    BOOST_TEST(!x.requires_grad());
    BOOST_TEST(!tritium::exp(x).requires_grad());
  });
}

BOOST_AUTO_TEST_CASE(leaf_root_and_leaf_grad_is_owned) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = leaf({2, 3}, 13);
    Tensor g = tritium::ops::ones({2, 3}, DType::f64);
    x.backward(g);
    x.backward(g);
    tt::check_close<double>(values(x.grad()), std::vector<double>(6, 2.0), 0, "leaf root accumulates");
    BOOST_TEST(x.grad().storage() != g.storage());
    // A gradient arriving through a transpose is stored contiguous.
    Tensor w = leaf({3, 4}, 14);
    Tensor s = Tensor::from_vector(tt::random_vector<double>(12, 15), {4, 3});
    tritium::sum(w.t() * s).backward();
    BOOST_TEST(w.grad().is_contiguous());
    BOOST_TEST(w.grad().shape() == Shape({3, 4}));
    tt::check_close<double>(values(w.grad()), values(s.t().contiguous()), 0, "w.grad = s^T");
    BOOST_TEST((w.grad().device() == be.device));
  });
}

BOOST_AUTO_TEST_CASE(graph_freed_after_backward) {
  tt::for_each_backend([&](const tt::Backend&) {
    const int64_t n = 1 << 20;  // 8 MiB of f64
    Tensor big = Tensor::from_vector(tt::random_vector<double>(n, 16), {n});
    Tensor w = leaf({n}, 17);
    BOOST_TEST(big.storage().use_count() == 1);
    Tensor y = tritium::sum(big * w);  // MulBackward saves `big` for w's gradient
    BOOST_TEST(big.storage().use_count() == 2);
    y.backward();
    BOOST_TEST(big.storage().use_count() == 1);  // released by the backward
    // With retain_graph the saved tensor stays until the graph is dropped.
    w.zero_grad();
    Tensor y2 = tritium::sum(big * w);
    y2.backward(Tensor(), /*retain_graph=*/true);
    BOOST_TEST(big.storage().use_count() == 2);
    y2 = Tensor();
    BOOST_TEST(big.storage().use_count() == 1);
    // A node never keeps its own output alive (saved outputs are detached: no reference cycle).
    Tensor h = tritium::exp(w);
    std::weak_ptr<tritium::nn::AutogradMeta> meta = h.autograd();
    std::weak_ptr<tritium::runtime::Buffer> storage = h.storage();
    h = Tensor();
    BOOST_TEST(meta.expired());
    BOOST_TEST(storage.expired());
  });
}

BOOST_AUTO_TEST_CASE(dropout_eval_returns_input) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int64_t n = 4096;
    Tensor x = leaf({n}, 18, 0.5, 2);  // never 0: a zero output is a dropped element
    Tensor y = tritium::dropout(x, 0.5, /*training=*/false);
    BOOST_TEST(y.storage() == x.storage());
    tritium::Generator gen(5);
    Tensor z = tritium::dropout(x, 0.5, true, gen);
    BOOST_TEST(z.requires_grad());
    tritium::sum(z).backward();
    // Kept elements are x / (1 - p), about half of them (so neither an all-zero nor an identity
    // dropout passes); the gradient is the mask scaled by 1/(1-p): exactly where z is non-zero.
    auto xv = values(x), zv = values(z), gv = values(x.grad());
    int64_t kept = 0, bad = 0;
    for (size_t i = 0; i < zv.size(); ++i) {
      if (zv[i] != 0) ++kept, bad += zv[i] != 2.0 * xv[i];
      bad += gv[i] != (zv[i] != 0 ? 2.0 : 0.0);
    }
    BOOST_TEST(bad == 0, bad << " elements not scaled by 1/(1-p) or with the wrong gradient");
    // Binomial(4096, 0.5): standard deviation 32; allow 5.
    BOOST_TEST(std::abs(kept - n / 2) < 160, "kept " << kept << " of " << n);
    BOOST_TEST((z.device() == be.device));
    BOOST_TEST((x.grad().device() == be.device));
  });
}

BOOST_AUTO_TEST_CASE(views_share_storage_and_track_grad) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = leaf({2, 3}, 19);
    Tensor v = x.view({3, 2});
    BOOST_TEST(v.storage() == x.storage());
    BOOST_TEST(v.requires_grad());
    BOOST_TEST(!v.is_leaf());
    BOOST_TEST(v.autograd() != x.autograd());
    BOOST_TEST(x.is_leaf());
    tt::check_throws([&] { x.t().view({6}); }, {"view size is not compatible", "reshape"}, "view of a transpose");
    Tensor r = x.t().reshape({6});  // a copy
    BOOST_TEST(r.storage() != x.storage());
    BOOST_TEST((r.device() == be.device));
    Tensor c = x.contiguous();
    BOOST_TEST(c.storage() == x.storage());
    BOOST_TEST(c.is_leaf());  // the same tensor
    Tensor f = x.to(DType::f32);
    BOOST_TEST(f.requires_grad());
    BOOST_TEST((f.device() == be.device));
    BOOST_TEST(!x.to(DType::i32).requires_grad());
    BOOST_TEST(x.to(be.device).storage() == x.storage());  // already there: the same tensor
  });
}

BOOST_AUTO_TEST_CASE(to_dtype_backward_converts_the_gradient) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = leaf({4}, 20);
    Tensor y = x.to(DType::f32);
    BOOST_TEST((y.dtype() == DType::f32));
    Tensor g = Tensor::from_vector(std::vector<float>{0.5f, -1.25f, 2.0f, 3.0f});
    y.backward(g);
    BOOST_TEST((x.grad().dtype() == DType::f64));
    BOOST_TEST((x.grad().device() == be.device));
    tt::check_close<double>(values(x.grad()), {0.5, -1.25, 2.0, 3.0}, 0, "to(f32) backward");
  });
}

BOOST_AUTO_TEST_CASE(deep_graph_is_freed_without_recursion) {
  // ~Node freeing its inputs' nodes recursively overflowed the stack at ~200,000 nodes; the
  // chains here are 5 times deeper. Dropping them must free every node.
  tt::for_each_backend([&](const tt::Backend&) {
    for (bool twice : {false, true}) {
      BOOST_TEST_CONTEXT((twice ? "each node takes its input twice" : "a chain")) {
        Tensor x = leaf({1}, 40);
        Tensor first = deepen(x, 1, twice);
        std::weak_ptr<tritium::nn::Node> bottom = first.autograd()->grad_fn;
        Tensor top = deepen(std::move(first), 1'000'000, twice);
        BOOST_TEST(!bottom.expired());
        top = Tensor();  // frees 1,000,001 nodes
        BOOST_TEST(bottom.expired());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(deep_graph_backward) {
  // The backward walks 1,000,000 nodes (each reached by two edges) with its own stacks, releases
  // each, and the graph is then freed as above.
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = leaf({1}, 41);
    Tensor top = deepen(x, 1'000'000, /*twice=*/true);
    std::weak_ptr<tritium::nn::Node> root = top.autograd()->grad_fn;
    top.backward(tritium::ops::ones({1}, DType::f64), /*retain_graph=*/false);
    BOOST_TEST_REQUIRE(x.grad().defined());
    BOOST_TEST(values(x.grad()) == std::vector<double>{1.0});
    BOOST_TEST(root.lock()->released);
    top = Tensor();
    BOOST_TEST(root.expired());
  });
}

BOOST_AUTO_TEST_SUITE_END()
