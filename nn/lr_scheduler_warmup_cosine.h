// The learning-rate schedule of GPT training (nanoGPT's get_lr, Hugging Face's
// get_cosine_schedule_with_warmup with a floor) from the library's schedulers: a linear warm-up
// from lr / warmup to lr over the first `warmup` steps (LinearLR), then a cosine from lr down to
// min_lr over the remaining total_steps - warmup steps (CosineAnnealingLR), joined by SequentialLR.
// Stepped once per optimiser step, after it; step s (counted from 0) runs at
//   lr (s + 1) / warmup                                        for s < warmup,
//   min_lr + (lr - min_lr) (1 + cos(pi (s - warmup) / (total_steps - warmup))) / 2   after,
// where lr is each group's lr when the schedule is built. The schedulers' chainable (PyTorch)
// forms give these values to within rounding (tests/test_train_gpt_schedule.cpp). Its
// state_dict() / load_state_dict() are SequentialLR's (or the one scheduler's when warmup is 0 or
// covers every step).
#pragma once
#include <cstdint>
#include <memory>

#include "nn/lr_scheduler.h"

namespace tritium::nn {

// Errors: warmup below 0, total_steps below 1, min_lr below 0.
std::shared_ptr<LRScheduler> warmup_cosine_lr(Optimizer& opt, int64_t warmup, int64_t total_steps, double min_lr);

}  // namespace tritium::nn
