// libnvJitLink through dlopen, with our own declarations of the entry points we use (their
// unversioned names, which the library exports beside the versioned ones).
#include "jit/cuda/nvjitlink.h"

#include "common/error.h"
#include "common/shared_library.h"

namespace tritium::jit::cuda {
namespace {

using nvJitLinkResult = int;  // NVJITLINK_SUCCESS = 0
using nvJitLinkHandle = struct nvJitLink*;
constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX

struct NvJitLink {
  void* handle = nullptr;
  std::string reason;  // why it is unavailable
  nvJitLinkResult (*Create)(nvJitLinkHandle*, uint32_t, const char**) = nullptr;
  nvJitLinkResult (*Destroy)(nvJitLinkHandle*) = nullptr;
  nvJitLinkResult (*AddData)(nvJitLinkHandle, int, const void*, size_t, const char*) = nullptr;
  nvJitLinkResult (*Complete)(nvJitLinkHandle) = nullptr;
  nvJitLinkResult (*GetLinkedCubinSize)(nvJitLinkHandle, size_t*) = nullptr;
  nvJitLinkResult (*GetLinkedCubin)(nvJitLinkHandle, void*) = nullptr;
  nvJitLinkResult (*GetErrorLogSize)(nvJitLinkHandle, size_t*) = nullptr;
  nvJitLinkResult (*GetErrorLog)(nvJitLinkHandle, char*) = nullptr;
  nvJitLinkResult (*Version)(unsigned*, unsigned*) = nullptr;
  unsigned major = 0, minor = 0;
};

const NvJitLink& lib() {
  static const NvJitLink n = [] {
    NvJitLink r;
    SharedLibrary l = open_shared_library(
        "libnvJitLink", "TRITIUM_LIBNVJITLINK",
        cuda_toolkit_library_paths("libnvJitLink"),
        [&](void* h) {
          return bind_symbol(h, "nvJitLinkCreate", r.Create) && bind_symbol(h, "nvJitLinkDestroy", r.Destroy) &&
                 bind_symbol(h, "nvJitLinkAddData", r.AddData) && bind_symbol(h, "nvJitLinkComplete", r.Complete) &&
                 bind_symbol(h, "nvJitLinkGetLinkedCubinSize", r.GetLinkedCubinSize) &&
                 bind_symbol(h, "nvJitLinkGetLinkedCubin", r.GetLinkedCubin) &&
                 bind_symbol(h, "nvJitLinkGetErrorLogSize", r.GetErrorLogSize) &&
                 bind_symbol(h, "nvJitLinkGetErrorLog", r.GetErrorLog) && bind_symbol(h, "nvJitLinkVersion", r.Version);
        });
    r.handle = l.handle;
    r.reason = l.reason;
    if (r.handle) r.Version(&r.major, &r.minor);
    return r;
  }();
  return n;
}

const NvJitLink& require() {
  const NvJitLink& n = lib();
  if (!n.handle) fail("{}", n.reason);
  return n;
}

}  // namespace

bool nvjitlink_available() { return lib().handle != nullptr; }
std::string nvjitlink_unavailable_reason() { return lib().reason; }
std::string nvjitlink_version() {
  const NvJitLink& n = require();
  return fmt::format("{}.{}", n.major, n.minor);
}

std::vector<char> ptx_to_cubin(const std::string& ptx, const std::string& name, const std::string& arch) {
  const NvJitLink& n = require();
  std::string arch_option = "-arch=" + arch;
  const char* options[] = {arch_option.c_str()};
  nvJitLinkHandle h = nullptr;
  if (int r = n.Create(&h, 1, options); r != 0) fail("nvJitLinkCreate failed for kernel {} (error {})", name, r);
  struct Guard {
    const NvJitLink& n;
    nvJitLinkHandle* h;
    ~Guard() { n.Destroy(h); }
  } guard{n, &h};
  std::string file = name + ".ptx";
  int r = n.AddData(h, kInputPtx, ptx.data(), ptx.size(), file.c_str());
  if (r == 0) r = n.Complete(h);
  if (r != 0) {
    size_t size = 0;
    n.GetErrorLogSize(h, &size);
    std::string log(size, '\0');
    if (size > 1) n.GetErrorLog(h, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    fail("nvJitLink could not assemble kernel {} for {} (error {}):\n{}\n\ngenerated PTX ({}):\n{}", name, arch, r, log,
         file, ptx);
  }
  size_t size = 0;
  if (int e = n.GetLinkedCubinSize(h, &size); e != 0) fail("nvJitLinkGetLinkedCubinSize failed for kernel {} (error {})", name, e);
  std::vector<char> cubin(size);
  if (int e = n.GetLinkedCubin(h, cubin.data()); e != 0) fail("nvJitLinkGetLinkedCubin failed for kernel {} (error {})", name, e);
  return cubin;
}

}  // namespace tritium::jit::cuda
