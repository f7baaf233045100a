// checkpoint(fn, inputs) (recompute in backward, the random generators restored so dropout draws
// the same mask) against the same function run without it, and the library gradcheck /
// gradgradcheck: they pass on correct derivatives and raise a clear error naming the input and the
// element on a wrong first or second derivative.
#include "autograd_leaf.h"
#include "test_support.h"

#include "nn/checkpoint.h"
#include "nn/custom_function.h"
#include "nn/functional.h"
#include "nn/gradcheck.h"

namespace tt = tritium::test;
namespace ag = tritium::autograd;
namespace nn = tritium::nn;
using tritium::DType;
using tritium::Tensor;
using ag::AutogradContext;
using ag::tensor_list;
using Shape = std::vector<int64_t>;

namespace {

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// A block with dropout between two layers: its gradient depends on the mask drawn.
Tensor block(const tensor_list& in) {
  Tensor h = tritium::tanh(tritium::matmul(in[0], in[1]));
  return tritium::matmul(tritium::dropout(h, 0.4), in[2]);
}

// x² with a wrong first derivative (3x instead of 2x).
struct WrongSquare : ag::Function<WrongSquare> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list g) { return {g[0] * ctx->get_saved_variables()[0] * 3.0}; }
};

// x³ with a right first derivative computed from a detached x: its second derivative is missing.
struct CubeDetachedBackward : ag::Function<CubeDetachedBackward> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list g) {
    Tensor x = ctx->get_saved_variables()[0].detach();
    return {g[0] * x * x * 3.0};
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autograd_checkpoint)

BOOST_AUTO_TEST_CASE(checkpoint_matches_the_plain_function) {
  tt::for_each_backend([&](const tt::Backend&) {
    tensor_list plain_in{tt::random_leaf({5, 7}, 1), tt::random_leaf({7, 6}, 2), tt::random_leaf({6, 3}, 3)};
    tensor_list ckpt_in;
    for (const Tensor& t : plain_in) ckpt_in.push_back(t.detach().clone().requires_grad_());
    Tensor weights = Tensor::from_vector(tt::random_vector<double>(15, 4, 0.5, 1.5), {5, 3});

    tritium::ops::default_generator().manual_seed(1234);
    Tensor plain = block(plain_in);
    tritium::sum(plain * weights).backward();

    tritium::ops::default_generator().manual_seed(1234);
    Tensor ckpt = nn::checkpoint(block, ckpt_in);
    BOOST_TEST(ckpt.autograd()->grad_fn->name() == "CheckpointFunctionBackward");
    tt::check_close<double>(values(ckpt), values(plain), 0, "checkpointed forward");
    // Draws in between must not change the recomputation's mask.
    (void)tritium::ops::rand({100}, tritium::ops::default_generator(), DType::f32);
    uint64_t offset_before = tritium::ops::default_generator().offset();
    tritium::sum(ckpt * weights).backward();
    BOOST_TEST(tritium::ops::default_generator().offset() == offset_before);  // the generator is given back
    for (size_t k = 0; k < 3; ++k)
      tt::check_close<double>(values(ckpt_in[k].grad()), values(plain_in[k].grad()), 1e-14,
                              "gradient of input " + std::to_string(k));

    // Modifying a kept input before backward is an error.
    Tensor h = ckpt_in[0] * 1.0;
    Tensor out = nn::checkpoint([](const tensor_list& in) { return tritium::exp(in[0]); }, {h});
    {
      nn::NoGradGuard no_grad;
      h.add_(1.0);
    }
    tt::check_throws([&] { tritium::sum(out).backward(); }, {"CheckpointFunctionBackward", "modified by an inplace operation"},
                     "checkpoint input modified");
    // Under no_grad, or with no input requiring grad, it is just the call.
    nn::NoGradGuard no_grad;
    BOOST_TEST(!nn::checkpoint(block, ckpt_in).requires_grad());
  });
}

BOOST_AUTO_TEST_CASE(gradcheck_library_functions) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = tt::random_leaf({3, 4}, 5), b = tt::random_leaf({4}, 6);
    BOOST_TEST(ag::gradcheck([](const tensor_list& in) { return tritium::log_softmax(in[0] * in[1], 1); }, {a, b}));
    BOOST_TEST(ag::gradgradcheck([](const tensor_list& in) { return tritium::sigmoid(in[0]) / (in[1] + 2.0); }, {a, b}));
    tt::check_throws([&] { ag::gradcheck([](const tensor_list& in) { return WrongSquare::apply(in[0]); }, {tt::random_leaf({3}, 7)}); },
                     {"gradcheck", "Jacobian mismatch for output 0 with respect to input 0", "analytical", "numerical"},
                     "wrong first derivative");
    BOOST_TEST(ag::gradcheck([](const tensor_list& in) { return CubeDetachedBackward::apply(in[0]); }, {tt::random_leaf({3}, 8)}));
    tt::check_throws(
        [&] { ag::gradgradcheck([](const tensor_list& in) { return CubeDetachedBackward::apply(in[0]); }, {tt::random_leaf({3}, 8)}); },
        {"gradcheck", "Jacobian mismatch", "with respect to input 0"}, "missing second derivative");
    Tensor plain = Tensor::from_vector(std::vector<double>{1, 2}, {2});
    tt::check_throws([&] { ag::gradcheck([](const tensor_list& in) { return in[0] * 2.0; }, {plain}); },
                     {"gradcheck", "at least one input tensor to require gradient"}, "no input requires grad");
  });
}

BOOST_AUTO_TEST_SUITE_END()
