// Opens libnccl once, on first use.
#include "dist/nccl_library.h"

#include "common/error.h"
#include "common/shared_library.h"
#include "runtime/launch_queue.h"

namespace tritium::dist::nccl {

namespace {

struct Loaded {
  Library lib{};
  SharedLibrary shared;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded out;
    Library& lib = out.lib;
    out.shared = open_shared_library(
        "libnccl", "TRITIUM_LIBNCCL", {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"}, [&](void* h) {
          return bind_symbol(h, "ncclGetVersion", lib.ncclGetVersion) &&
                 bind_symbol(h, "ncclGetUniqueId", lib.ncclGetUniqueId) &&
                 bind_symbol(h, "ncclCommInitRank", lib.ncclCommInitRank) &&
                 bind_symbol(h, "ncclCommDestroy", lib.ncclCommDestroy) &&
                 bind_symbol(h, "ncclCommAbort", lib.ncclCommAbort) &&
                 bind_symbol(h, "ncclCommGetAsyncError", lib.ncclCommGetAsyncError) &&
                 bind_symbol(h, "ncclGetErrorString", lib.ncclGetErrorString) &&
                 bind_symbol(h, "ncclAllReduce", lib.ncclAllReduce) &&
                 bind_symbol(h, "ncclBroadcast", lib.ncclBroadcast) &&
                 bind_symbol(h, "ncclAllGather", lib.ncclAllGather) &&
                 bind_symbol(h, "ncclReduceScatter", lib.ncclReduceScatter);
        });
    if (out.shared.handle) {
      lib.path = out.shared.path;
      if (lib.ncclGetVersion(&lib.version) != kSuccess) lib.version = 0;
    }
    return out;
  }();
  return l;
}

}  // namespace

bool available() { return loaded().shared.handle != nullptr; }

const std::string& unavailable_reason() {
  static const std::string none;
  return available() ? none : loaded().shared.reason;
}

const Library& library() {
  if (!available()) fail("dist: the nccl backend is unavailable: {}", unavailable_reason());
  // Collectives run on the launching thread's stream after its kernels: issue those queued while
  // kernels compile first (runtime/launch_queue.h).
  runtime::launch_queue::drain_before_ordered_call();
  return loaded().lib;
}

void check(Result r, const char* call) {
  if (r == kSuccess) return;
  const char* what = available() ? library().ncclGetErrorString(r) : "?";
  fail("{} failed: {} (NCCL error {})", call, what ? what : "?", r);
}

}  // namespace tritium::dist::nccl
