// Gradients of part views (slice, select, split / chunk / unbind's parts) written by the engine
// straight into their input's gradient buffer (Node::input_part): the sums against float64
// references for disjoint, overlapping, strided and cross-dim parts, parts mixed with a dense
// gradient, a caller's gradient that must stay untouched, hooks and retain_grad seeing the sum,
// double backward (which takes the recorded path), and the kernel count that shows the direct path
// ran (one zero fill for three disjoint parts, no additions).
#include "autograd_leaf.h"
#include "test_support.h"

#include <algorithm>
#include <cmath>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/tensor_ops.h"
#include "profiler/profile.h"

namespace tt = tritium::test;
namespace ag = tritium::autograd;
namespace prof = tritium::profiler;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

constexpr int64_t R = 5, C = 9;  // off every block size

Tensor constant(Shape shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return Tensor::from_vector(tt::random_vector<double>(static_cast<size_t>(n), seed, -1, 1), shape);
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// sum(part * w) for each (part, w): the gradient of a part is its weight.
Tensor weighted(const std::vector<Tensor>& parts, const std::vector<Tensor>& weights) {
  Tensor loss;
  for (size_t i = 0; i < parts.size(); ++i) {
    Tensor t = tritium::sum(tritium::mul(parts[i], weights[i]));
    loss = loss.defined() ? tritium::add(loss, t) : t;
  }
  return loss;
}

// Adds w (of the part's shape) into ref ([R, C] row-major) at the part's positions.
void add_part(std::vector<double>& ref, const std::vector<double>& w, int dim, int64_t start, int64_t len, int64_t step = 1) {
  for (int64_t i = 0; i < (dim == 0 ? len : R); ++i)
    for (int64_t j = 0; j < (dim == 1 ? len : C); ++j) {
      const int64_t r = dim == 0 ? start + i * step : i, c = dim == 1 ? start + j * step : j;
      const int64_t cols = dim == 1 ? len : C;
      ref[static_cast<size_t>(r * C + c)] += 2 * w[static_cast<size_t>(i * cols + j)];
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd_part_grads)

// y = 2x split into parts along one or two dims; x.grad = 2 * (each part's weight at its place).
BOOST_AUTO_TEST_CASE(parts_sum_to_the_reference) {
  tt::for_each_backend([&](const tt::Backend&) {
    struct Case {
      const char* what;
      std::vector<std::tuple<int, int64_t, int64_t, int64_t>> parts;  // dim, start, length, step
    };
    const std::vector<Case> cases = {
        {"three disjoint column parts (a fused QKV split)", {{1, 0, 3, 1}, {1, 3, 3, 1}, {1, 6, 3, 1}}},
        {"overlapping column parts", {{1, 0, 6, 1}, {1, 3, 6, 1}, {1, 4, 2, 1}}},
        {"interleaved strided parts", {{1, 0, 5, 2}, {1, 1, 4, 2}}},
        {"row and column parts (they cross)", {{0, 1, 3, 1}, {1, 2, 4, 1}, {0, 0, 2, 1}}},
        {"a part repeated", {{1, 2, 3, 1}, {1, 2, 3, 1}}},
        {"partial cover (zeros elsewhere)", {{1, 7, 2, 1}, {0, 4, 1, 1}}},
    };
    for (const Case& c : cases) {
      BOOST_TEST_CONTEXT(c.what) {
        Tensor x = tt::random_leaf({R, C}, 11);
        Tensor y = x * 2.0;
        std::vector<Tensor> parts, weights;
        std::vector<double> ref(R * C, 0.0);
        uint32_t seed = 100;
        for (auto [dim, start, len, step] : c.parts) {
          Tensor p = y.slice(dim, start, start + (len - 1) * step + 1, step);
          Tensor w = constant(p.shape(), seed++);
          add_part(ref, values(w), dim, start, len, step);
          parts.push_back(p), weights.push_back(w);
        }
        weighted(parts, weights).backward();
        tt::check_close<double>(values(x.grad()), ref, 1e-14, "x.grad");
      }
    }
  });
}

// split / chunk / unbind give part views too; with a dense use of y besides.
BOOST_AUTO_TEST_CASE(split_chunk_unbind_with_a_dense_gradient) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = tt::random_leaf({R, C}, 21);
    Tensor y = x * 2.0;
    auto qkv = tritium::split(y, 3, 1);     // 3 + 3 + 3 columns
    auto halves = tritium::chunk(y, 2, 0);  // rows 0-2, 3-4
    auto rows = tritium::unbind(y, 0);
    Tensor dense_w = constant({R, C}, 30);
    std::vector<Tensor> parts = {qkv[0], qkv[2], halves[1], rows[0], rows[4], y};
    std::vector<Tensor> weights;
    for (size_t i = 0; i < parts.size(); ++i) weights.push_back(constant(parts[i].shape(), 40 + static_cast<uint32_t>(i)));
    weighted(parts, weights).backward();
    std::vector<double> ref(R * C, 0.0);
    add_part(ref, values(weights[0]), 1, 0, 3);
    add_part(ref, values(weights[1]), 1, 6, 3);
    add_part(ref, values(weights[2]), 0, 3, 2);
    add_part(ref, values(weights[3]), 0, 0, 1);
    add_part(ref, values(weights[4]), 0, 4, 1);
    add_part(ref, values(weights[5]), 0, 0, R);
    tt::check_close<double>(values(x.grad()), ref, 1e-14, "x.grad");
  });
}

