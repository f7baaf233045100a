#include "profiler/step_profiler.h"

#include <cstdio>

#include <fmt/format.h>

#include "io/text_file.h"

namespace tritium::profiler {

StepProfiler::StepProfiler(std::string trace_path, int warmup, int steps, int rows, ProfileOptions options)
    : path_(std::move(trace_path)), warmup_(warmup), steps_(steps), rows_(rows), options_(options) {
  io::write_text_file(path_, "");  // a path that cannot be written fails now, not after the run
  if (warmup_ <= 0) begin_profile();
}

StepProfiler::~StepProfiler() {
  if (profile_) profile_->stop();  // never write from a destructor: an unwritten trace is finish()'s job
}

void StepProfiler::begin_profile() {
  profile_ = std::make_unique<Profile>(options_);
  open_step();
}

void StepProfiler::open_step() { step_range_ = detail::begin_range(fmt::format("ProfilerStep#{}", seen_)); }

void StepProfiler::close_step() {
  if (step_range_.id >= 0) detail::end_scope(step_range_);
  step_range_ = {};
}

void StepProfiler::step() {
  if (done_) return;
  ++seen_;
  if (!profile_) {
    if (seen_ >= warmup_) begin_profile();
    return;
  }
  close_step();
  if (seen_ >= warmup_ + steps_) finish();
  else open_step();
}

void StepProfiler::finish() {
  if (done_ || !profile_) return;
  done_ = true;
  close_step();  // a step cut short by finish() is recorded up to here
  profile_->stop();
  profile_->export_chrome_trace(path_);
  const int recorded = seen_ - std::max(warmup_, 0);
  fmt::print("profile of {} step{} (after {} warm-up step{}), Chrome trace in {}:\n{}", recorded, recorded == 1 ? "" : "s",
             std::max(warmup_, 0), warmup_ == 1 ? "" : "s", path_, profile_->key_averages().table("cpu_time_total", rows_));
  std::fflush(stdout);
}

}  // namespace tritium::profiler
