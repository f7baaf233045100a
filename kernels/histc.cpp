// histc: FlagGems' histc (flagos-ai/FlagGems src/flag_gems/ops/histc.py, read at commit
// b684fbc78add: histc_kernel_simple and the host function histc; ext.program_id of
// src/flag_gems/utils/triton_lang_extension.py). Apache-2.0, as FlagGems.
//
// A histogram by atomics: each program bins 1024 values in f32 (floor((x - min) * bins /
// (max - min)), the maximum itself in the last bin, values outside [min, max] and NaN dropped) and
// adds 1.0 to each value's bin with tl.atomic_add, so programs and lanes collide on popular bins.
// min = max = 0 takes the data's range; min = max counts the values equal to it (on the host, as
// the original's torch code does).
//
// Deviations: the data range and the min = max count use Tritium's op library and the host where
// the original uses torch. histc_kernel (the
// file's other kernel, a scalar loop over the block) is not what histc launches, so not ported.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autotune/do_bench.h"
#include "ops/ops.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

namespace ext {
tl::tensor program_id(int axis) { return tl::program_id(axis).to(tl::int64); }
}  // namespace ext

auto histc_kernel_simple = tritium::kernel(
    "histc_kernel_simple",
    [](P inp_ptr, P out_ptr, tl::i32 n_elements, tl::i32 bins, tl::f32 min_val, tl::f32 max_val, int BLOCK_SIZE) {
      // Simple histogram kernel - each program handles one element at a time.
      auto pid = ext::program_id(0);
      auto offset = pid * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
      auto mask = offset < n_elements;

      // Load input values
      auto inp_val = tl::load(inp_ptr + offset, mask, NAN);
      // Convert to float32 for computation
      inp_val = inp_val.to(tl::float32);

      // Compute bin indices using multiplication to avoid float division precision loss
      auto bin_idx = tl::floor((inp_val - min_val) * bins / (max_val - min_val)).to(tl::int64);

      // Handle edge case: elements exactly equal to max go to last bin
      bin_idx = tl::where(inp_val == max_val, bins - 1, bin_idx);

      // Check if elements are in valid range (excludes NaN)
      auto in_range = (inp_val >= min_val) & (inp_val <= max_val);

      // Clamp bin indices to valid range
      bin_idx = tl::where(bin_idx < 0, 0, bin_idx);
      bin_idx = tl::where(bin_idx >= bins, bins - 1, bin_idx);

      auto valid_mask = mask & in_range;

      // Atomically add to histogram
      tl::atomic_add(out_ptr + bin_idx, 1.0, valid_mask, "relaxed");
    },
    {"inp_ptr", "out_ptr", "n_elements", "bins", "min_val", "max_val", "BLOCK_SIZE"});

Tensor histc(const Tensor& inp_in, int64_t bins = 100, double min = 0, double max = 0) {
  if (!tritium::is_float(inp_in.dtype()) || tritium::is_fp8(inp_in.dtype()))
    tritium::fail("histc: expects a floating-point tensor, got {}", inp_in.str());
  // Ensure input is contiguous
  Tensor inp = inp_in.contiguous();
  double min_val = min, max_val = max;
  if (min_val == 0 && max_val == 0) {
    // Use actual min/max of the data
    min_val = tritium::ops::amin(inp).to(DType::f64).to_vector<double>()[0];
    max_val = tritium::ops::amax(inp).to(DType::f64).to_vector<double>()[0];
  }
  Tensor out = tritium::ops::zeros({bins}, inp.dtype(), inp.device());
  // Handle edge case where min == max: all elements equal to it go to the first bin
  if (min_val == max_val) {
    const auto v = inp.to(DType::f64).to_vector<double>();
    const double count = double(std::count(v.begin(), v.end(), min_val));  // NaN never equals
    std::vector<double> h(static_cast<size_t>(bins), 0.0);
    h[0] = count;
    return Tensor::from_vector(h, {bins}, inp.device()).to(inp.dtype());
  }
  const int64_t n_elements = inp.numel();
  if (n_elements == 0) return out;
  // Choose block size
  const int BLOCK_SIZE = 1024;
  histc_kernel_simple[{tritium::cdiv(n_elements, BLOCK_SIZE)}](inp, out, n_elements, bins, min_val, max_val, BLOCK_SIZE);
  return out;
}

// ---- check ------------------------------------------------------------------------------------

