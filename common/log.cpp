#include "common/log.h"

#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "common/env.h"

namespace tritium {

void write_stderr(std::string_view text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to report a failing stderr
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void log_line(std::string_view message) {
  std::string line = fmt::format("[tritium] {}\n", message);
  // The mutex keeps lines whole even if a write is split.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  write_stderr(line);
}

void log_compile_event(std::string_view kernel, std::string_view backend, bool hit, double ms,
                       std::string_view detail) {
  if (!env().log_compile) return;
  log_line(fmt::format("compile {} {} {} {:.2f} ms{}", kernel, backend, hit ? "hit" : "miss", ms, detail));
}

}  // namespace tritium
