// Command line shared by the tutorials: --bench runs the benchmark after the check,
// --backend cpu|cuda picks the device (default: the best available), and --sizes 4096,8192
// replaces the benchmark's problem sizes (elements, columns or M = N = K, as each table says).
// A build with no backend at all exits with 77, which CTest reports as skipped.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <tritium/tritium.h>

namespace tutorial {

struct Args {
  bool bench = false;
  tritium::Device device = tritium::Device::cpu();
  std::vector<int64_t> sizes;  // --sizes: empty = the tutorial's own list
};

[[noreturn]] inline void usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--bench] [--backend cpu|cuda] [--sizes N,N,...]\n", argv0);
  std::exit(2);
}

// "4096,8192" -> {4096, 8192}; anything but positive integers separated by commas is a usage error.
inline std::vector<int64_t> parse_sizes(const char* text, const char* argv0) {
  std::vector<int64_t> sizes;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    long long v = std::strtoll(p, &end, 10);
    if (end == p || v <= 0 || (*end && *end != ',')) {
      std::fprintf(stderr, "--sizes: expected positive integers separated by commas, got \"%s\"\n", text);
      usage(argv0);
    }
    sizes.push_back(v);
    p = *end ? end + 1 : end;
  }
  if (sizes.empty()) usage(argv0);
  return sizes;
}

inline Args parse_args(int argc, char** argv) {
  Args a;
  if (tritium::runtime::device_available(tritium::Device::cuda())) a.device = tritium::Device::cuda();
  if (!tritium::runtime::device_available(a.device)) {
    std::fprintf(stderr, "skipped: no backend is available (%s)\n",
                 tritium::runtime::device_unavailable_reason(a.device).c_str());
    std::exit(77);
  }
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bench")) {
      a.bench = true;
    } else if (!std::strcmp(argv[i], "--backend") && i + 1 < argc) {
      a.device = tritium::Device::parse(argv[++i]);
      if (!tritium::runtime::device_available(a.device)) {
        std::fprintf(stderr, "backend %s is unavailable: %s\n", argv[i],
                     tritium::runtime::device_unavailable_reason(a.device).c_str());
        std::exit(2);
      }
    } else if (!std::strcmp(argv[i], "--sizes") && i + 1 < argc) {
      a.sizes = parse_sizes(argv[++i], argv[0]);
    } else {
      usage(argv[0]);
    }
  }
  return a;
}

// The benchmark's problem sizes: --sizes when given, else the tutorial's defaults.
inline std::vector<int64_t> bench_sizes(const Args& a, std::vector<int64_t> defaults) {
  return a.sizes.empty() ? defaults : a.sizes;
}

// 2^lo, ..., 2^hi.
inline std::vector<int64_t> powers_of_two(int lo, int hi) {
  std::vector<int64_t> v;
  for (int e = lo; e <= hi; ++e) v.push_back(int64_t(1) << e);
  return v;
}

// main() of a tutorial: parses the arguments, runs body(args), and turns a tritium::Error into a
// message and exit status 1.
template <class F> int run(int argc, char** argv, F&& body) {
  Args args = parse_args(argc, argv);
  try {
    return body(args);
  } catch (const tritium::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace tutorial
