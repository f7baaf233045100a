// train-gpt's checkpoints (docs/gpt.md, "Checkpoints and resuming"): ONE safetensors file holding
// the model's tensors under their nanoGPT names (so safetensors.torch.load_file(...) and
// load_state_dict(strict=False) read the model in PyTorch) and, for resuming, everything else a
// run's future depends on:
//   tensors   optimizer.state.<i>.<name>   AdamW's state (nn/optim.h's layout, prefixed)
//             grad_scaler.scale, grad_scaler._growth_tracker   (with --amp f16 only)
//             rng.batches   the batch generator's state: get_batch's data position
//             rng.default   the default generator's (dropout's) state; one generator serves
//                           every device (ops/rng_state.h), so this is also the CUDA one
//   metadata  train-gpt.architecture, train-gpt.training (the options that shape the run),
//             train-gpt.step, train-gpt.loss_ema, train-gpt.data_position (the DataLoader's
//             "epoch,batch" with --workers), train-gpt.scheduler (its state_dict JSON),
//             optimizer.<key> (param_groups JSON, class), grad_scaler.<key>, format: pt
// Resuming restores all of it, so the steps after it compute exactly what an uninterrupted run
// computes (tests/train_gpt_resume.sh compares the losses bit for bit).
#pragma once
#include <cstdint>
#include <string>

#include "nn/gpt.h"
#include "nn/grad_scaler.h"
#include "nn/lr_scheduler.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tools/train_gpt_data.h"

namespace tritium::train_gpt {

// What a resumable checkpoint captures, by reference.
struct RunState {
  nn::GPT& model;
  nn::Optimizer& optimizer;
  nn::LRScheduler* scheduler;  // null when the run has no steps
  nn::GradScaler& scaler;
  ops::Generator& batches;  // the data position
  ops::Generator& dropout;  // the default generator
};

struct Progress {
  int64_t step = 0;       // optimiser steps done
  double loss_ema = 0;    // the progress bar's smoothed loss
  DataPosition data;      // the DataLoader's position (--workers; get_batch's is rng.batches)
};

// architecture / training: strings naming the model's shape and the options that shape the
// trajectory; resume_checkpoint refuses a file whose strings differ, naming both.
void save_checkpoint(const std::string& path, const RunState& run, const Progress& progress,
                     const std::string& architecture, const std::string& training);

// Restores everything save_checkpoint wrote. Errors (tritium::Error, naming the file): a missing,
// truncated or corrupt file, a checkpoint of another architecture or of other training options,
// one without the state resuming needs (a --save of train-gpt before resumable checkpoints).
Progress resume_checkpoint(const std::string& path, RunState& run, const std::string& architecture,
                           const std::string& training);

// The model alone (--load): any checkpoint save_checkpoint wrote, or an older model-only file.
void load_model(const std::string& path, nn::GPT& model, const std::string& architecture);

}  // namespace tritium::train_gpt
