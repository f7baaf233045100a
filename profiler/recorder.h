// The recorder behind the hooks (profiler/hooks.h): the events of the profile now recording, and
// the CUDA event pairs waiting to be read when it stops. Internal to profiler/.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/event.h"
#include "profiler/profile.h"

namespace tritium::profiler::detail {

// Microseconds since the profile started.
double now_us();

// Starts recording (a tritium::Error when a profile already records).
void start_recording(const ProfileOptions& options);
// Stops recording, reads the GPU times and hands the events over.
std::vector<Event> stop_recording();

// For the CUDA timing hooks: the id of the kernel scope open on this thread (-1: none), marking
// it as run on cuda:<device>; its stream index; whether this profile times kernels on the GPU.
int64_t open_kernel_id(std::string* device_out, int device);
void set_open_kernel_stream(int64_t id, int stream);
bool cuda_timing_enabled();

// Called by the recorder when a timed kernel event is stored, and by stop_recording: resolve the
// GPU times of `events` (profiler/gpu_timing.cpp). Synchronises on the recorded CUDA events.
void resolve_gpu_times(std::vector<Event>& events);
// Forgets the pending pairs and anchors of the last profile (a new profile starts).
void reset_gpu_timing();

}  // namespace tritium::profiler::detail