// A gradient the caller passes for y reaches y's node first; a part's gradient added to it must
// not write into the caller's tensor. Hooks and retain_grad on y see the whole sum, once.
BOOST_AUTO_TEST_CASE(callers_gradient_untouched_hooks_see_the_sum) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = tt::random_leaf({R, C}, 51);
    Tensor y = x * 2.0;
    y.retain_grad();
    int calls = 0;
    std::vector<double> hooked;
    tritium::nn::register_hook(y, [&](const Tensor& g) {
      ++calls;
      hooked = values(g);
      return Tensor();
    });
    Tensor p = y.slice(1, 2, 6);
    Tensor gy = constant({R, C}, 52), gp = constant({R, 4}, 53);
    const std::vector<double> gy_before = values(gy);
    ag::backward({y, p}, {gy, gp});
    tt::check_close<double>(values(gy), gy_before, 0.0, "the caller's gradient of y, unchanged");
    std::vector<double> sum = gy_before;
    const auto gpv = values(gp);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < 4; ++j) sum[static_cast<size_t>(i * C + 2 + j)] += gpv[static_cast<size_t>(i * 4 + j)];
    BOOST_TEST(calls == 1);
    tt::check_close<double>(hooked, sum, 1e-14, "the hook's gradient");
    tt::check_close<double>(values(y.grad()), sum, 1e-14, "y.grad (retain_grad)");
    std::vector<double> gx(sum.size());
    std::transform(sum.begin(), sum.end(), gx.begin(), [](double v) { return 2 * v; });
    tt::check_close<double>(values(x.grad()), gx, 1e-14, "x.grad");
  });
}

// Under create_graph the parts' gradients are recorded (the direct write is skipped): the
// gradient of sum(grad_x^2) through two slices against its float64 value.
BOOST_AUTO_TEST_CASE(double_backward_through_parts) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = tt::random_leaf({R, C}, 61);
    Tensor y = tritium::mul(x, x);  // dy/dx = 2x
    Tensor a = constant({R, 4}, 62), b = constant({R, 5}, 63);
    Tensor loss = weighted({y.slice(1, 0, 4), y.slice(1, 4, 9)}, {a, b});
    auto g = ag::grad({loss}, {x}, {}, std::nullopt, /*create_graph=*/true);
    // g = 2 x w (w the weight at each place); d/dx sum(g^2) = 8 x w^2.
    Tensor gg = tritium::sum(tritium::mul(g.at(0), g.at(0)));
    gg.backward();
    const auto xv = values(x), av = values(a), bv = values(b);
    std::vector<double> g_ref(R * C), gg_ref(R * C);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        const double w = j < 4 ? av[static_cast<size_t>(i * 4 + j)] : bv[static_cast<size_t>(i * 5 + j - 4)];
        const size_t k = static_cast<size_t>(i * C + j);
        g_ref[k] = 2 * xv[k] * w;
        gg_ref[k] = 8 * xv[k] * w * w;
      }
    tt::check_close<double>(values(g.at(0)), g_ref, 1e-14, "grad x (create_graph)");
    tt::check_close<double>(values(x.grad()), gg_ref, 1e-13, "second derivative");
  });
}

// Three disjoint parts of one buffer: one zero fill and three copies, no addition (before the
// direct path: three fills, three copies and two additions of the whole input).
BOOST_AUTO_TEST_CASE(disjoint_parts_take_one_fill_and_no_addition) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto run = [&] {
      Tensor x = tt::random_leaf({R, C}, 71);
      Tensor y = x * 2.0;
      auto qkv = tritium::split(y, 3, 1);
      Tensor loss = tritium::add(tritium::add(tritium::sum(qkv[0]), tritium::sum(qkv[1])), tritium::sum(qkv[2]));
      return loss;
    };
    run().backward();  // compile outside the profile
    Tensor loss = run();
    Tensor one = tritium::ones_like(loss);  // the root's gradient, made outside the profile
    prof::Profile p;
    loss.backward(one);
    p.stop();
    int slice_ranges = 0, kernels_in_slices = 0, kernels_outside_nodes = 0;
    std::vector<int64_t> slice_ids;
    for (const prof::Event& e : p.events())
      if (e.kind == prof::EventKind::range && e.name == "SliceBackward") ++slice_ranges, slice_ids.push_back(e.id);
    for (const prof::Event& e : p.events()) {
      if (e.kind != prof::EventKind::kernel) continue;
      if (e.parent == -1) ++kernels_outside_nodes;  // the engine's own sums of gradients
      // A kernel inside a SliceBackward range, directly or inside an op it called.
      int64_t up = e.parent;
      for (int depth = 0; up != -1 && depth < 8; ++depth) {
        if (std::find(slice_ids.begin(), slice_ids.end(), up) != slice_ids.end()) {
          ++kernels_in_slices;
          break;
        }
        auto it = std::find_if(p.events().begin(), p.events().end(), [&](const prof::Event& f) { return f.id == up; });
        up = it == p.events().end() ? -1 : it->parent;
      }
    }
    BOOST_TEST(slice_ranges == 3);
    BOOST_TEST(kernels_in_slices <= 4, kernels_in_slices << " kernels in the three SliceBackward ranges");
    BOOST_TEST(kernels_in_slices >= 1);
    BOOST_TEST(kernels_outside_nodes == 0, kernels_outside_nodes << " kernels outside every node's range");
  });
}

BOOST_AUTO_TEST_SUITE_END()
