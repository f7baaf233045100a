// Command-line parsing shared by Tritium's programs (tools/, bench/, the tutorials): a number
// is taken only when the whole argument is one and it lies in the option's range, a choice only
// when it is one of the listed values, and main() ends a mistake with one line on stderr and exit
// status 2, never an abort.
//
//   int main(int argc, char** argv) {
//     return tritium::cli::run_main("my-tool", [&] {
//       tritium::cli::Args args(argc, argv, kUsage);   // --help prints kUsage, exits 0
//       while (args.next()) {
//         if (args.is("--epochs")) epochs = tritium::cli::parse_int(args.option(), args.value(), 1, 100000);
//         else args.unknown();
//       }
//       ...
//     });
//   }
#pragma once
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/device.h"

namespace tritium::cli {

// A mistake on the command line: run_main prints it, with a pointer to --help, and returns 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole of `text` as an integer in [lo, hi].
inline int64_t parse_int(std::string_view option, std::string_view text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    throw UsageError(fmt::format("{}: expected an integer in [{}, {}], got '{}'", option, lo, hi, text));
  return v;
}

// The whole of `text` as an unsigned 64-bit integer (seeds).
inline uint64_t parse_uint64(std::string_view option, std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw UsageError(fmt::format("{}: expected an integer in [0, 2^64 - 1], got '{}'", option, text));
  return v;
}

// The whole of `text` as a finite number in [lo, hi].
inline double parse_double(std::string_view option, std::string_view text, double lo, double hi) {
  std::string s(text);
  char* end = nullptr;
  double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < lo || v > hi)
    throw UsageError(fmt::format("{}: expected a number in [{}, {}], got '{}'", option, lo, hi, text));
  return v;
}

// "4096,8192": integers in [lo, hi] separated by commas, none empty.
inline std::vector<int64_t> parse_int_list(std::string_view option, std::string_view text, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  size_t p = 0;
  while (true) {
    size_t q = text.find(',', p);
    std::string_view item = text.substr(p, q == std::string_view::npos ? std::string_view::npos : q - p);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < lo || v > hi)
      throw UsageError(fmt::format("{}: expected integers in [{}, {}] separated by commas, got '{}'", option, lo, hi, text));
    out.push_back(v);
    if (q == std::string_view::npos) return out;
    p = q + 1;
  }
}

// `text` if it is one of `choices`.
inline std::string parse_choice(std::string_view option, std::string_view text,
                                std::initializer_list<std::string_view> choices) {
  std::string list;
  for (std::string_view c : choices) {
    if (c == text) return std::string(text);
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw UsageError(fmt::format("{}: expected one of {}, got '{}'", option, list, text));
}

// "cpu", "cuda" or "cuda:N" (whether that device is available is the program's question).
inline Device parse_device(std::string_view option, std::string_view text) {
  try {
    return Device::parse(std::string(text));
  } catch (const Error& e) {
    throw UsageError(fmt::format("{}: {}", option, e.what()));
  }
}

// Walks argv option by option. --help (or -h) prints the usage text to stdout and exits 0.
class Args {
 public:
  Args(int argc, char** argv, std::string usage, int first = 1)
      : argc_(argc), argv_(argv), usage_(std::move(usage)), i_(first - 1) {}

  // Moves to the next option; false when there is none left.
  bool next() {
    if (++i_ >= argc_) return false;
    option_ = argv_[i_];
    if (option_ == "--help" || option_ == "-h") {
      std::fputs(usage_.c_str(), stdout);
      std::exit(0);
    }
    return true;
  }
  const std::string& option() const { return option_; }
  bool is(std::string_view name) const { return option_ == name; }
  // The current option's value: the next argument.
  std::string value() {
    if (i_ + 1 >= argc_) throw UsageError(fmt::format("{} needs a value", option_));
    return argv_[++i_];
  }
  [[noreturn]] void unknown() const { throw UsageError(fmt::format("unknown option '{}'", option_)); }

 private:
  int argc_;
  char** argv_;
  std::string usage_;
  int i_;
  std::string option_;
};

// Runs a program's body: a UsageError or a tritium::Error becomes one line on stderr and exit
// status 2; another exception one line and status 1.
template <class F> int run_main(const char* program, F&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s (--help lists the options)\n", program, e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace tritium::cli
