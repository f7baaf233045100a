// One recorded profiler event: an op call, a named range, a kernel launch, an allocation/free, or
// a collective (all_reduce, broadcast, ... issued on a process group).
// Times are microseconds since the profile started (steady clock); GPU times come from CUDA
// events read when the profile stops.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tritium::profiler {

enum class EventKind { op, range, kernel, memory, collective };
const char* event_kind_name(EventKind k);  // "op", "range", "kernel", "memory", "collective"

// What a collective moves (PyTorch's record_param_comms arguments), and DDP's bucket ranges.
struct CommInfo {
  std::string collective;  // "all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier"
  std::string backend;     // "gloo", "nccl"
  std::string dtype;       // Tritium's dtype name ("f32")
  int64_t elements = 0;    // of the tensor this rank contributes
  int64_t bytes = 0;
  int group_size = 0;
  int bucket = -1;  // DDP's bucket index when DDP issued it (and on the bucket's range); -1: none
};

struct Event {
  int64_t id = -1;
  int64_t parent = -1;  // id of the op/range/kernel open on the same thread when it began; -1: none
  EventKind kind = EventKind::op;
  std::string name;     // op name ("linear"), range name, kernel name, or "[memory]"
  int thread = 0;       // small index of the host thread that recorded it (0, 1, ... per process)
  double start_us = 0;  // CPU begin
  double dur_us = 0;    // CPU duration (0 for memory events)

  // Ops, with ProfileOptions::record_shapes: "[[64, 784], [128, 784], []]" (an undefined input is
  // []) and "[float32, float32, -]".
  std::string input_shapes, input_dtypes;

  // Kernels.
  int64_t grid[3] = {0, 0, 0};
  std::string device = "cpu";  // where a kernel ran or memory lives: "cpu", "cuda:0"
  int stream = -1;             // CUDA stream index on its device (0: the default stream); -1: CPU
  double gpu_start_us = -1;    // CUDA timing: GPU begin on the profile's clock, and duration;
  double gpu_dur_us = -1;      // -1: not timed (CPU backend, or ProfileOptions::cuda_timing off)

  // Memory: bytes allocated (> 0) or freed (< 0), and the bytes allocated on the device by
  // buffers the profile saw, after this event (starting from 0 when the profile started).
  int64_t bytes = 0;
  int64_t allocated = 0;

  // Collectives (and DDP's bucket ranges: collective empty, bucket and bytes set). The host event
  // (start_us, dur_us, thread) is the issue on the calling thread. Where the collective ran: on
  // NCCL, gpu_start_us / gpu_dur_us on `stream` of `device` (the communication stream); on Gloo,
  // exec_* on the group's worker thread. -1: not known (still running when the profile stopped).
  CommInfo comm;
  int exec_thread = -1;
  double exec_start_us = -1, exec_dur_us = -1;
};

}  // namespace tritium::profiler
