// tritium-kernels: the real-world kernel suite (kernels/suite.h).
//   tritium-kernels --list                          the kernels, their categories and sources
//   tritium-kernels --check all|NAME... [--backend cpu|cuda]   each check against float64 (status 1 on a failure)
//   tritium-kernels --bench all|NAME... [--backend cpu|cuda]   one line a measurement:
//                                                   "bench NAME | SHAPE | MS | RATE UNIT"
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "suite.h"

namespace {

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s --list | --check all|NAME... | --bench all|NAME... [--backend cpu|cuda]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  std::set<std::string> names;
  tritium::Device device = tritium::runtime::device_available(tritium::Device::cuda()) ? tritium::Device::cuda()
                                                                                       : tritium::Device::cpu();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--list" || a == "--check" || a == "--bench") mode = a.substr(2);
    else if (a == "--backend" && i + 1 < argc) {
      std::string b = argv[++i];
      if (b != "cpu" && b != "cuda") return usage(argv[0]);
      device = tritium::Device::parse(b);
    } else if (a == "--help" || a == "-h") {
      usage(argv[0]);
      return 0;
    } else if (!a.empty() && a[0] != '-') names.insert(a);
    else return usage(argv[0]);
  }
  if (mode.empty()) return usage(argv[0]);
  if (mode == "list") {
    for (const auto& k : suite::all()) std::printf("%-28s %-12s %s\n", k.name.c_str(), k.category.c_str(), k.source.c_str());
    return 0;
  }
  if (!tritium::runtime::device_available(device)) {
    std::fprintf(stderr, "skipped: %s is unavailable (%s)\n", device.str().c_str(),
                 tritium::runtime::device_unavailable_reason(device).c_str());
    return 77;
  }
  const bool every = names.empty() || names.count("all");
  for (const auto& n : names)
    if (n != "all") {
      bool known = false;
      for (const auto& k : suite::all()) known = known || k.name == n;
      if (!known) {
        std::fprintf(stderr, "unknown kernel %s (--list names them)\n", n.c_str());
        return 2;
      }
    }
  // One kernel's error (a compile failure, an unsupported feature) fails that kernel and the run's
  // status, not the kernels after it.
  bool ok = true;
  for (const auto& k : suite::all()) {
    if (!every && !names.count(k.name)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (mode == "check") {
        ok = k.check(device) && ok;
      } else {
        for (const auto& r : k.bench(device))
          std::printf("bench %s | %s | %.4f | %.2f %s\n", k.name.c_str(), r.shape.c_str(), r.ms, r.rate, r.unit.c_str());
      }
    } catch (const tritium::Error& e) {
      std::printf("%s on %s: FAILED: %s\n", k.name.c_str(), device.str().c_str(), e.what());
      ok = false;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("time %s %s %.2f s\n", k.name.c_str(), mode.c_str(), s);
    std::fflush(stdout);
  }
  return ok ? 0 : 1;
}
