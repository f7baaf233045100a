#include "suite.h"

#include <cmath>
#include <cstdio>

namespace suite {

std::vector<Kernel>& registry() {
  static std::vector<Kernel> kernels;
  return kernels;
}

bool add(Kernel k) {
  registry().push_back(std::move(k));
  return true;
}

const std::vector<Kernel>& all() { return registry(); }

bool report(const std::string& name, const tritium::Device& device, double rel, double bound, const std::string& detail) {
  const bool ok = rel <= bound;  // NaN compares false
  std::printf("%s on %s: rel err %.2e (bound %.0e)%s%s  %s\n", name.c_str(), device.str().c_str(), rel, bound,
              detail.empty() ? "" : " ", detail.c_str(), ok ? "OK" : "FAILED");
  return ok;
}

double rel_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    d2 += (got[i] - ref[i]) * (got[i] - ref[i]), r2 += ref[i] * ref[i];
  }
  if (got.size() != ref.size()) return INFINITY;
  return std::sqrt(d2 / std::max(r2, 1e-300));
}

}  // namespace suite
