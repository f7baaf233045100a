#include "suite.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
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

namespace {
// Round-to-nearest-even of a finite float to `digits` significant bits with smallest normal
// exponent `emin` (below it, subnormal steps of 2^(emin - digits + 1)).
double round_significand(double x, int digits, int emin) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // x = m 2^e, 0.5 <= |m| < 1: the leading bit is 2^(e-1)
  const double quantum = std::ldexp(1.0, std::max(e - 1, emin) - (digits - 1));
  return std::nearbyint(x / quantum) * quantum;  // the default rounding mode: to nearest even
}
}  // namespace

double round_to(double x, tritium::DType dtype) {
  using tritium::DType;
  const double f = double(float(x));
  switch (dtype) {
    case DType::f64: return x;
    case DType::f32: return f;
    case DType::bf16: {  // overflow to infinity, as a cast
      const double r = round_significand(f, 8, -126);
      return std::fabs(r) > 3.3895313892515355e38 ? std::copysign(INFINITY, r) : r;
    }
    case DType::f16: {
      const double r = round_significand(f, 11, -14);
      return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, r) : r;
    }
    case DType::f8e4m3:  // no infinities: saturates (NaN stays NaN)
      return std::isnan(f) ? f : std::clamp(round_significand(f, 4, -6), -448.0, 448.0);
    case DType::f8e5m2:  // infinities kept, finite values saturate
      return std::isfinite(f) ? std::clamp(round_significand(f, 3, -14), -57344.0, 57344.0) : f;
    default: throw std::invalid_argument("suite::round_to: not a float dtype");
  }
}

}  // namespace suite
