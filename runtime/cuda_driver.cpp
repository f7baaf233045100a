#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/launch_queue.h"

namespace tritium::runtime::cuda {
namespace {

using GetProcAddressFn = CUresult (*)(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult* status);

struct Loaded {
  Driver driver{};
  bool ok = false;
  std::string reason;
  std::vector<std::string> tried;
};

std::string join_tried(const std::vector<std::string>& tried, const std::vector<std::string>& errors) {
  std::string s;
  for (size_t i = 0; i < tried.size(); ++i) s += fmt::format("\n  {}: {}", tried[i], errors[i]);
  return s;
}

// The driver's own entry points, for the ordered calls' wrappers (installed by load()).
Driver g_raw{};

// A driver call that the GPU or the host orders against kernels (copies, fills, frees, events,
// stream waits and synchronisations, launches) first issues the launches queued while kernels
// compile (runtime/launch_queue.h), so it sees them as the program made them. Queries of an
// event already recorded need nothing: the record itself came after the queue was issued.
template <auto Member, typename F>
struct Ordered;
template <auto Member, typename R, typename... A>
struct Ordered<Member, R (*)(A...)> {
  static R call(A... a) {
    launch_queue::drain_before_ordered_call();
    return (g_raw.*Member)(a...);
  }
};

void install_ordered_calls(Driver& d) {
  g_raw = d;
#define TRITIUM_ORDERED(name) d.name = &Ordered<&Driver::name, decltype(Driver::name)>::call
  TRITIUM_ORDERED(cuCtxSynchronize);
  TRITIUM_ORDERED(cuMemFree);
  TRITIUM_ORDERED(cuMemFreeHost);
  TRITIUM_ORDERED(cuMemcpyHtoDAsync);
  TRITIUM_ORDERED(cuMemcpyDtoHAsync);
  TRITIUM_ORDERED(cuMemcpyDtoDAsync);
  TRITIUM_ORDERED(cuMemcpyPeerAsync);
  TRITIUM_ORDERED(cuMemsetD8Async);
  TRITIUM_ORDERED(cuMemsetD32Async);
  TRITIUM_ORDERED(cuStreamDestroy);
  TRITIUM_ORDERED(cuStreamSynchronize);
  TRITIUM_ORDERED(cuStreamQuery);
  TRITIUM_ORDERED(cuStreamWaitEvent);
  TRITIUM_ORDERED(cuEventRecord);
  TRITIUM_ORDERED(cuLaunchKernel);
#undef TRITIUM_ORDERED
}

Loaded load() {
  Loaded out;
  Driver& d = out.driver;
  const char* env = std::getenv("TRITIUM_LIBCUDA");
  const bool overridden = env && *env;
  std::vector<std::string> candidates;
  if (overridden) candidates.emplace_back(env);
  else candidates = {"libcuda.so.1", "libcuda.so"};
  const std::string override_note =
      overridden ? fmt::format(" (TRITIUM_LIBCUDA={} was set, so only that path was tried)", env)
                 : std::string(" (set TRITIUM_LIBCUDA=/path/to/libcuda.so.1 to use another driver library)");

  std::vector<std::string> errors;
  for (const std::string& path : candidates) {
    out.tried.push_back(path);
    d.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (d.handle) {
      d.library_path = path;
      break;
    }
    const char* e = dlerror();
    errors.emplace_back(e ? e : "unknown dlopen error");
  }
  if (!d.handle) {
    out.reason = fmt::format("the CUDA driver library libcuda could not be loaded (no NVIDIA driver on this machine?); "
                             "paths tried:{}{}",
                             join_tried(out.tried, errors), override_note);
    return out;
  }

  auto get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(d.handle, "cuGetProcAddress_v2"));
  auto get_version = reinterpret_cast<CUresult (*)(int*)>(dlsym(d.handle, "cuDriverGetVersion"));
  int version = 0;
  if (get_version) get_version(&version);
  if (!get_proc) {
    out.reason = fmt::format("driver too old: {} (CUDA driver version {}.{}) has no cuGetProcAddress_v2; Tritium needs "
                             "a driver for CUDA {}.{} or newer{}",
                             d.library_path, version / 1000, version % 1000 / 10, kRequestedCudaVersion / 1000,
                             kRequestedCudaVersion % 1000 / 10, override_note);
    return out;
  }
  if (version != 0 && version < kRequestedCudaVersion) {
    out.reason = fmt::format("driver too old: {} is CUDA driver version {}.{}; Tritium needs CUDA {}.{} or newer",
                             d.library_path, version / 1000, version % 1000 / 10, kRequestedCudaVersion / 1000,
                             kRequestedCudaVersion % 1000 / 10);
    return out;
  }

