// train-gpt's learning-rate schedule (nn/lr_scheduler_warmup_cosine.h: LinearLR warm-up, then
// CosineAnnealingLR, through SequentialLR) against the closed formula train-gpt used inline before
// (nanoGPT's get_lr), written out here: every step's lr of both parameter groups, for warm-ups of
// 0, 1, several steps and longer than the run; a state_dict saved mid-run and loaded into a fresh
// schedule continues bit for bit; bad arguments are errors naming them. Host arithmetic only.
#include <algorithm>
#include <cmath>
#include <memory>

#include "nn/lr_scheduler_warmup_cosine.h"
#include "test_support.h"

namespace tt = tritium::test;
using namespace tritium;

namespace {

// The formula of train-gpt before the schedulers: warm-up to lr, then a cosine down to min_lr at
// the last step.
double reference_lr(double lr, double min_lr, int64_t warmup, int64_t steps, int64_t step) {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (steps <= warmup) return lr;
  double progress = static_cast<double>(step - warmup) / static_cast<double>(std::max<int64_t>(1, steps - warmup));
  progress = std::min(progress, 1.0);
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (lr - min_lr);
}

// train-gpt's optimiser shape: one AdamW, two groups (weight decay on the matrices only).
std::unique_ptr<nn::AdamW> make_optimizer(double lr) {
  auto param = [](int64_t n) {
    Tensor p = Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 0.5f));
    p.requires_grad_(true);
    return p;
  };
  std::vector<nn::ParamGroup> groups{{{param(6)}, {}}, {{param(3)}, {{"weight_decay", 0.0}}}};
  return std::make_unique<nn::AdamW>(groups, lr, std::pair{0.9, 0.99}, 1e-8, 0.1);
}

// The lr step s runs at, for s = 0 .. steps - 1: read before the step, the scheduler stepped after.
void check_trajectory(double lr, double min_lr, int64_t warmup, int64_t steps) {
  auto opt = make_optimizer(lr);
  auto sched = nn::warmup_cosine_lr(*opt, warmup, steps, min_lr);
  for (int64_t s = 0; s < steps; ++s) {
    const double want = reference_lr(lr, min_lr, warmup, steps, s);
    for (size_t g = 0; g < 2; ++g) {
      const double got = opt->param_groups()[g].option("lr");
      BOOST_TEST(std::abs(got - want) <= 1e-13 * want, "warmup " << warmup << ", steps " << steps << ", step " << s
                                                                  << ", group " << g << ": lr " << got << " vs " << want);
    }
    sched->step();
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_train_gpt_schedule)

BOOST_AUTO_TEST_CASE(equals_the_warmup_cosine_formula) {
  check_trajectory(2e-3, 2e-4, 100, 1500);  // the CPU defaults
  check_trajectory(1e-3, 1e-4, 100, 5000);  // the GPU defaults
  check_trajectory(3e-3, 0.0, 7, 23);
  check_trajectory(1e-2, 1e-3, 1, 9);       // one warm-up step at lr
  check_trajectory(1e-2, 1e-3, 0, 9);       // no warm-up: the cosine from the first step
  check_trajectory(1e-2, 1e-3, 12, 5);      // every step warms up
  check_trajectory(1e-2, 1e-3, 5, 5);
  check_trajectory(1e-2, 1e-3, 4, 5);       // one cosine step (at lr)
}

// What --resume relies on: the schedule's state after k steps, loaded into a schedule built anew,
// gives the same lrs, bit for bit, as the one that went on.
BOOST_AUTO_TEST_CASE(state_dict_resumes_bit_for_bit) {
  for (int64_t k : {0, 3, 9, 10, 25}) {
    auto opt = make_optimizer(2e-3);
    auto sched = nn::warmup_cosine_lr(*opt, 10, 40, 2e-4);
    for (int64_t s = 0; s < k; ++s) sched->step();
    const std::string state = sched->state_dict();

    auto opt2 = make_optimizer(2e-3);
    auto sched2 = nn::warmup_cosine_lr(*opt2, 10, 40, 2e-4);
    sched2->load_state_dict(state);
    // The optimiser's groups carry the lr (saved with the optimiser's state in train-gpt).
    for (size_t g = 0; g < 2; ++g) opt2->param_groups()[g].option("lr") = opt->param_groups()[g].option("lr");
    for (int64_t s = k; s < 40; ++s) {
      sched->step(), sched2->step();
      for (size_t g = 0; g < 2; ++g)
        BOOST_TEST(opt2->param_groups()[g].option("lr") == opt->param_groups()[g].option("lr"),
                   "resumed after " << k << ", step " << s << ", group " << g);
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
  auto opt = make_optimizer(1e-3);
  tt::check_throws([&] { nn::warmup_cosine_lr(*opt, -1, 10, 0.0); }, {"warmup_cosine_lr", "warmup", "-1"});
  tt::check_throws([&] { nn::warmup_cosine_lr(*opt, 2, 0, 0.0); }, {"warmup_cosine_lr", "total_steps", "0"});
  tt::check_throws([&] { nn::warmup_cosine_lr(*opt, 2, 10, -1e-3); }, {"warmup_cosine_lr", "min_lr"});
}

BOOST_AUTO_TEST_SUITE_END()
