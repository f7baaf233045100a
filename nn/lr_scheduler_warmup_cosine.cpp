// A linear warm-up then a cosine decay, from LinearLR, CosineAnnealingLR and SequentialLR
// (nn/lr_scheduler_warmup_cosine.h).
#include "nn/lr_scheduler_warmup_cosine.h"

#include <algorithm>

#include "common/error.h"

namespace tritium::nn {

std::shared_ptr<LRScheduler> warmup_cosine_lr(Optimizer& opt, int64_t warmup, int64_t total_steps, double min_lr) {
  if (warmup < 0) fail("warmup_cosine_lr: warmup must be at least 0, got {}", warmup);
  if (total_steps < 1) fail("warmup_cosine_lr: total_steps must be at least 1, got {}", total_steps);
  if (!(min_lr >= 0)) fail("warmup_cosine_lr: min_lr must be at least 0, got {}", min_lr);
  // LinearLR's factor at epoch e is 1/W + (1 - 1/W) e / (W - 1) = (e + 1) / W; at W = 1 the one
  // warm-up step runs at lr (start and end factors 1; LinearLR wants total_iters >= 1).
  auto linear = [&] {
    return std::make_shared<LinearLR>(opt, 1.0 / static_cast<double>(warmup), 1.0, std::max<int64_t>(1, warmup - 1));
  };
  if (warmup >= total_steps) return linear();  // every step warms up
  auto cosine = [&] { return std::make_shared<CosineAnnealingLR>(opt, total_steps - warmup, min_lr); };
  if (warmup == 0) return cosine();
  // Built in this order as PyTorch's users do: each construction steps the optimiser's lr, and
  // SequentialLR puts the initial lrs back and restarts the first.
  std::shared_ptr<LRScheduler> first = linear();
  std::shared_ptr<LRScheduler> second = cosine();
  return std::make_shared<SequentialLR>(opt, std::vector<std::shared_ptr<LRScheduler>>{first, second},
                                        std::vector<int64_t>{warmup});
}

}  // namespace tritium::nn
