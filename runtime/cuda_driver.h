// The CUDA driver API, loaded at run time. libcuda is opened with dlopen (so the same binary runs
// on a machine without a GPU) and every entry point is resolved through cuGetProcAddress_v2 for
// the CUDA 12.0 ABI (kRequestedCudaVersion), whatever newer driver is installed: the typedefs
// below are the 12.0 signatures, so the pointers always match them.
//
// Where to look:   TRITIUM_LIBCUDA=/path/to/libcuda.so.1 if set (only that path is tried), else
//                  "libcuda.so.1", then "libcuda.so" (the dynamic loader's search path).
// Loading happens once, on the first call to available()/driver()/unavailable_reason(), and is
// thread-safe. cuInit(0) is called as part of loading.
//
// No CUDA header is needed: the handful of types and constants used are declared here with the
// values of cuda.h 13.0.
//
//   namespace cu = tritium::runtime::cuda;
//   if (!cu::available()) fail("CUDA: {}", cu::unavailable_reason());
//   const cu::Driver& d = cu::driver();
//   cu::check(d.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData", "kernel add_kernel");
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::runtime::cuda {

// ---- types (cuda.h 13.0) ------------------------------------------------------------------------
using CUresult = int;                     // enum cudaError_enum
using CUdevice = int;                     // CUdevice_v1
using CUdeviceptr = unsigned long long;   // CUdeviceptr_v2 (64-bit)
using cuuint64_t = uint64_t;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;            // nullptr = the legacy default (NULL) stream
using CUevent = CUevent_st*;
using CUdevice_attribute = int;           // enum CUdevice_attribute_enum
using CUfunction_attribute = int;         // enum CUfunction_attribute_enum
using CUdriverProcAddressQueryResult = int;

// CUresult values (the ones code here tests for; any other value is reported by name through
// cuGetErrorName).
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
inline constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
inline constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
inline constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
inline constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
inline constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
inline constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
inline constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;
inline constexpr CUresult CUDA_ERROR_LAUNCH_TIMEOUT = 702;
inline constexpr CUresult CUDA_ERROR_ASSERT = 710;
inline constexpr CUresult CUDA_ERROR_ILLEGAL_INSTRUCTION = 715;
inline constexpr CUresult CUDA_ERROR_MISALIGNED_ADDRESS = 716;
inline constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
inline constexpr CUresult CUDA_ERROR_NOT_PERMITTED = 800;
inline constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
inline constexpr CUresult CUDA_ERROR_UNKNOWN = 999;

// CUdevice_attribute values.
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUfunction_attribute values.
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_PTX_VERSION = 5;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9;

// Flags.
inline constexpr unsigned CU_STREAM_DEFAULT = 0x0;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0x0;
inline constexpr unsigned CU_EVENT_BLOCKING_SYNC = 0x1;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr cuuint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;
inline constexpr CUdriverProcAddressQueryResult CU_GET_PROC_ADDRESS_SUCCESS = 0;
inline constexpr CUdriverProcAddressQueryResult CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1;
inline constexpr CUdriverProcAddressQueryResult CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2;

// The ABI every entry point is requested for, and the oldest driver accepted (CUDA 12.0).
inline constexpr int kRequestedCudaVersion = 12000;

// ---- the entry points ------------------------------------------------------------------------------
// Signatures are those of CUDA 12.0 (cuda.h's unversioned names map to these: cuMemAlloc is
// cuMemAlloc_v2, cuStreamDestroy is cuStreamDestroy_v2, ...). All are non-null once loaded.
struct Driver {
  CUresult (*cuGetErrorName)(CUresult error, const char** str);
  CUresult (*cuGetErrorString)(CUresult error, const char** str);
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);

  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice dev);
  CUresult (*cuDeviceGetAttribute)(int* value, CUdevice_attribute attrib, CUdevice dev);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice dev);

  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxGetCurrent)(CUcontext* ctx);
  CUresult (*cuCtxSynchronize)();

  CUresult (*cuMemGetInfo)(size_t* free, size_t* total);
  CUresult (*cuMemAlloc)(CUdeviceptr* dptr, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr dptr);
  CUresult (*cuMemAllocHost)(void** pp, size_t bytes);
  CUresult (*cuMemFreeHost)(void* p);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  // Copies between devices (nn::to_device, model parallelism): peer access where the pair allows it.
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                                CUstream stream);
  CUresult (*cuDeviceCanAccessPeer)(int* can_access, CUdevice dev, CUdevice peer);
  CUresult (*cuCtxEnablePeerAccess)(CUcontext peer, unsigned flags);
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned value, size_t count, CUstream stream);

  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamQuery)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);

  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end);
  CUresult (*cuEventDestroy)(CUevent event);

  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* func, CUmodule module, const char* name);
  CUresult (*cuFuncSetAttribute)(CUfunction func, CUfunction_attribute attrib, int value);
  CUresult (*cuFuncGetAttribute)(int* value, CUfunction_attribute attrib, CUfunction func);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, CUfunction func, int block_size,
                                                         size_t dynamic_shared_bytes);
  // CUtensorMap (128 bytes, 64-byte aligned) for the bulk tensor copies; enums as int.
  CUresult (*cuTensorMapEncodeTiled)(void* tensor_map, int data_type, uint32_t rank, void* global_address,
                                     const uint64_t* global_dim, const uint64_t* global_strides,
                                     const uint32_t* box_dim, const uint32_t* element_strides, int interleave,
                                     int swizzle, int l2_promotion, int oob_fill);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                             unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream,
                             void** kernel_params, void** extra);

  // Filled by the loader.
  int driver_version = 0;    // cuDriverGetVersion: 13000 = CUDA 13.0
  int device_count = 0;      // cuDeviceGetCount, > 0 when available()
  std::string library_path;  // the path that dlopen accepted
  void* handle = nullptr;    // the dlopen handle (never closed)
};

// True when libcuda loaded, is new enough (>= kRequestedCudaVersion), every entry point
// resolved, cuInit succeeded and at least one device exists.
bool available();
// Empty when available(). Otherwise why not, for users: names libcuda, every path tried with its
// dlerror(), and the TRITIUM_LIBCUDA override; or "no CUDA device" (with the cuInit error),
// "driver too old" (with the versions), a stub library, a missing entry point.
const std::string& unavailable_reason();
// Every path dlopen was given, in order (for diagnostics and tests).
const std::vector<std::string>& library_paths_tried();
// The loaded driver; throws tritium::Error with unavailable_reason() when unavailable.
const Driver& driver();

// "CUDA_ERROR_INVALID_VALUE (invalid argument)"; works (as "CUDA error 1") without a driver.
std::string error_string(CUresult r);
// No-op on CUDA_SUCCESS; otherwise throws tritium::Error:
//   "<call> failed: <error_string>"                 (empty context)
//   "<call> failed for <context>: <error_string>"   e.g. check(r, "cuLaunchKernel", "kernel add_kernel") ->
//   "cuLaunchKernel failed for kernel add_kernel: CUDA_ERROR_INVALID_VALUE (invalid argument)"
void check(CUresult r, const char* call, std::string_view context = {});

}  // namespace tritium::runtime::cuda
