// Tutorial 04: low-memory dropout, ported from Triton's fourth tutorial.
//
// Dropout zeroes each element of its input with probability p and scales the survivors by
// 1 / (1 - p), so that the expected value of every element is unchanged. The usual
// implementation draws a keep-mask tensor as large as the input and keeps it for the backward
// pass. Here we first write that baseline (`_dropout`, the mask is an input), then a seeded
// version (`_seeded_dropout`) whose whole state is one integer: each program regenerates its
// random numbers from (seed, element offset) with the Philox-4x32-10 counter-based generator,
// so the mask is never stored, and the same seed reproduces it exactly (for the backward pass,
// or for recomputation under checkpointing).
//
//   ./04-low-memory-dropout            checks both kernels against float64 host references that
//                                      recompute the same Philox bits on the host
//   ./04-low-memory-dropout --bench    GB/s of seeded dropout (f32) for 2^16 ... 2^22 elements
//                                      beside a plain C++ loop computing the same Philox bits
//                                      (on --backend cuda: 2^20 ... 2^24; bench/compare_gpu.py
//                                      adds Triton)
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "autotune/do_bench.h"
#include "runtime/thread_pool.h"
#include "tutorial.h"

namespace tl = tritium::tl;

// ---- the baseline: the keep-mask is an input ---------------------------------------------------

auto _dropout = tritium::kernel(
    "_dropout",
    [](tl::ptr<float> x_ptr,           // the input
       tl::ptr<int32_t> x_keep_ptr,    // the mask: 1 keeps an element, 0 drops it
       tl::ptr<float> output_ptr,      // the output
       tl::i32 n_elements,             // number of elements of x
       tl::f32 p,                      // probability that an element is dropped
       int BLOCK_SIZE) {
      auto pid = tl::program_id(0);
      auto block_start = pid * BLOCK_SIZE;
      auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
      auto mask = offsets < n_elements;
      auto x = tl::load(x_ptr + offsets, mask);
      auto x_keep = tl::load(x_keep_ptr + offsets, mask);
      // The whole of dropout: survivors are rescaled by 1 / (1 - p), the rest become 0.
      auto output = tl::where(x_keep, x / (1 - p), 0.0);
      tl::store(output_ptr + offsets, output, mask);
    },
    {"x_ptr", "x_keep_ptr", "output_ptr", "n_elements", "p", "BLOCK_SIZE"});

void dropout(const tritium::Tensor& x, const tritium::Tensor& x_keep, float p, tritium::Tensor& output) {
  int n = static_cast<int>(x.numel());
  auto grid = [n](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(n, meta["BLOCK_SIZE"])); };
  _dropout[grid](x, x_keep, output, n, p, 1024);
}

// ---- seeded dropout: the mask is regenerated from the seed -------------------------------------

auto _seeded_dropout = tritium::kernel(
    "_seeded_dropout",
    [](tl::ptr<float> x_ptr, tl::ptr<float> output_ptr, tl::i32 n_elements, tl::f32 p, tl::i32 seed,
       int BLOCK_SIZE) {
      // the offsets of the elements this program handles
      auto pid = tl::program_id(0);
      auto block_start = pid * BLOCK_SIZE;
      auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
      auto mask = offsets < n_elements;
      auto x = tl::load(x_ptr + offsets, mask);
      // one uniform per element, a pure function of (seed, offset): no state is read or written
      auto random = tl::rand(seed, offsets);
      auto x_keep = random > p;
      auto output = tl::where(x_keep, x / (1 - p), 0.0);
      tl::store(output_ptr + offsets, output, mask);
    },
    {"x_ptr", "output_ptr", "n_elements", "p", "seed", "BLOCK_SIZE"});

void seeded_dropout(const tritium::Tensor& x, float p, int32_t seed, tritium::Tensor& output) {
  int n = static_cast<int>(x.numel());
  auto grid = [n](const tritium::Meta& meta) { return tritium::Grid(tritium::cdiv(n, meta["BLOCK_SIZE"])); };
  _seeded_dropout[grid](x, output, n, p, seed, 1024);
}

// Not in Triton's tutorial: the uniforms themselves, stored, so that the check can compare them
// bit for bit with the host's (a keep-mask only shows the side of p each one falls on).
auto _rand = tritium::kernel(
    "_rand",
    [](tl::ptr<float> output_ptr, tl::i32 n_elements, tl::i32 seed, int BLOCK_SIZE) {
      auto offsets = tl::program_id(0) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
      tl::store(output_ptr + offsets, tl::rand(seed, offsets), offsets < n_elements);
    },
    {"output_ptr", "n_elements", "seed", "BLOCK_SIZE"});

// ---- the host reference: Philox-4x32-10 and Triton's mapping, written out ----------------------

