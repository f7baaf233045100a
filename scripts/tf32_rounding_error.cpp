// The error of a tf32 dot whose fp32 operands are truncated to tf32 (the low 13 mantissa bits
// dropped: what the tensor core does with raw fp32 bits, as the ring's cp.async leaves them) or
// rounded (cvt.rna, or TMA's TFLOAT32 copies: to nearest), accumulated in fp32, against float64
// (docs/cuda-backend.md, "tf32 operands"). Host only:
//   g++ -O2 -o /tmp/tf32_error scripts/tf32_rounding_error.cpp && /tmp/tf32_error
// Prints ||C - ref|| / ||ref|| of a 64 x 64 product at K = 64..4096 for N(0, 1) and U[0, 1) data,
// then the worst |c - ref| / sum|a||b| over 1e5 dot products (check_dot's per-element bound).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

static float truncated(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= 0xffffe000u;
  std::memcpy(&x, &u, 4);
  return x;
}

static float rounded(float x) {  // to nearest, ties away from zero (cvt.rna.tf32.f32)
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &u, 4);
  return x;
}

static float draw(std::mt19937& g, bool positive) {
  if (positive) return std::uniform_real_distribution<float>(0.f, 1.f)(g);
  return std::normal_distribution<float>(0.f, 1.f)(g);
}

int main() {
  const int M = 64, N = 64;
  std::mt19937 g(42);
  std::printf("%-8s %6s %12s %12s %12s\n", "data", "K", "truncated", "rounded", "fp32");
  for (bool positive : {false, true})
    for (int K : {64, 128, 256, 512, 1024, 2048, 4096}) {
      std::vector<float> A(size_t(M) * K), B(size_t(K) * N);
      for (float& x : A) x = draw(g, positive);
      for (float& x : B) x = draw(g, positive);
      double e[3] = {0, 0, 0}, r2 = 0;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double ref = 0;
          float c[3] = {0, 0, 0};
          for (int k = 0; k < K; ++k) {
            const float a = A[size_t(i) * K + k], b = B[size_t(k) * N + j];
            ref += double(a) * b;
            c[0] = std::fma(truncated(a), truncated(b), c[0]);
            c[1] = std::fma(rounded(a), rounded(b), c[1]);
            c[2] = std::fma(a, b, c[2]);
          }
          for (int t = 0; t < 3; ++t) e[t] += (c[t] - ref) * (c[t] - ref);
          r2 += ref * ref;
        }
      std::printf("%-8s %6d %12.3e %12.3e %12.3e\n", positive ? "U[0,1)" : "N(0,1)", K, std::sqrt(e[0] / r2),
                  std::sqrt(e[1] / r2), std::sqrt(e[2] / r2));
    }
  std::printf("\nworst |c - ref| / sum|a||b| over 1e5 dot products\n%-8s %6s %12s %12s\n", "data", "K", "truncated", "rounded");
  for (bool positive : {false, true})
    for (int K : {8, 16, 32, 64, 256}) {
      double worst[2] = {0, 0};
      for (int e = 0; e < 100000; ++e) {
        double ref = 0, mag = 0;
        float c[2] = {0, 0};
        for (int k = 0; k < K; ++k) {
          const float a = draw(g, positive), b = draw(g, positive);
          ref += double(a) * b;
          mag += std::fabs(double(a) * b);
          c[0] = std::fma(truncated(a), truncated(b), c[0]);
          c[1] = std::fma(rounded(a), rounded(b), c[1]);
        }
        for (int t = 0; t < 2; ++t) worst[t] = std::max(worst[t], std::fabs(c[t] - ref) / mag);
      }
      std::printf("%-8s %6d %12.3e %12.3e\n", positive ? "U[0,1)" : "N(0,1)", K, worst[0], worst[1]);
    }
}
