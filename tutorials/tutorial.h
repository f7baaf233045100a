// Command line shared by the tutorials: --bench runs the benchmark after the check,
// --backend cpu|cuda|cuda:N picks the device (default: the best available), --sizes 4096,8192
// replaces the benchmark's problem sizes (elements, columns or M = N = K, as each table says),
// --help lists them. A build with no backend at all exits with 77, which CTest reports as skipped.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <tritium/tritium.h>

#include "tools/cli.h"

namespace tutorial {

struct Args {
  bool bench = false;
  tritium::Device device = tritium::Device::cpu();
  std::vector<int64_t> sizes;  // --sizes: empty = the tutorial's own list
};

inline std::string usage(const char* argv0) {
  return std::string("usage: ") + argv0 +
         " [--bench] [--backend cpu|cuda|cuda:N] [--sizes N,N,...]\n"
         "  --bench          run the benchmark after the check\n"
         "  --backend D      the device (default: a GPU when there is one, else cpu)\n"
         "  --sizes LIST     the benchmark's problem sizes, each from 1 to 2^31 - 1\n"
         "  --help           this text\n";
}

// A usage mistake is a tritium::cli::UsageError (run() turns it into one line and status 2).
inline Args parse_args(int argc, char** argv) {
  namespace cli = tritium::cli;
  Args a;
  std::optional<tritium::Device> backend;
  cli::Args args(argc, argv, usage(argv[0]));
  while (args.next()) {
    if (args.is("--bench")) a.bench = true;
    else if (args.is("--backend")) backend = cli::parse_device(args.option(), args.value());
    else if (args.is("--sizes")) a.sizes = cli::parse_int_list("--sizes", args.value(), 1, INT32_MAX);
    else args.unknown();
  }
  if (backend) {
    a.device = *backend;
    if (!tritium::runtime::device_available(a.device)) {
      std::fprintf(stderr, "backend %s is unavailable: %s\n", a.device.str().c_str(),
                   tritium::runtime::device_unavailable_reason(a.device).c_str());
      std::exit(2);
    }
    return a;
  }
  if (tritium::runtime::device_available(tritium::Device::cuda())) a.device = tritium::Device::cuda();
  if (!tritium::runtime::device_available(a.device)) {
    std::fprintf(stderr, "skipped: no backend is available (%s)\n",
                 tritium::runtime::device_unavailable_reason(a.device).c_str());
    std::exit(77);
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

// main() of a tutorial: parses the arguments, runs body(args); a usage mistake or a
// tritium::Error ends it with one line and exit status 2 (a failed check returns 1 from body).
template <class F> int run(int argc, char** argv, F&& body) {
  std::string program = argv[0];
  program = program.substr(program.rfind('/') + 1);
  return tritium::cli::run_main(program.c_str(), [&] { return body(parse_args(argc, argv)); });
}

}  // namespace tutorial
