// The CUDA side of runtime/streams.h for the runtime's own code (thread-safe):
//  - current_stream(device): the CUstream where the launch paths put work for a tensor on
//    cuda:device (kernels, copies, fills, allocations): the calling thread's current stream, the
//    legacy default stream (cuda_device.h's default_stream) until the thread sets another;
//  - the caching allocator's bookkeeping of blocks used on streams other than their own
//    (runtime/cuda_allocator.cpp; users call record_stream(tensor, stream) of runtime/streams.h).
#pragma once
#include <cstddef>

#include "runtime/cuda_driver.h"

namespace tritium::runtime::cuda {

// A thread-local lookup (runtime/streams.cpp).
CUstream current_stream(int device);

// Marks block `ptr` (from allocate) as used by `stream` too: when freed, it rejoins its stream's
// free list only once the work queued on `stream` by then has completed (an event recorded at
// free time, queried by later allocations). The allocation stream itself and unknown pointers
// (memory the allocator did not hand out) are ignored. `stream` may belong to another device
// (stream_device; a peer copy reads the block there): its event is that device's.
void record_stream(CUdeviceptr ptr, CUstream stream, int stream_device);
// Bytes of freed blocks of device still waiting for such events (counted in the cached bytes).
size_t pending_free_bytes(int device);

}  // namespace tritium::runtime::cuda
