// Anomaly detection (torch.autograd.detect_anomaly / libtorch's DetectAnomalyGuard): while a guard
// is alive, every recorded node remembers where its forward op was called (a stack trace), and the
// backward pass checks each node's gradients for NaN, raising an error that names the node and
// that place. Thread-local, like grad mode; guards nest.
#pragma once
#include <string>

namespace tritium::autograd {

class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool enabled = true);
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool previous_;
};

bool anomaly_mode_enabled();
// Where the op being recorded was called from: the calling frames (function names, and source
// files where the binary has debug information), innermost first.
std::string anomaly_location();

}  // namespace tritium::autograd