  std::string missing;
  bool stub = false;
  auto resolve = [&](auto& fn, const char* name) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r = get_proc(name, &p, kRequestedCudaVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r == CUDA_ERROR_STUB_LIBRARY) stub = true;
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !p) {
      missing += fmt::format("{}{} (CUresult {}, status {})", missing.empty() ? "" : ", ", name, r, status);
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
#define TRITIUM_RESOLVE(name) resolve(d.name, #name)
  TRITIUM_RESOLVE(cuGetErrorName);
  TRITIUM_RESOLVE(cuGetErrorString);
  TRITIUM_RESOLVE(cuInit);
  TRITIUM_RESOLVE(cuDriverGetVersion);
  TRITIUM_RESOLVE(cuDeviceGetCount);
  TRITIUM_RESOLVE(cuDeviceGet);
  TRITIUM_RESOLVE(cuDeviceGetName);
  TRITIUM_RESOLVE(cuDeviceGetAttribute);
  TRITIUM_RESOLVE(cuDeviceTotalMem);
  TRITIUM_RESOLVE(cuDevicePrimaryCtxRetain);
  TRITIUM_RESOLVE(cuDevicePrimaryCtxRelease);
  TRITIUM_RESOLVE(cuCtxSetCurrent);
  TRITIUM_RESOLVE(cuCtxGetCurrent);
  TRITIUM_RESOLVE(cuCtxSynchronize);
  TRITIUM_RESOLVE(cuMemGetInfo);
  TRITIUM_RESOLVE(cuMemAlloc);
  TRITIUM_RESOLVE(cuMemFree);
  TRITIUM_RESOLVE(cuMemAllocHost);
  TRITIUM_RESOLVE(cuMemFreeHost);
  TRITIUM_RESOLVE(cuMemcpyHtoDAsync);
  TRITIUM_RESOLVE(cuMemcpyDtoHAsync);
  TRITIUM_RESOLVE(cuMemcpyDtoDAsync);
  TRITIUM_RESOLVE(cuMemcpyPeerAsync);
  TRITIUM_RESOLVE(cuDeviceCanAccessPeer);
  TRITIUM_RESOLVE(cuCtxEnablePeerAccess);
  TRITIUM_RESOLVE(cuMemsetD8Async);
  TRITIUM_RESOLVE(cuMemsetD32Async);
  TRITIUM_RESOLVE(cuStreamCreate);
  TRITIUM_RESOLVE(cuStreamDestroy);
  TRITIUM_RESOLVE(cuStreamSynchronize);
  TRITIUM_RESOLVE(cuStreamQuery);
  TRITIUM_RESOLVE(cuStreamWaitEvent);
  TRITIUM_RESOLVE(cuEventCreate);
  TRITIUM_RESOLVE(cuEventRecord);
  TRITIUM_RESOLVE(cuEventQuery);
  TRITIUM_RESOLVE(cuEventSynchronize);
  TRITIUM_RESOLVE(cuEventElapsedTime);
  TRITIUM_RESOLVE(cuEventDestroy);
  TRITIUM_RESOLVE(cuModuleLoadData);
  TRITIUM_RESOLVE(cuModuleUnload);
  TRITIUM_RESOLVE(cuModuleGetFunction);
  TRITIUM_RESOLVE(cuFuncSetAttribute);
  TRITIUM_RESOLVE(cuFuncGetAttribute);
  TRITIUM_RESOLVE(cuOccupancyMaxActiveBlocksPerMultiprocessor);
  TRITIUM_RESOLVE(cuTensorMapEncodeTiled);
  TRITIUM_RESOLVE(cuLaunchKernel);
#undef TRITIUM_RESOLVE
  if (stub) {
    out.reason = fmt::format("{} is the CUDA stub library (CUDA_ERROR_STUB_LIBRARY), not a real driver: no NVIDIA "
                             "driver is installed here{}",
                             d.library_path, override_note);
    return out;
  }
  if (!missing.empty()) {
    out.reason = fmt::format("driver too old or incomplete: {} lacks entry points for CUDA {}.{}: {}", d.library_path,
                             kRequestedCudaVersion / 1000, kRequestedCudaVersion % 1000 / 10, missing);
    return out;
  }
  d.driver_version = version;
  d.cuDriverGetVersion(&d.driver_version);

  // Errors from here on are described through `d`, which is complete.
  auto name_of = [&](CUresult r) {
    const char* name = nullptr;
    const char* text = nullptr;
    d.cuGetErrorName(r, &name);
    d.cuGetErrorString(r, &text);
    return fmt::format("{} ({})", name ? name : fmt::format("CUDA error {}", r), text ? text : "no description");
  };
  CUresult r = d.cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    out.reason = fmt::format("{} is the CUDA stub library, not a real driver (cuInit: {}){}", d.library_path,
                             name_of(r), override_note);
    return out;
  }
  if (r == CUDA_ERROR_NO_DEVICE) {
    out.reason = fmt::format("no CUDA device: cuInit reports {} (driver {})", name_of(r), d.library_path);
    return out;
  }
  if (r != CUDA_SUCCESS) {
    out.reason = fmt::format("cuInit failed: {} (driver {})", name_of(r), d.library_path);
    return out;
  }
  r = d.cuDeviceGetCount(&d.device_count);
  if (r != CUDA_SUCCESS || d.device_count <= 0) {
    out.reason = r != CUDA_SUCCESS ? fmt::format("no CUDA device: cuDeviceGetCount failed: {}", name_of(r))
                                   : fmt::format("no CUDA device: the driver ({}) sees none", d.library_path);
    return out;
  }
  install_ordered_calls(d);
  out.ok = true;
  return out;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never destroyed: usable during static destruction
  return *l;
}

}  // namespace

bool available() { return loaded().ok; }
const std::string& unavailable_reason() { return loaded().reason; }
const std::vector<std::string>& library_paths_tried() { return loaded().tried; }

const Driver& driver() {
  const Loaded& l = loaded();
  if (!l.ok) fail("CUDA is unavailable: {}", l.reason);
  return l.driver;
}

std::string error_string(CUresult r) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (l.driver.cuGetErrorName && l.driver.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (l.driver.cuGetErrorString && l.driver.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
  std::string n = name ? std::string(name) : fmt::format("CUDA error {}", r);
  return text ? fmt::format("{} ({})", n, text) : n;
}

void check(CUresult r, const char* call, std::string_view context) {
  launch_queue::rethrow_error();  // a queued launch that failed, reported at the next checked call
  if (r == CUDA_SUCCESS) return;
  std::string message = context.empty() ? fmt::format("{} failed: {}", call, error_string(r))
                                        : fmt::format("{} failed for {}: {}", call, context, error_string(r));
  // Too many registers or threads for a block: the kernel can never launch on this device.
  if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) throw ResourceError(message);
  throw Error(message);
}

}  // namespace tritium::runtime::cuda
