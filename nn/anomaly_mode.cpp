// Anomaly mode's flag and the stack trace each node records while it is on (see nn/anomaly_mode.h).
#include "nn/anomaly_mode.h"

#include <sstream>

#include <boost/stacktrace.hpp>

namespace tritium::autograd {
namespace {
thread_local bool t_anomaly_mode = false;
}  // namespace

DetectAnomalyGuard::DetectAnomalyGuard(bool enabled) : previous_(t_anomaly_mode) { t_anomaly_mode = enabled; }
DetectAnomalyGuard::~DetectAnomalyGuard() { t_anomaly_mode = previous_; }
bool anomaly_mode_enabled() { return t_anomaly_mode; }

std::string anomaly_location() {
  // Skips this function and nn::record; the rest are the op's callers up to the user's code.
  boost::stacktrace::stacktrace trace(2, 24);
  std::ostringstream out;
  for (const boost::stacktrace::frame& f : trace) {
    std::string name = f.name();
    if (name.empty()) continue;
    out << "\n  " << name;
    if (std::string file = f.source_file(); !file.empty()) out << " at " << file << ":" << f.source_line();
  }
  return out.str();
}

}  // namespace tritium::autograd
