// Tensor's hook methods: register_hook (gradient-replacing and observing hooks), retain_grad,
// register_post_accumulate_grad_hook (once per backward, after .grad is updated, as DDP needs),
// and the removable handles they return; values against float64 host references, with errors.
#include "autograd_leaf.h"
#include "test_support.h"

#include "nn/autograd.h"
#include "nn/functional.h"

namespace tt = tritium::test;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd_hooks)

// A hook returning a tensor replaces the gradient, a void hook observes it; remove() stops a hook
// (and is harmless twice, or after the tensor is gone).
BOOST_AUTO_TEST_CASE(register_hook_methods_and_handles) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = tt::random_leaf({5}, 1);
    const auto xv = values(x);
    std::vector<std::vector<double>> seen;
    auto observe = x.register_hook([&](const Tensor& g) { seen.push_back(values(g)); });
    auto triple = x.register_hook([](const Tensor& g) { return tritium::ops::mul(g, 3.0); });
    // L = sum(x * x + 2x): dL/dx = 2x + 2, tripled by the second hook.
    auto loss = [&] { return tritium::sum(x * x + x * 2.0); };
    loss().backward();
    std::vector<double> ref(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) ref[i] = 2 * xv[i] + 2;
    BOOST_TEST_REQUIRE(seen.size() == 1u);
    tt::check_close<double>(seen[0], ref, 1e-14, "observed gradient (summed over both uses of x)");
    std::vector<double> tripled = ref;
    for (double& v : tripled) v *= 3;
    tt::check_close<double>(values(x.grad()), tripled, 1e-14, "replaced gradient");

    triple.remove();
    triple.remove();  // twice: nothing
    x.zero_grad();
    loss().backward();
    tt::check_close<double>(values(x.grad()), ref, 1e-14, "after removing the tripling hook");
    BOOST_TEST(seen.size() == 2u);
    observe.remove();
    loss().backward();
    BOOST_TEST(seen.size() == 2u);

    // A non-leaf's hook, removed through its handle.
    Tensor y = tritium::exp(x);
    int calls = 0;
    auto h = y.register_hook([&](const Tensor&) { ++calls; });
    tritium::sum(y).backward(Tensor(), /*retain_graph=*/true);
    h.remove();
    tritium::sum(y).backward();
    BOOST_TEST(calls == 1);

    tritium::nn::RemovableHandle outlives;
    {
      Tensor z = tt::random_leaf({2}, 2);
      outlives = z.register_hook([](const Tensor& g) { return g; });
    }
    outlives.remove();  // the tensor is gone: nothing to do, no crash

    Tensor plain = Tensor::from_vector(std::vector<double>{1, 2}, {2});
    tt::check_throws([&] { plain.register_hook([](const Tensor&) {}); }, {"register_hook", "doesn't require gradient"},
                     "hook method on a tensor without grad");
  });
}

BOOST_AUTO_TEST_CASE(retain_grad_method) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = tt::random_leaf({4}, 3);
    const auto xv = values(x);
    Tensor y = tritium::tanh(x);
    BOOST_TEST(!y.retains_grad());
    y.retain_grad();
    BOOST_TEST(y.retains_grad());
    BOOST_TEST(!x.retains_grad());  // a leaf keeps its gradient anyway
    tritium::sum(y * y).backward();
    std::vector<double> gy(xv.size()), gx(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      double t = std::tanh(xv[i]);
      gy[i] = 2 * t;
      gx[i] = 2 * t * (1 - t * t);
    }
    tt::check_close<double>(values(y.grad()), gy, 1e-14, "retained gradient of tanh(x)");
    tt::check_close<double>(values(x.grad()), gx, 1e-14, "leaf gradient");
    Tensor plain = Tensor::from_vector(std::vector<double>{1}, {1});
    tt::check_throws([&] { plain.retain_grad(); }, {"retain_grad", "requires_grad=False"}, "retain_grad without grad");
  });
}

// The post-accumulate hook runs once per backward for a leaf used several times, after the
// gradient hooks, with .grad already holding the summed gradient; not for a backward that does not
// reach the leaf; removable; refused on non-leaves and tensors without grad.
BOOST_AUTO_TEST_CASE(post_accumulate_grad_hook) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor w = tt::random_leaf({3}, 4);
    Tensor other = tt::random_leaf({3}, 5);
    const auto wv = values(w);
    std::vector<std::string> order;
    std::vector<std::vector<double>> grads_seen;
    w.register_hook([&](const Tensor&) { order.push_back("grad hook"); });
    auto handle = w.register_post_accumulate_grad_hook([&](const Tensor& p) {
      order.push_back("post hook");
      BOOST_TEST(p.is_leaf());
      BOOST_TEST(p.storage() == w.storage());
      grads_seen.push_back(values(p.grad()));
    });
    // L = sum(w * w * 3 + w): w is used three times; dL/dw = 6w + 1.
    tritium::sum(w * w * 3.0 + w).backward();
    std::vector<double> ref(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) ref[i] = 6 * wv[i] + 1;
    BOOST_TEST_REQUIRE(grads_seen.size() == 1u);
    tt::check_close<double>(grads_seen[0], ref, 1e-14, ".grad as the post hook sees it");
    BOOST_TEST((order == std::vector<std::string>{"grad hook", "post hook"}));

    tritium::sum(w * 2.0).backward();  // accumulates: the hook sees 6w + 1 + 2
    BOOST_TEST_REQUIRE(grads_seen.size() == 2u);
    for (double& v : ref) v += 2;
    tt::check_close<double>(grads_seen[1], ref, 1e-14, "accumulated .grad");

    tritium::sum(other * 2.0).backward();  // does not reach w
    BOOST_TEST(grads_seen.size() == 2u);
    handle.remove();
    tritium::sum(w).backward();
    BOOST_TEST(grads_seen.size() == 2u);

    Tensor y = w * 2.0;
    tt::check_throws([&] { y.register_post_accumulate_grad_hook([](const Tensor&) {}); },
                     {"register_post_accumulate_grad_hook", "cannot be registered on non-leaf tensors", "MulBackward"},
                     "post hook on a non-leaf");
    Tensor plain = Tensor::from_vector(std::vector<double>{1}, {1});
    tt::check_throws([&] { plain.register_post_accumulate_grad_hook([](const Tensor&) {}); },
                     {"register_post_accumulate_grad_hook", "doesn't require gradient"}, "post hook without grad");
  });
}

BOOST_AUTO_TEST_SUITE_END()
