// libnvrtc through dlopen, with our own declarations of the few entry points we use.
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/nvrtc_log.h"

#include <cstdlib>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/shared_library.h"
#include "ir/ir.h"

namespace tritium::jit::cuda {
namespace {

using nvrtcResult = int;  // NVRTC_SUCCESS = 0
using nvrtcProgram = struct _nvrtcProgram*;

struct Nvrtc {
  void* handle = nullptr;
  std::string path;
  std::string reason;  // why it is unavailable
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  int major = 0, minor = 0;
};

const Nvrtc& lib() {
  static const Nvrtc n = [] {
    Nvrtc r;
    SharedLibrary l = open_shared_library(
        "libnvrtc", "TRITIUM_LIBNVRTC",
        cuda_toolkit_library_paths("libnvrtc"),
        [&](void* h) {
          return bind_symbol(h, "nvrtcGetErrorString", r.GetErrorString) && bind_symbol(h, "nvrtcVersion", r.Version) &&
                 bind_symbol(h, "nvrtcCreateProgram", r.CreateProgram) &&
                 bind_symbol(h, "nvrtcDestroyProgram", r.DestroyProgram) &&
                 bind_symbol(h, "nvrtcCompileProgram", r.CompileProgram) &&
                 bind_symbol(h, "nvrtcGetProgramLogSize", r.GetProgramLogSize) &&
                 bind_symbol(h, "nvrtcGetProgramLog", r.GetProgramLog) &&
                 bind_symbol(h, "nvrtcGetCUBINSize", r.GetCUBINSize) && bind_symbol(h, "nvrtcGetCUBIN", r.GetCUBIN);
        });
    r.handle = l.handle;
    r.path = l.path;
    r.reason = l.reason;
    if (r.handle) r.Version(&r.major, &r.minor);
    return r;
  }();
  return n;
}

const Nvrtc& require() {
  const Nvrtc& n = lib();
  if (!n.handle) fail("{}", n.reason);
  return n;
}

void check(const Nvrtc& n, nvrtcResult r, const char* call, const std::string& name) {
  if (r != 0) fail("NVRTC {} failed for kernel {}: {}", call, name, n.GetErrorString(r));
}

// The numbered source lines around every "name(LINE): error" of the log.
std::string excerpts(const std::string& source, const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::set<int> errs;
  std::regex re(R"(\((\d+)\): (error|catastrophic error))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
    errs.insert(std::stoi((*it)[1].str()));
  std::string out;
  int shown = 0;
  int last = 0;
  for (int e : errs) {
    if (++shown > 5) break;
    int from = std::max({1, e - 4, last + 1}), to = std::min<int>(static_cast<int>(lines.size()), e + 2);
    if (from > last + 1 && last > 0) out += "  ...\n";
    for (int i = from; i <= to; ++i)
      out += fmt::format("{}{:5} | {}\n", i == e ? ">" : " ", i, lines[static_cast<size_t>(i - 1)]);
    last = to;
  }
  return out;
}

}  // namespace

bool nvrtc_available() { return lib().handle != nullptr; }
std::string nvrtc_unavailable_reason() { return lib().reason; }
std::string nvrtc_version() {
  const Nvrtc& n = require();
  return fmt::format("{}.{}", n.major, n.minor);
}

// Short kernels without loops, reductions, scans or dots: a few loads, arithmetic and stores per
// element, with vector accesses in the generated source already. NVRTC compiles them with
// --Ofast-compile=min, in 0.44-0.66 of the time on the H100 machine (20 small kernels, medians
// within one run: 32-58 ms against 50-87 ms, the host's speed varying), and they run as fast.
// What that level leaves out - partial unrolling of run-time loops, NVVM's merging of scalar
// accesses into vector ones, part of the scalar optimisation - matters for loops, shared-memory
// buffers and long arithmetic (dropout's Philox rounds: 368 instructions instead of 312 and 10%
// less bandwidth, hence the operation limit). Measurements: docs/cuda-backend.md, "Cold compile
// time".
bool compiles_fast(const ir::Function& f) {
  bool light = true;
  int ops = 0;
  const_cast<ir::Function&>(f).walk([&](ir::Op* op) {
    ++ops;
    switch (op->kind) {
      case ir::OpKind::For: case ir::OpKind::While: case ir::OpKind::Reduce: case ir::OpKind::Scan:
      case ir::OpKind::Dot:
        light = false;
        break;
      default: break;
    }
  });
  return light && ops <= kMaxFastCompileOps;
}

namespace {

// The cubin of `source`, and NVRTC's log in `log_out` when given.
std::vector<char> compile(const std::string& source, const std::string& name, const std::string& arch,
                          const std::vector<std::string>& extra_options, std::string* log_out) {
  const Nvrtc& n = require();
  nvrtcProgram prog = nullptr;
  std::string file = name + ".cu";
  check(n, n.CreateProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram", name);
  struct Guard {
    const Nvrtc& n;
    nvrtcProgram* p;
    ~Guard() { n.DestroyProgram(p); }
  } guard{n, &prog};
  // Accurate math (no --use_fast_math); functions without qualifiers are device functions.
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-std=c++17", "-default-device", "-minimal"};
  for (const auto& o : extra_options) opts.push_back(o);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult r = n.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  n.GetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) n.GetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (r != 0)
    fail("NVRTC could not compile kernel {} for {} ({}):\n{}\n\ngenerated source ({}):\n{}", name, arch,
         n.GetErrorString(r), log, file, excerpts(source, log));
  size_t size = 0;
  check(n, n.GetCUBINSize(prog, &size), "nvrtcGetCUBINSize", name);
  std::vector<char> cubin(size);
  check(n, n.GetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN", name);
  if (log_out) *log_out = log;
  return cubin;
}

}  // namespace

std::vector<char> compile_to_cubin(const std::string& source, const std::string& name, const std::string& arch,
                                   const std::vector<std::string>& extra_options) {
  return compile(source, name, arch, extra_options, nullptr);
}

std::string compile_log(const std::string& source, const std::string& name, const std::string& arch,
                        const std::vector<std::string>& extra_options) {
  std::string log;
  compile(source, name, arch, extra_options, &log);
  return log;
}

}  // namespace tritium::jit::cuda
