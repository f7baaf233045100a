// The compile driver: passes, content hash, disk cache, backend. One function, `compile`, so the
// order of the steps is visible in one place.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "codegen_hash.h"
#include "common/env.h"
#include "common/log.h"
#include "ir/printer.h"
#include "jit/backend.h"
#include "jit/compile_observer.h"
#include "jit/disk_cache.h"
#include "jit/passes/debug_checks.h"
#include "jit/passes/pipeline.h"

namespace tritium::jit {

// Any change to the code generators' sources changes this hash (cmake/source_hash.cmake), so a
// new build never runs binaries cached by an older one.
static constexpr const char* kCodegenVersion = TRITIUM_CODEGEN_HASH;

namespace {
std::atomic<uint64_t> g_compiled{0}, g_disk_hits{0}, g_shared_hits{0};
std::mutex g_phase_mutex;
double g_passes_ms = 0, g_generate_ms = 0, g_load_ms = 0;

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// TRITIUM_LOG=compile: the process's totals in one line at exit - how many binaries a test suite or
// a first run compiled and where their time went. Registered at the first compile, after env()
// exists, so the handler runs before env()'s object is destroyed.
void log_totals_at_exit() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)env();  // constructed before the handler is registered, so destroyed after it runs
    std::atexit([] {
      if (!env().log_compile) return;
      CompileStats s = compile_stats();
      log_line(fmt::format("compile totals: {} compiled, {} from the disk cache, {} shared in memory; passes {:.1f} s, "
                           "generate {:.1f} s, load {:.1f} s (summed over threads)",
                           s.compiled, s.disk_hits, s.shared_hits, s.passes_ms / 1e3, s.generate_ms / 1e3,
                           s.load_ms / 1e3));
    });
  });
}
}  // namespace

namespace {
CompileObserver& observer() {
  static CompileObserver o;
  return o;
}
}  // namespace

void set_compile_observer(CompileObserver o) { observer() = std::move(o); }

CompileStats compile_stats() {
  std::lock_guard lock(g_phase_mutex);
  return {g_compiled.load(), g_disk_hits.load(), g_shared_hits.load(), g_passes_ms, g_generate_ms, g_load_ms};
}

Backend& backend_for(const runtime::Device& device) {
  if (device.is_cpu()) {
#if TRITIUM_HAS_CPU_BACKEND
    return cpu_backend();
#else
    fail("the CPU backend is unavailable: {}", runtime::device_unavailable_reason(device));
#endif
  }
#if TRITIUM_HAS_CUDA_BACKEND
  if (device.is_cuda() && runtime::device_available(device)) return cuda_backend(device.index);
#endif
  fail("device {} is unavailable: {}", device.str(), runtime::device_unavailable_reason(device));
}

namespace {
Hash128 key_of(const std::string& ir_text, Backend& backend, const CompileOptions& opts) {
  Hasher h;
  // Debug binaries never share a key with normal ones (their IR differs too, but a kernel
  // without accesses or asserts could print the same).
  if (opts.debug) h.add("debug");
  return h
      .add(ir_text)
      .add(backend.name())
      .add(backend.target_id())
      .add(kCodegenVersion)
      .add(static_cast<uint64_t>(opts.num_warps))
      .add(static_cast<uint64_t>(opts.num_stages))
      .finish();
}
// Debug mode's checks (TRITIUM_DEBUG), or no device_asserts without it; before the passes, which
// clean up after both.
void prepare_debug_mode(ir::Function& f, const CompileOptions& opts) {
  if (opts.debug) add_debug_checks(f);
  else remove_device_asserts(f);
}
}  // namespace

Hash128 content_hash(ir::Function& f, const runtime::Device& device, const CompileOptions& opts) {
  Backend& backend = backend_for(device);
  prepare_debug_mode(f, opts);
  run_passes(f, "");
  return key_of(ir::print(f), backend, opts);
}

std::string toolchain_id(const runtime::Device& device) {
  Backend& backend = backend_for(device);
  return fmt::format("{} {} {}", backend.name(), backend.target_id(), kCodegenVersion);
}

std::shared_ptr<CompiledKernel> compile(ir::Function& f, const runtime::Device& device, const CompileOptions& opts) {
  auto start = Clock::now();
  log_totals_at_exit();
  Backend& backend = backend_for(device);
  prepare_debug_mode(f, opts);
  run_passes(f, env().dump_dir);
  if (observer()) observer()(f, device, opts);
  std::string text = ir::print(f);
  Hash128 key = key_of(text, backend, opts);
  auto passes_done = Clock::now();

  // Specialisations whose optimised IR is identical share one loaded binary - on one device: a
  // loaded CUDA module belongs to its device's context, so cuda:1 must not launch cuda:0's (the
  // disk entry, keyed by the target, is shared).
  static std::mutex mutex;
  static std::unordered_map<Hash128, std::weak_ptr<CompiledKernel>> loaded;
  const Hash128 loaded_key =
      Hasher().add(key).add(static_cast<uint64_t>(device.kind) << 32 | static_cast<uint32_t>(device.index)).finish();
  {
    std::lock_guard lock(mutex);
    auto it = loaded.find(loaded_key);
    if (it != loaded.end())
      if (auto k = it->second.lock()) {
        ++g_shared_hits;
        return k;
      }
  }

  DiskCache* disk = DiskCache::global();
  std::shared_ptr<CompiledKernel> kernel;
  bool hit = false;
  if (disk) {
    if (auto binary = disk->load(key, backend.binary_kind())) {
      // The entry passed its checksum; if the backend still cannot load it, compile anew.
      try {
        kernel = backend.load(*binary, f);
        hit = true;
        ++g_disk_hits;
      } catch (const Error& e) {
        log_line(fmt::format("disk cache entry {} of kernel {} could not be loaded ({}); recompiling", key.hex(),
                             f.name, e.what()));
      }
    }
  }
  auto generate_start = Clock::now(), generate_done = generate_start;
  if (!kernel) {
    AxisInfoMap axis = analyze_axis_info(f);
    std::vector<char> binary = backend.generate(f, axis, opts);
    ++g_compiled;
    if (disk) disk->store(key, backend.binary_kind(), binary);
    generate_done = Clock::now();
    kernel = backend.load(binary, f);
  }
  auto done = Clock::now();
  {
    std::lock_guard lock(g_phase_mutex);
    g_passes_ms += ms_between(start, passes_done);
    g_generate_ms += ms_between(generate_start, generate_done);
    g_load_ms += hit ? ms_between(passes_done, done) : ms_between(generate_done, done);
  }
  kernel->name = f.name;
  kernel->hash = key;
  kernel->ir_text = std::move(text);
  kernel->from_disk = hit;
  if (hit)
    log_compile_event(f.name, backend.name(), true, ms_between(start, done));
  else
    log_compile_event(f.name, backend.name(), false, ms_between(start, done),
                      fmt::format(" (passes {:.2f}, generate {:.2f}, load {:.2f} ms)", ms_between(start, passes_done),
                                  ms_between(generate_start, generate_done), ms_between(generate_done, done)));
  std::lock_guard lock(mutex);
  loaded[loaded_key] = kernel;
  return kernel;
}

}  // namespace tritium::jit
