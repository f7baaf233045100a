// Gradient checkpointing of the GPT's blocks (GPTConfig::gradient_checkpointing, nn::checkpoint
// with the block's parameters captured): the loss and every parameter's gradient equal those of
// the same model without it, with dropout > 0 (the recomputation replays the dropout masks) and
// under bf16 autocast (the recomputation casts as the forward did); bit for bit on the CPU, where
// the recomputation runs the same kernels on the same values; on CUDA to 1e-6 (the embedding's
// backward accumulates with atomics there, in any order). The forward keeps less memory (the
// blocks' inputs only); a parameter changed in place before backward is the version error.
#include <cmath>

#include "nn/autocast.h"
#include "nn/autograd.h"
#include "nn/checkpoint.h"
#include "nn/gpt.h"
#include "ops/rng_state.h"
#include "runtime/memory_stats.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace nn = tritium::nn;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Generator;
using tritium::Tensor;

namespace {

nn::GPTConfig config(double dropout, bool checkpointing, int64_t layers = 3, int64_t blocks = -1) {
  return nn::GPTConfig{.vocab_size = 29, .block_size = 11, .n_layer = layers, .n_head = 2, .n_embd = 12,
                       .dropout = dropout, .bias = true, .gradient_checkpointing = checkpointing,
                       .checkpoint_blocks = blocks};
}

Tensor random_tokens(int64_t B, int64_t T, int64_t vocab, uint32_t seed) {
  auto r = tt::random_vector<double>(static_cast<size_t>(B * T), seed, 0, static_cast<double>(vocab) - 1e-9);
  std::vector<int64_t> ids;
  for (double x : r) ids.push_back(static_cast<int64_t>(std::floor(x)));
  return Tensor::from_vector(ids, {B, T});
}

struct Result {
  double loss;
  std::vector<std::pair<std::string, std::vector<double>>> grads;
};

// Two training steps' worth of forward + backward (the second after more draws from the default
// generator), from the same initialisation and the same dropout seed.
Result run(bool checkpointing, double dropout, bool amp, int64_t blocks = -1) {
  Generator init(7);
  nn::GPT model(config(dropout, checkpointing, 3, blocks), init);
  ops::manual_seed(99);
  const int64_t B = 3, T = 10;  // T below the context
  Result r{0, {}};
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = random_tokens(B, T, 29, 40 + rep), y = random_tokens(B, T, 29, 50 + rep);
    Tensor loss;
    {
      nn::autocast scope(tritium::default_device().kind, DType::bf16, amp);
      loss = model.loss(x, y);
    }
    loss.backward();
    r.loss += loss.to(DType::f64).to_vector<double>()[0];
  }
  for (auto& [name, p] : model.named_parameters()) {
    BOOST_REQUIRE_MESSAGE(p.grad().defined(), name << " has no gradient");
    r.grads.emplace_back(name, p.grad().to(DType::f64).to_vector<double>());
  }
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_gpt_checkpoint)

BOOST_AUTO_TEST_CASE(gradients_equal_those_without_checkpointing) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const double tol = be.device.is_cpu() ? 0.0 : 1e-6;
    for (double dropout : {0.0, 0.3})
      for (bool amp : {false, true})
        for (int64_t blocks : {-1, 2}) {  // every block, or the first 2 of 3 (checkpoint_blocks)
          if (blocks == 2 && (amp || dropout == 0.0)) continue;  // one case of it suffices (test time)
          BOOST_TEST_CONTEXT("dropout " << dropout << ", bf16 autocast " << amp << ", checkpoint_blocks " << blocks) {
            Result plain = run(false, dropout, amp), ckpt = run(true, dropout, amp, blocks);
            BOOST_TEST(std::isfinite(plain.loss));
            BOOST_TEST(std::abs(ckpt.loss - plain.loss) <= tol * std::abs(plain.loss));
            BOOST_REQUIRE_EQUAL(ckpt.grads.size(), plain.grads.size());
            for (size_t i = 0; i < plain.grads.size(); ++i) {
              const auto& [name, want] = plain.grads[i];
              const auto& got = ckpt.grads[i].second;
              double max_diff = 0, max_abs = 0;
              for (size_t k = 0; k < want.size(); ++k) {
                max_diff = std::max(max_diff, std::abs(got[k] - want[k]));
                max_abs = std::max(max_abs, std::abs(want[k]));
              }
              BOOST_TEST(max_abs > 0.0, name << ": an all-zero gradient cannot tell the two apart");
              BOOST_TEST(max_diff <= tol * max_abs, name << ": max difference " << max_diff << " (max " << max_abs << ")");
            }
          }
        }
    // Dropout does change the gradients (so the comparison above would see a different mask).
    Result a = run(false, 0.0, false), b = run(false, 0.3, false);
    BOOST_TEST(a.loss != b.loss);
  });
}

// The forward of a checkpointed model keeps the blocks' inputs only: less memory stays allocated
// between forward and backward than without checkpointing.
BOOST_AUTO_TEST_CASE(forward_keeps_less_memory, *tt::needs_cpu_backend()) {
  tritium::DefaultDeviceGuard on_cpu(tritium::Device::cpu());
  auto kept = [](bool checkpointing) {
    Generator init(3);
    nn::GPT model(config(0.1, checkpointing, 4), init);
    Tensor x = random_tokens(8, 11, 29, 1), y = random_tokens(8, 11, 29, 2);
    const size_t before = tritium::memory_allocated(tritium::Device::cpu());
    Tensor loss = model.loss(x, y);
    const size_t after = tritium::memory_allocated(tritium::Device::cpu());
    loss.backward();
    return static_cast<double>(after - before);
  };
  const double plain = kept(false), ckpt = kept(true);
  BOOST_TEST_MESSAGE("bytes kept by the forward: " << plain << " plain, " << ckpt << " checkpointed");
  BOOST_TEST(ckpt < 0.5 * plain);
}

BOOST_AUTO_TEST_CASE(checkpoint_blocks_out_of_range_is_an_error) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator init(5);
    tt::check_throws([&] { nn::GPT(config(0.0, true, 3, 4), init); },
                     {"GPTConfig", "checkpoint_blocks", "n_layer = 3", "got 4"});
    tt::check_throws([&] { nn::GPT(config(0.0, true, 3, -2), init); }, {"GPTConfig", "checkpoint_blocks", "got -2"});
  });
}

BOOST_AUTO_TEST_CASE(a_parameter_changed_before_backward_is_an_error) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator init(5);
    nn::GPT model(config(0.0, true, 1), init);
    Tensor loss = model.loss(random_tokens(2, 5, 29, 3), random_tokens(2, 5, 29, 4));
    {
      nn::NoGradGuard no_grad;
      model.blocks[0]->mlp->c_fc->weight.mul_(2.0);
    }
    tt::check_throws([&] { loss.backward(); },
                     {"CheckpointFunctionBackward", "modified by an inplace operation", "captured tensor"});
  });
}

BOOST_AUTO_TEST_SUITE_END()
