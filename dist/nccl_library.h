// NCCL, opened at run time (dlopen) as libcuda is (runtime/cuda_driver.h): nothing links it, and
// a machine without it builds and runs everything but the nccl backend, which says why. The
// declarations below are those of nccl.h (2.18 and later) that the backend calls.
#pragma once
#include <cstddef>
#include <string>

#include "runtime/cuda_driver.h"

namespace tritium::dist::nccl {

struct ncclComm;
using Comm = ncclComm*;
using Result = int;  // ncclResult_t
inline constexpr Result kSuccess = 0;
inline constexpr Result kInProgress = 7;
struct UniqueId {
  char internal[128];  // NCCL_UNIQUE_ID_BYTES
};
// ncclDataType_t and ncclRedOp_t values.
enum DataType : int { kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5, kFloat16 = 6,
                      kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9 };
enum RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };

struct Library {
  Result (*ncclGetVersion)(int* version);
  Result (*ncclGetUniqueId)(UniqueId* id);
  Result (*ncclCommInitRank)(Comm* comm, int nranks, UniqueId id, int rank);
  Result (*ncclCommDestroy)(Comm comm);
  Result (*ncclCommAbort)(Comm comm);
  Result (*ncclCommGetAsyncError)(Comm comm, Result* async_error);
  const char* (*ncclGetErrorString)(Result result);
  Result (*ncclAllReduce)(const void* send, void* recv, size_t count, int datatype, int op, Comm comm,
                          runtime::cuda::CUstream stream);
  Result (*ncclBroadcast)(const void* send, void* recv, size_t count, int datatype, int root, Comm comm,
                          runtime::cuda::CUstream stream);
  Result (*ncclAllGather)(const void* send, void* recv, size_t send_count, int datatype, Comm comm,
                          runtime::cuda::CUstream stream);
  Result (*ncclReduceScatter)(const void* send, void* recv, size_t recv_count, int datatype, int op, Comm comm,
                              runtime::cuda::CUstream stream);
  int version = 0;  // ncclGetVersion: 22803 = 2.28.3
  std::string path;
};

// True when libnccl.so.2 opened with every entry point (TRITIUM_LIBNCCL names another path;
// otherwise the loader's path, then /usr/local/cuda/lib64).
bool available();
// Why not (each path tried and its dlerror), empty when available().
const std::string& unavailable_reason();
// The library; a tritium::Error with unavailable_reason() when unavailable.
const Library& library();
// No-op on success; otherwise a tritium::Error "<call> failed: <NCCL's string> (<code>)".
void check(Result r, const char* call);

}  // namespace tritium::dist::nccl