// Counts compared exactly. Values sit in the middle tenths of their bins (so no f32 rounding
// moves one across an edge), plus values equal to min and max, outside the range, and NaN.
double max_error(const tritium::Device& device, int64_t n, int64_t bins, double lo, double hi, bool auto_range,
                 DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> bin(0, bins - 1);
  std::uniform_real_distribution<double> frac(0.1, 0.9);
  std::vector<double> hx(static_cast<size_t>(n));
  const double width = (hi - lo) / double(bins);
  for (size_t i = 0; i < hx.size(); ++i) {
    switch (i % 16) {
      case 3: hx[i] = hi; break;
      case 5: hx[i] = auto_range ? lo : lo - 1.5; break;  // outside, unless the range is the data's
      case 7: hx[i] = auto_range ? hi : hi + 0.25; break;
      case 9: hx[i] = auto_range ? lo : NAN; break;       // NaN would make the data's range NaN
      case 11: hx[i] = lo; break;
      default: hx[i] = lo + (double(bin(rng)) + frac(rng)) * width;
    }
  }
  hx[0] = lo, hx[1] = hi;  // the data's range is [lo, hi]
  Tensor x = Tensor::from_vector(hx, {n}, device).to(dtype);
  const auto xr = x.to(DType::f64).to_vector<double>();
  Tensor h = auto_range ? histc(x, bins) : histc(x, bins, lo, hi);
  std::vector<double> ref(static_cast<size_t>(bins), 0.0);
  for (double v : xr) {
    if (!(v >= lo && v <= hi)) continue;
    const int64_t b = v == hi ? bins - 1 : std::clamp<int64_t>(int64_t(std::floor((v - lo) / width)), 0, bins - 1);
    ref[size_t(b)] += 1;
  }
  if (h.numel() != bins || h.dtype() != dtype) return INFINITY;
  const auto got = h.to(DType::f64).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::isfinite(got[i]) ? std::max(worst, std::abs(got[i] - ref[i])) : INFINITY;
  return worst;
}

bool check(const tritium::Device& device) {
  struct Case {
    int64_t n, bins;
    double lo, hi;
    bool auto_range;
    DType dtype;
  };
  // Several programs and a partial last block, bin counts of 100 (the default) and 37, an
  // explicit range with values outside it and NaN, the data's own range, f16 input (exact counts
  // below 2048 a bin).
  const std::vector<Case> cases = {{5000, 100, 0.0, 10.0, false, DType::f32},
                                   {3333, 37, -2.0, 3.0, false, DType::f32},
                                   {2100, 100, 0.5, 4.5, true, DType::f32},
                                   {1500, 20, 0.0, 4.0, false, DType::f16}};
  bool ok = true;
  std::string detail;
  for (const Case& c : cases) {
    const double e = max_error(device, c.n, c.bins, c.lo, c.hi, c.auto_range, c.dtype, uint32_t(c.n + c.bins));
    if (!(e == 0)) ok = false;
    detail += fmt::format("{}{} n {} bins {} [{}, {}]{}: {:.0f}", detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype),
                          c.n, c.bins, c.lo, c.hi, c.auto_range ? " (data range)" : "", e);
  }
  detail += "; largest count difference, exact: bound 0)";
  return suite::report("histc", device, ok ? 0.0 : INFINITY, 0.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// FlagGems' benchmark/test_histc.py: GenericBenchmark2DOnly's shapes (benchmark/core_shapes.yaml),
// f32 values rand * 10, bins 100 over [0, 10]. GB/s counts the input read.
std::vector<suite::Row> bench(const tritium::Device& device) {
  std::vector<std::array<int64_t, 2>> shapes;
  if (device.is_cuda())
    shapes = {{64, 64}, {256, 256}, {1024, 1024}, {4096, 4096}, {1024, 65536}};
  else
    shapes = {{64, 64}, {256, 256}};
  std::vector<suite::Row> rows;
  for (auto [M, N] : shapes) {
    Tensor x = tritium::ops::mul(tritium::ops::rand({M, N}, tritium::ops::default_generator(), DType::f32, device), 10.0);
    const double ms = tritium::do_bench([&] { histc(x, 100, 0, 10); }, device).median_ms;
    rows.push_back({fmt::format("{}x{} f32 bins 100", M, N), ms, double(x.nbytes()) * 1e-9 / (ms * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "histc",
                                    .source = "flagos-ai/FlagGems src/flag_gems/ops/histc.py",
                                    .category = "atomic",
                                    .check = check,
                                    .bench = bench});

}  // namespace
