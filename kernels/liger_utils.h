// Liger-Kernel's launch helpers (linkedin/Liger-Kernel src/liger_kernel/ops/utils.py, read at commit
// ead96b618e5c), shared by the suite's Liger ports, and the check helpers those ports share.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <tritium/tritium.h>

namespace liger {

// triton.next_power_of_2
inline int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// calculate_settings(n): one block spans the whole row (BLOCK_SIZE = next_power_of_2(n), at most
// 65536), with more warps for wider rows (is_hip() is false: CUDA and the CPU).
inline std::pair<int, int> calculate_settings(int64_t n) {
  constexpr int64_t MAX_FUSED_SIZE = 65536;
  const int64_t BLOCK_SIZE = next_power_of_2(n);
  if (BLOCK_SIZE > MAX_FUSED_SIZE)
    tritium::fail("Cannot launch Triton kernel since n = {} exceeds the recommended Triton blocksize = {}.", n,
                  MAX_FUSED_SIZE);
  int num_warps = 4;
  if (BLOCK_SIZE >= 32768)
    num_warps = 32;
  else if (BLOCK_SIZE >= 8192)
    num_warps = 16;
  else if (BLOCK_SIZE >= 2048)
    num_warps = 8;
  return {static_cast<int>(BLOCK_SIZE), num_warps};
}

// The launch options calculate_settings' num_warps gives (num_stages as Triton's default).
inline tritium::Options warps(int num_warps) { return tritium::Options{.num_warps = num_warps, .num_stages = 3, .device = {}}; }

// ---- check helpers ------------------------------------------------------------------------------

// Normal(0, scale) values, rounded to `dtype` on `device`; `rounded` receives the values the
// kernel reads (the float64 reference starts from them).
inline tritium::Tensor random_tensor(const std::vector<int64_t>& shape, tritium::DType dtype, const tritium::Device& device,
                                     std::mt19937& rng, std::vector<double>& rounded, double scale = 1.0,
                                     double mean = 0.0) {
  std::normal_distribution<double> normal(mean, scale);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = normal(rng);
  tritium::Tensor t = tritium::Tensor::from_vector(v, shape, device).to(dtype);
  rounded = t.to(tritium::DType::f64).to_vector<double>();
  return t;
}

inline std::vector<double> host(const tritium::Tensor& t) { return t.to(tritium::DType::f64).to_vector<double>(); }

// ||got - ref|| / ||ref|| in double (NaN or infinity in got: infinity).
inline double rel_error(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    d2 += (got[i] - ref[i]) * (got[i] - ref[i]), r2 += ref[i] * ref[i];
  }
  return std::sqrt(d2 / std::max(r2, 1e-300));
}

// DESIGN.md's bounds for a result rounded to `dtype`.
inline double bound_for(tritium::DType dtype) {
  return dtype == tritium::DType::bf16 ? 1e-2 : dtype == tritium::DType::f16 ? 1e-3 : 1e-5;
}

}  // namespace liger
