// Profiling a few steps of a training loop (train-mnist's --profile FILE): step() is called at
// the end of every step; the profile starts after `warmup` steps (compilation and autotuning out
// of the way), records `steps` steps, then writes the Chrome trace to the path and prints the
// key_averages table (top `rows` by CPU total) to stdout. A run shorter than that is written by
// finish() with the steps it had. Each recorded step is a range "ProfilerStep#N" (N counts every
// step, warm-up included), as PyTorch's profiler schedule marks them. The trace file is created (empty) at construction, so a path
// that cannot be written is an error before training, not after it.
#pragma once
#include <memory>
#include <string>

#include "profiler/profile.h"

namespace tritium::profiler {

class StepProfiler {
 public:
  StepProfiler(std::string trace_path, int warmup = 3, int steps = 5, int rows = 15,
               ProfileOptions options = {.record_shapes = true, .profile_memory = true});
  ~StepProfiler();

  void step();
  void finish();  // idempotent
  bool done() const { return done_; }

 private:
  void begin_profile();
  void open_step();
  void close_step();
  std::string path_;
  int warmup_, steps_, rows_;
  ProfileOptions options_;
  int seen_ = 0;
  bool done_ = false;
  std::unique_ptr<Profile> profile_;
  detail::OpenScope step_range_;
};

}  // namespace tritium::profiler
