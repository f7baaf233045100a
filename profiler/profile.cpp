// Profile: starts the recorder, and after stop() owns the events it recorded.
#include "profiler/profile.h"

#include "common/error.h"
#include "profiler/chrome_trace.h"
#include "profiler/recorder.h"

namespace tritium::profiler {

const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::op: return "op";
    case EventKind::range: return "range";
    case EventKind::kernel: return "kernel";
    case EventKind::memory: return "memory";
    case EventKind::collective: return "collective";
  }
  return "?";
}

Profile::Profile(ProfileOptions options) : options_(options) { detail::start_recording(options_); }

Profile::~Profile() {
  try {
    stop();
  } catch (const Error&) {  // never throw from a destructor (a GPU error while reading times)
  }
}

void Profile::stop() {
  if (stopped_) return;
  stopped_ = true;
  events_ = detail::stop_recording();
}

const std::vector<Event>& Profile::events() {
  stop();
  return events_;
}

KeyAverages Profile::key_averages(bool group_by_input_shape) {
  stop();
  return KeyAverages(events_, group_by_input_shape);
}

void Profile::export_chrome_trace(const std::string& path) {
  stop();
  write_chrome_trace(events_, path);
}

}  // namespace tritium::profiler
