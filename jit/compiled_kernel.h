// What a backend hands back: a loaded kernel that can be launched over a grid, and the
// compile entry point that runs the passes, consults the caches and calls the backend.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "common/hash.h"
#include "ir/ir.h"
#include "runtime/device.h"

namespace tritium::jit {

struct LaunchGrid {
  int64_t x = 1, y = 1, z = 1;
  int64_t total() const { return x * y * z; }
};

struct CompileOptions {
  int num_warps = 4;   // GPU only; part of the key everywhere so a config maps to one binary
  int num_stages = 3;  // GPU pipelining depth
  // TRITIUM_DEBUG: the IR gets checked accesses and index arithmetic, device_assert stays, and
  // the kernel takes two hidden parameters per pointer parameter (jit/passes/debug_checks.h).
  bool debug = false;
};

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  // args: one 64-bit slot per kernel parameter, in order (pointers, integers sign- or
  // zero-extended, f32 bits in the low half, f64 bits). Returns when the grid has finished.
  virtual void launch(const uint64_t* args, const LaunchGrid& grid) = 0;

  std::string name;     // kernel name
  Hash128 hash;         // content hash (IR after passes, backend, target, toolchain, options)
  std::string ir_text;  // IR after the passes, for inspection and tests
  bool from_disk = false;
  // What one program uses on the device (GPU backends; 0 on the CPU): occupancy calculations
  // such as tutorial 02's persistent grid need them.
  int registers_per_thread = 0;
  int threads_per_program = 1;
  int64_t shared_bytes = 0;
};

// Process-wide counters, for tests and tools that need to see what the caches did.
struct CompileStats {
  uint64_t compiled = 0;     // binaries generated (cache misses)
  uint64_t disk_hits = 0;    // binaries loaded from the disk cache
  uint64_t shared_hits = 0;  // specialisations that reused an already loaded binary (same IR)
  // Where compile time goes, summed over all compiles (ms): optimisation passes and hashing,
  // code generation including the backend's compiler (LLVM or NVRTC), loading the binary.
  double passes_ms = 0, generate_ms = 0, load_ms = 0;
};
CompileStats compile_stats();

// The content hash `compile` would key `f` by: optimises `f` in place (the passes), then hashes
// its IR with the backend, target, toolchain and options. Compiles nothing.
Hash128 content_hash(ir::Function& f, const runtime::Device& device, const CompileOptions& opts);

// "cuda sm_90a;nvrtc-13.0;..." / "cpu <host cpu and features>": what compiled code depends on.
std::string toolchain_id(const runtime::Device& device);

// Traces are done by the caller; this optimises `f` (in place), then loads the kernel from the
// disk cache or compiles it. Thread-safe.
std::shared_ptr<CompiledKernel> compile(ir::Function& f, const runtime::Device& device, const CompileOptions& opts);

}  // namespace tritium::jit