// One Philox-4x32-10 block (Salmon et al., 2011): ten rounds of two 32x32->64 multiplications
// whose halves are mixed with the other two words and the key; the key gets the Weyl increments
// between rounds. As in Triton's random.py: counter (offset, 0, 0, 0), key (seed lo, seed hi).
std::array<uint32_t, 4> philox_4x32_10(std::array<uint32_t, 4> c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint64_t m0 = uint64_t(0xD2511F53u) * c[0];
    uint64_t m2 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(m2 >> 32) ^ c[1] ^ k0, uint32_t(m2), uint32_t(m0 >> 32) ^ c[3] ^ k1, uint32_t(m0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// Triton's uint_to_uniform_float for a 32-bit word: read it as int32, fold the negatives onto
// the non-negatives (x < 0 ? -x - 1 : x), then scale by the largest f32 below 2^-31 so that
// INT32_MAX maps below 1.
inline float uint_to_uniform_float(uint32_t word) {
  int32_t x = static_cast<int32_t>(word);
  if (x < 0) x = -x - 1;
  return static_cast<float>(x) * 4.6566127342e-10f;
}

// Triton's tl.rand(seed, offset) for an int32 seed (sign-extended to 64 bits, as Triton's cast).
inline float rand_host(int32_t seed, uint32_t offset) {
  uint64_t s = static_cast<uint64_t>(static_cast<int64_t>(seed));
  return uint_to_uniform_float(philox_4x32_10({offset, 0, 0, 0}, uint32_t(s), uint32_t(s >> 32))[0]);
}

// The reference for --bench: seeded dropout as a plain loop that computes the same Philox bits,
// compiled -march=native and spread over the same thread pool as the kernel's programs. The loop
// is a function of its own so that p and seed are plain values: read through the lambda's
// captures, a store to out[i] could change them and g++ would not vectorize the loop.
void seeded_dropout_range(const float* x, float* out, int64_t lo, int64_t hi, float p, int32_t seed) {
  for (int64_t i = lo; i < hi; ++i) out[i] = rand_host(seed, static_cast<uint32_t>(i)) > p ? x[i] / (1 - p) : 0.0f;
}

void seeded_dropout_plain(const float* x, float* out, int64_t n, float p, int32_t seed) {
  tritium::runtime::ThreadPool::global().parallel_for(tritium::cdiv(n, 4096), [&](int64_t b, int64_t e) {
    seeded_dropout_range(x, out, b * 4096, std::min(n, e * 4096), p, seed);
  });
}

// ---- the checks ------------------------------------------------------------------------------

template <class T> void print_row(const char* name, const std::vector<T>& v, int count) {
  std::printf("%-20s", name);
  for (int i = 0; i < count; ++i) {
    if constexpr (std::is_integral_v<T>) std::printf(" %8d", static_cast<int>(v[i]));
    else std::printf(" %8.4f", static_cast<double>(v[i]));
  }
  std::printf("\n");
}

// The float64 value dropout should give for x when the element is kept or not.
inline double dropout_ref(float x, bool keep, float p) { return keep ? double(x) / (1.0 - double(p)) : 0.0; }

int run_tutorial(const tutorial::Args& args) {
  const auto& dev = args.device;
  bool ok = true;

  // The host Philox is itself checked against Random123's known answer for counter 0, key 0.
  auto kat = philox_4x32_10({0, 0, 0, 0}, 0, 0);
  if (kat != std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}) {
    std::printf("host Philox-4x32-10 does not reproduce Random123's known answer: FAILED\n");
    return 1;
  }

  std::mt19937 rng(0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto nonzero_normal = [&] {  // an exact 0 input would hide whether it was dropped
    float v;
    do v = normal(rng);
    while (v == 0.0f);
    return v;
  };

  // --- the baseline on a small vector, printed like Triton's tutorial
  {
    const int n = 10;
    const float p = 0.5f;
    std::vector<float> hx(n);
    std::vector<int32_t> hkeep(n);
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    for (int i = 0; i < n; ++i) hx[i] = nonzero_normal(), hkeep[i] = u01(rng) > p;
    auto x = tritium::Tensor::from_vector(hx).to(dev), keep = tritium::Tensor::from_vector(hkeep).to(dev);
    auto out = tritium::Tensor::from_vector(std::vector<float>(n, NAN)).to(dev);
    dropout(x, keep, p, out);
    auto r = out.to_vector<float>();
    std::printf("baseline dropout, p = %.1f:\n", p);
    print_row("input", hx, n);
    print_row("keep mask", hkeep, n);
    print_row("output", r, n);
    std::printf("\n");
  }

  // --- the baseline on a large vector with a host-made mask: exact against float64 (p = 0.5
  //     makes 1 / (1 - p) = 2, and 2x is exact in f32)
  const int n = 1000003;  // not a multiple of the block: the last program is masked
  std::vector<float> hx(n);
  for (auto& v : hx) v = nonzero_normal();
  auto x = tritium::Tensor::from_vector(hx).to(dev);
  {
    const float p = 0.5f;
    std::vector<int32_t> hkeep(n);
    std::bernoulli_distribution keep_dist(1 - p);
    for (auto& k : hkeep) k = keep_dist(rng);
    auto keep = tritium::Tensor::from_vector(hkeep).to(dev);
    auto out = tritium::Tensor::from_vector(std::vector<float>(n, NAN)).to(dev);  // poisoned
    dropout(x, keep, p, out);
    auto r = out.to_vector<float>();
    double max_diff = 0;
    int64_t bad = 0;
    for (int i = 0; i < n; ++i) {
      double d = std::abs(double(r[i]) - dropout_ref(hx[i], hkeep[i] != 0, p));
      if (!(d == 0)) ++bad;  // NaN (never written) counts
      if (std::isfinite(d)) max_diff = std::max(max_diff, d);
    }
    bool pass = bad == 0;
    std::printf("baseline dropout of %d elements on %s, p = %.1f: max |diff| vs float64 = %g, %lld mismatches  %s\n",
                n, dev.str().c_str(), p, max_diff, static_cast<long long>(bad), pass ? "OK" : "FAILED");
    ok &= pass;
  }

  // --- seeded dropout, printed like Triton's tutorial: same seed twice, then another seed
  {
    const int m = 10;
    std::vector<float> hs(hx.begin(), hx.begin() + m);
    auto xs = tritium::Tensor::from_vector(hs).to(dev);
    auto o1 = tritium::Tensor::from_vector(std::vector<float>(m, NAN)).to(dev);
    auto o2 = tritium::Tensor::from_vector(std::vector<float>(m, NAN)).to(dev);
    auto o3 = tritium::Tensor::from_vector(std::vector<float>(m, NAN)).to(dev);
    seeded_dropout(xs, 0.5f, 123, o1);
    seeded_dropout(xs, 0.5f, 123, o2);
    seeded_dropout(xs, 0.5f, 512, o3);
    std::printf("\nseeded dropout, p = 0.5:\n");
    print_row("input", hs, m);
    print_row("output (seed = 123)", o1.to_vector<float>(), m);
    print_row("output (seed = 123)", o2.to_vector<float>(), m);
    print_row("output (seed = 512)", o3.to_vector<float>(), m);
    std::printf("\n");
  }

  // --- the random numbers: bit for bit those of the host Philox and Triton's mapping
  for (int32_t seed : {123, -7}) {
    auto u = tritium::Tensor::from_vector(std::vector<float>(n, NAN)).to(dev);  // poisoned
    _rand[{tritium::cdiv(n, 1024)}](u, n, seed, 1024);
    auto r = u.to_vector<float>();
    int64_t differ = 0;
    float lo = 1, hi = 0;
    for (int i = 0; i < n; ++i) {
      float h = rand_host(seed, static_cast<uint32_t>(i));
      differ += std::memcmp(&r[i], &h, sizeof(float)) != 0;
      lo = std::min(lo, r[i]), hi = std::max(hi, r[i]);
    }
    bool pass = differ == 0 && lo >= 0 && hi < 1;
    std::printf("tl::rand(seed = %d, offsets 0..%d) on %s: %lld of %d uniforms differ from the host's bits, "
                "range [%.3g, %.9g]  %s\n",
                seed, n - 1, dev.str().c_str(), static_cast<long long>(differ), n, lo, hi, pass ? "OK" : "FAILED");
    // A fingerprint of all the bits (FNV-1a, 64-bit, over the floats' little-endian bytes), which
    // bench/compare_reductions.py compares with Triton's tl.rand for the same seed and offsets.
    uint64_t fnv = 0xcbf29ce484222325ull;
    for (float v : r) {
      uint32_t b;
      std::memcpy(&b, &v, 4);
      for (int k = 0; k < 4; ++k) fnv = (fnv ^ ((b >> (8 * k)) & 0xffu)) * 0x100000001b3ull;
    }
    std::printf("rand bits fingerprint: seed %d n %d fnv1a64 %016llx\n", seed, n, static_cast<unsigned long long>(fnv));
    ok &= pass;
  }

  // --- seeded dropout on the large vector against the host Philox: the keep decisions must be
  //     identical (same bits), the kept values within the f32 rounding of x / (1 - p)
  std::vector<float> first_output;
  // p = 0.5 as in Triton's tutorial, then p = 0.3 (the rescaling is rounded) with a negative seed,
  // which Triton sign-extends to 64 bits before splitting it into the two key words.
  for (auto [p, seed] : {std::pair<float, int32_t>{0.5f, 123}, {0.3f, -7}}) {
    auto out = tritium::Tensor::from_vector(std::vector<float>(n, NAN)).to(dev);  // poisoned
    seeded_dropout(x, p, seed, out);
    auto r = out.to_vector<float>();
    if (first_output.empty()) first_output = r;
    double max_rel = 0;
    int64_t mask_mismatch = 0, kept = 0;
    for (int i = 0; i < n; ++i) {
      bool keep = rand_host(seed, static_cast<uint32_t>(i)) > p;
      kept += keep;
      if ((r[i] != 0) != keep) ++mask_mismatch;  // NaN counts as "kept": caught below if it was dropped
      double ref = dropout_ref(hx[i], keep, p);
      double rel = keep ? std::abs(double(r[i]) - ref) / std::abs(ref) : (r[i] == 0 ? 0.0 : INFINITY);
      if (!(rel <= max_rel)) max_rel = std::isnan(rel) ? INFINITY : std::max(max_rel, rel);
    }
    // (1 - p) and the division are each rounded to f32: at most 2^-24 relative error each.
    bool pass = mask_mismatch == 0 && max_rel <= 1.2e-7;
    double frac = double(kept) / n, sigma = std::sqrt(double(p) * (1 - p) / n);
    // The kept fraction of a fair Bernoulli(1 - p) sample lies within 5 sigma of 1 - p.
    bool frac_ok = std::abs(frac - (1 - double(p))) <= 5 * sigma;
    std::printf("seeded dropout of %d elements on %s, p = %.1f, seed %d: %lld keep-mask mismatches vs host Philox, "
                "max rel. error vs float64 = %.3g  %s\n",
                n, dev.str().c_str(), p, seed, static_cast<long long>(mask_mismatch), max_rel, pass ? "OK" : "FAILED");
    std::printf("  kept fraction %.5f (expected %.5f +- %.5f)  %s\n", frac, 1 - double(p), 5 * sigma,
                frac_ok ? "OK" : "FAILED");
    ok &= pass && frac_ok;
  }

  // --- the same seed gives the same output bit for bit; another seed another mask
  {
    auto again = tritium::Tensor::from_vector(std::vector<float>(n, NAN)).to(dev);
    auto other = tritium::Tensor::from_vector(std::vector<float>(n, NAN)).to(dev);
    seeded_dropout(x, 0.5f, 123, again);
    seeded_dropout(x, 0.5f, 512, other);
    auto ra = again.to_vector<float>(), ro = other.to_vector<float>();
    int64_t differ_same = 0, differ_other = 0;
    for (int i = 0; i < n; ++i) {
      differ_same += std::memcmp(&ra[i], &first_output[i], sizeof(float)) != 0;
      differ_other += (ro[i] != 0) != (first_output[i] != 0);
    }
    // Two independent masks with p = 0.5 disagree on about half of the elements.
    bool pass = differ_same == 0 && std::abs(double(differ_other) / n - 0.5) < 0.01;
    std::printf("seed 123 twice: %lld elements differ; seed 123 vs 512: masks differ on %.2f%% of elements  %s\n",
                static_cast<long long>(differ_same), 100.0 * differ_other / n, pass ? "OK" : "FAILED");
    ok &= pass;
  }

  if (!ok) return 1;
  if (!args.bench) return 0;

  bool cpu = dev.is_cpu();
  const float p = 0.5f;
  const int32_t seed = 123;
  std::printf("\nseeded dropout, f32, p = %.1f (GB/s counts 2 * n * 4 bytes: x read, output written)\n", p);
  if (cpu) std::printf("%12s %14s %14s %8s\n", "size", "Tritium GB/s", "plain GB/s", "ratio");
  else std::printf("%12s %14s\n", "size", "Tritium GB/s");
  for (int64_t size : tutorial::bench_sizes(args, tutorial::powers_of_two(cpu ? 16 : 20, cpu ? 22 : 24))) {
    std::vector<float> bx(size, 1.0f), bo(size);
    auto tx = tritium::Tensor::from_vector(bx).to(dev);
    auto to = tritium::Tensor::empty({size}, tritium::DType::f32, dev);
    double bytes = 2.0 * 4 * size;
    double gt = bytes / (tritium::do_bench([&] { seeded_dropout(tx, p, seed, to); }, dev).median_ms * 1e6);
    if (!cpu) {
      std::printf("%12lld %14.1f\n", static_cast<long long>(size), gt);
      continue;
    }
    double gp =
        bytes / (tritium::do_bench([&] { seeded_dropout_plain(bx.data(), bo.data(), size, p, seed); }).median_ms * 1e6);
    std::printf("%12lld %14.1f %14.1f %8.2f\n", static_cast<long long>(size), gt, gp, gt / gp);
  }
  return 0;
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, run_tutorial); }
