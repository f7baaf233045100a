// Chrome trace-event JSON of profiler events, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: {"traceEvents": [...], "displayTimeUnit": "ms"}. Ops, ranges and kernel
// launches are complete events (ph "X", ts/dur in microseconds) of process 0 ("CPU"): each host
// thread has a track for its ops and ranges (tid 2t) and one for its kernel launches (tid 2t+1),
// so a launch never hides the op around it. Kernels timed on a GPU are also complete events of
// process 1 + device ("GPU cuda:N"), on the track of their stream (tid = stream index). Memory
// events are instant events (ph "i") with the bytes and the device's allocated total in args, and
// a counter (ph "C") of the allocated bytes per device. Every event's args carry its kind and id;
// ops carry "Input Dims"/"Input type" when shapes were recorded, kernels their grid.
#pragma once
#include <string>
#include <vector>

#include "profiler/event.h"

namespace tritium::profiler {

std::string to_chrome_trace(const std::vector<Event>& events);
// Writes to_chrome_trace(events) to path; an error names the path and the reason.
void write_chrome_trace(const std::vector<Event>& events, const std::string& path);

}  // namespace tritium::profiler
