#include "common/env.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>
#include <thread>

#include <fmt/format.h>

namespace tritium {
namespace {

std::string get(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string lower_trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool list_contains(std::string_view list, std::string_view topic) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (lower_trimmed(list.substr(0, comma)) == topic) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// CPUs this process may run on: respects taskset/cpusets, which hardware_concurrency() ignores,
// so a pool never oversubscribes a restricted container.
int default_num_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

int parse_num_threads(const std::string& text) {
  if (text.empty()) return default_num_threads();
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 1 || v > 4096) {
    fmt::print(stderr, "[tritium] ignoring TRITIUM_NUM_THREADS={}: expected an integer in [1, 4096]\n", text);
    return default_num_threads();
  }
  return static_cast<int>(v);
}

size_t parse_max_ir_ops(const std::string& text) {
  const size_t fallback = size_t(1) << 22;
  if (text.empty()) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 1 || v > (1ll << 40)) {
    fmt::print(stderr, "[tritium] ignoring TRITIUM_MAX_IR_OPS={}: expected an integer in [1, 2^40]\n", text);
    return fallback;
  }
  return static_cast<size_t>(v);
}

Env read_env() {
  Env e;
  e.cache_dir = get("TRITIUM_CACHE_DIR");
  if (e.cache_dir.empty()) {
    std::string home = get("HOME");
    e.cache_dir = home.empty() ? fmt::format("/tmp/tritium-cache-{}", static_cast<unsigned>(getuid()))
                               : home + "/.cache/tritium";
  }
  std::string cache = lower_trimmed(get("TRITIUM_CACHE"));
  e.cache_enabled = !(cache == "0" || cache == "false" || cache == "off" || cache == "no");
  e.dump_dir = get("TRITIUM_DUMP");
  std::string pm = lower_trimmed(get("TRITIUM_PERF_MAP"));
  e.perf_map = !pm.empty() && pm != "0" && pm != "false" && pm != "off" && pm != "no";
  e.log_compile = list_contains(get("TRITIUM_LOG"), "compile");
  e.num_threads = parse_num_threads(get("TRITIUM_NUM_THREADS"));
  e.max_ir_ops = parse_max_ir_ops(get("TRITIUM_MAX_IR_OPS"));
  e.nvrtc_options = get("TRITIUM_NVRTC_OPTIONS");
  std::string fc = lower_trimmed(get("TRITIUM_FAST_COMPILE"));
  e.fast_compile = !(fc == "0" || fc == "false" || fc == "off" || fc == "no");
  std::string ac = lower_trimmed(get("TRITIUM_ASYNC_COMPILE"));
  e.async_compile = !(ac == "0" || ac == "false" || ac == "off" || ac == "no");
  e.f32_default = lower_trimmed(get("TRITIUM_F32_DEFAULT"));
  e.cuda_codegen = lower_trimmed(get("TRITIUM_CUDA_CODEGEN"));
  std::string pa = lower_trimmed(get("TRITIUM_PRINT_AUTOTUNING"));
  e.print_autotuning = !pa.empty() && pa != "0" && pa != "false" && pa != "off" && pa != "no";
  e.print_autotuning_all = pa == "all";
  e.autotune = lower_trimmed(get("TRITIUM_AUTOTUNE"));
  std::string pb = lower_trimmed(get("TRITIUM_POISON_BUFFERS"));
  e.poison_buffers = !pb.empty() && pb != "0" && pb != "false" && pb != "off" && pb != "no";
  std::string dbg = lower_trimmed(get("TRITIUM_DEBUG"));
  e.debug = !dbg.empty() && dbg != "0" && dbg != "false" && dbg != "off" && dbg != "no";
  return e;
}

Env& env_storage() {
  static Env e = read_env();
  return e;
}

}  // namespace

const Env& env() { return env_storage(); }

void reload_env_for_tests() { env_storage() = read_env(); }

}  // namespace tritium
