// Command line shared by the tutorials: --bench runs the benchmark after the check, and
// --backend cpu|cuda picks the device (default: the best available). A build with no backend
// at all exits with 77, which CTest reports as skipped.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <tritium/tritium.h>

namespace tutorial {

struct Args {
  bool bench = false;
  tritium::Device device = tritium::Device::cpu();
};

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
    } else {
      std::fprintf(stderr, "usage: %s [--bench] [--backend cpu|cuda]\n", argv[0]);
      std::exit(2);
    }
  }
  return a;
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
