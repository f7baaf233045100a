// The profiler, in the manner of torch.profiler: a Profile records, while it lives (or until
// stop()), every op called through the dispatch (nn::call: name, input shapes and dtypes, CPU
// time, nesting), every kernel launch (name, grid, CPU launch time and, on CUDA, GPU time from a
// pair of events per launch, read only when the profile stops so recording never synchronises),
// every named range (record_function) and, when asked, every tensor buffer allocated and freed.
//
//   namespace prof = tritium::profiler;
//   prof::Profile p({.record_shapes = true, .profile_memory = true});
//   { prof::record_function r("forward"); loss = model.forward(x); }
//   p.stop();
//   fmt::print("{}", p.key_averages().table("cpu_time_total", 15));
//   p.export_chrome_trace("trace.json");   // Perfetto / chrome://tracing
//
// One profile records at a time (another while one records is an error, as in PyTorch). Events
// of every thread are recorded; a scope still open on another thread when the profile stops is
// left out. See docs/profiler.md.
#pragma once
#include <string>
#include <vector>

#include "profiler/event.h"
#include "profiler/hooks.h"
#include "profiler/key_averages.h"

namespace tritium::profiler {

struct ProfileOptions {
  bool record_shapes = false;   // input shapes and dtypes of each op (grouping by shape needs it)
  bool profile_memory = false;  // allocations and frees of tensor buffers
  bool cuda_timing = true;      // a pair of CUDA events around each kernel launched on a GPU
};

class Profile {
 public:
  explicit Profile(ProfileOptions options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  // Ends the recording and reads the GPU times (waits for the timed kernels). Idempotent.
  void stop();
  bool recording() const { return !stopped_; }

  // The events in the order they ended (the accessors below stop the profile first).
  const std::vector<Event>& events();
  KeyAverages key_averages(bool group_by_input_shape = false);
  // Chrome trace-event JSON (see profiler/chrome_trace.h); an error names the path when it
  // cannot be written.
  void export_chrome_trace(const std::string& path);

  const ProfileOptions& options() const { return options_; }

 private:
  ProfileOptions options_;
  bool stopped_ = false;
  std::vector<Event> events_;
};

// A named range (torch.profiler.record_function): an RAII scope recorded as an event, with the
// ops and kernels called inside it as its children. Costs one flag check when no profile records.
class RecordFunction {
 public:
  explicit RecordFunction(std::string_view name) {
    if (detail::recording()) scope_ = detail::begin_range(name);
  }
  ~RecordFunction() {
    if (scope_.id >= 0) detail::end_scope(scope_);
  }
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  detail::OpenScope scope_;
};
using record_function = RecordFunction;  // PyTorch's spelling

// Whether a profile is recording now.
inline bool is_recording() { return detail::recording(); }

}  // namespace tritium::profiler
