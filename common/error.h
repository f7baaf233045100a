// tritium::Error: the one exception type users see. Trace-time errors carry the user's
// source location (file:line) so a mistake points at the kernel line that made it.
#pragma once
#include <source_location>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace tritium {

// Where in user code an op was written. Empty file means "unknown".
struct SourceLoc {
  const char* file = "";
  unsigned line = 0;
  unsigned column = 0;

  static SourceLoc from(const std::source_location& l) {
    return {l.file_name(), static_cast<unsigned>(l.line()), static_cast<unsigned>(l.column())};
  }
  bool known() const { return file && file[0] && line > 0; }
  std::string str() const { return known() ? fmt::format("{}:{}", file, line) : std::string("<unknown>"); }
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  Error(const SourceLoc& loc, const std::string& message)
      : std::runtime_error(loc.known() ? fmt::format("{}: {}", loc.str(), message) : message), loc_(loc) {}
  const SourceLoc& where() const { return loc_; }

 private:
  SourceLoc loc_;
};

// A kernel that needs more of the device than it has (registers, shared memory, threads per
// block): a property of the compiled code and the device, never of the data it is given, so
// the autotuner remembers it as it remembers a compile failure.
class ResourceError : public Error {
 public:
  using Error::Error;
};

// Formats and throws; `op` names the operation the user called.
template <class... Args>
[[noreturn]] void fail(const SourceLoc& loc, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(loc, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tritium
