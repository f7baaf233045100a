// The process environment Tritium reads, parsed once. Every TRITIUM_* variable is read here
// and nowhere else, so the full list lives in one place.
#pragma once
#include <string>

namespace tritium {

struct Env {
  // TRITIUM_CACHE_DIR; default $HOME/.cache/tritium, or /tmp/tritium-cache-<uid> without HOME.
  std::string cache_dir;
  // False when TRITIUM_CACHE is "0", "false", "off" or "no".
  bool cache_enabled = true;
  // TRITIUM_DUMP: directory to dump IR and generated code into; empty: no dumps.
  std::string dump_dir;
  // TRITIUM_PERF_MAP=1: the CPU backend appends each kernel it loads to /tmp/perf-<pid>.map
  // (address, size, name), so that `perf report` names the JIT code.
  bool perf_map = false;
  // TRITIUM_LOG is a comma-separated list of topics; "compile" logs every kernel compile.
  bool log_compile = false;
  // TRITIUM_NVRTC_OPTIONS: extra NVRTC options, separated by spaces (e.g. "-lineinfo"); part of
  // the cache key.
  std::string nvrtc_options;
  // TRITIUM_FAST_COMPILE: "0", "false", "off" or "no" compiles every CUDA kernel at NVRTC's
  // default optimisation level; otherwise short kernels without loops, reductions, scans or dots
  // get --Ofast-compile=min (about 0.6 of the compile time, the same speed). Part of the cache key.
  bool fast_compile = true;
  // TRITIUM_ASYNC_COMPILE: "0", "false", "off" or "no" compiles a CUDA kernel where its first launch
  // is made; otherwise (the default) that compile runs on a worker thread and the launch waits in a
  // queue, so that cold kernels compile in parallel (runtime/launch_queue.h).
  bool async_compile = true;
  // TRITIUM_PRINT_AUTOTUNING=1: the autotuner prints each tuning's chosen config and time.
  bool print_autotuning = false;
  bool print_autotuning_all = false;  // TRITIUM_PRINT_AUTOTUNING=all: every config's time too
  // TRITIUM_AUTOTUNE: how an autotuner picks a config for a new key: empty or "auto" (the default)
  // launches the heuristic's choice and tunes once tuning pays (docs/autotune.md); "tune" benchmarks
  // the candidates at the first launch; "heuristic" (or "off") launches the heuristic's choice
  // without compiling or timing the others. Lower-cased; checked where a tuner reads it (autotune_mode()).
  std::string autotune;
  // TRITIUM_F32_DEFAULT: the input_precision of tl::dot on fp32 operands when the kernel gives
  // none ("tf32", "tf32x3" or "ieee"; Triton's TRITON_F32_DEFAULT). Empty: "tf32". Checked
  // where a dot is traced.
  std::string f32_default;
  // TRITIUM_CUDA_CODEGEN: which CUDA code generator lowers a kernel: "layouts" (every kernel through
  // layouts, jit/cuda/lowering), empty (the default): kernels with a dot through layouts, the others
  // through the element-loop generator (jit/cuda/codegen.cpp). Other values ("legacy", the removed
  // matmul-loop matcher) are an error where a CUDA kernel is generated. Part of the cache key.
  std::string cuda_codegen;
  // TRITIUM_POISON_BUFFERS=1: every new tensor buffer is filled with 0xFF bytes (NaN in every
  // float dtype, -1 in integers) before anyone writes it, so a check sees the elements an op never
  // wrote, on the host and on the GPU. The test suite turns it on (tests/main.cpp); costs a fill.
  bool poison_buffers = false;
  // TRITIUM_DEBUG=1: kernels are compiled with checks (docs/debug-mode.md): every load, store and
  // atomic against the allocation its pointer came from, 32-bit index arithmetic for overflow, and
  // tl::device_assert (compiled out otherwise, as in Triton). Part of the specialisation and cache keys.
  bool debug = false;
  // TRITIUM_NUM_THREADS; default: the CPUs this process may run on.
  int num_threads = 1;
  // TRITIUM_MAX_IR_OPS: the most IR ops one kernel trace may create before it fails with an
  // error (dsl/trace.h); default 2^22.
  size_t max_ir_ops = size_t(1) << 22;
};

// Read on first use (thread-safe); later calls return the same object.
const Env& env();

// Re-reads the environment into the object env() returns. For tests that call setenv();
// not safe while other threads read env().
void reload_env_for_tests();

}  // namespace tritium
