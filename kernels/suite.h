// The real-world kernel suite: public Triton kernels nobody on the team wrote for Tritium, ported
// faithfully (the original's block structure, helpers and launch heuristics), each checking itself
// against a float64 reference on every backend and timing itself beside the original under Triton
// (bench/compare_kernels.py runs `tritium-kernels --bench` and bench/kernels/<name>.py together).
//
// A kernel file (kernels/<name>.cpp, the name as registered) holds the port, its host wrapper, a
// check and a benchmark, and registers them:
//
//   static const bool registered = suite::add({
//       .name = "grouped_gemm",
//       .source = "triton-lang/triton python/tutorials/08-grouped-gemm.py",
//       .category = "dot",
//       .check = [](const tritium::Device& d) { ...; return suite::report("grouped_gemm", rel, bound); },
//       .bench = [](const tritium::Device& d) { ...; return std::vector<suite::Row>{...}; }});
//
// The check prints one line and returns whether it passed; each check must finish within about
// 2 s on 2 CPU cores (small shapes, sizes off the blocks, poisoned outputs).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <tritium/tritium.h>

namespace suite {

// One measurement: the shape in words ("M=N=K=4096 f16"), the median time, and the rate in the
// kernel's natural unit (TFLOP/s for dots, GB/s for memory-bound kernels).
struct Row {
  std::string shape;
  double ms = 0;
  double rate = 0;
  std::string unit;
};

struct Kernel {
  std::string name;      // as the file and the CTest test (kernel-<name>) are named
  std::string source;    // "owner/repo path" of the original
  std::string category;  // dot, elementwise, row, scan, atomic, gather, sort
  std::function<bool(const tritium::Device&)> check;
  std::function<std::vector<Row>(const tritium::Device&)> bench;
};

// Registers a kernel (from a static initialiser); returns true.
bool add(Kernel k);
const std::vector<Kernel>& all();

// Prints "<name> on <device>: rel err <e> (bound <b>) OK|FAILED" and returns rel <= bound (NaN fails).
bool report(const std::string& name, const tritium::Device& device, double rel, double bound, const std::string& detail = "");

// ||got - ref|| / ||ref|| over doubles (NaN or infinity in got: infinity).
double rel_error(const std::vector<float>& got, const std::vector<double>& ref);

// x rounded to `dtype` on the host, as a kernel's cast would (f64 -> f32, then round to nearest
// even into f16 / bf16 / fp8, saturating fp8 as the generated code does): references that model a
// kernel's intermediate casts without running a backend (a CUDA-only build has no CPU backend).
double round_to(double x, tritium::DType dtype);

}  // namespace suite
