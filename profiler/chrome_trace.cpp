#include "profiler/chrome_trace.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "io/json.h"
#include "io/text_file.h"

namespace tritium::profiler {
namespace {

constexpr int kCpuPid = 0;

// The GPU process of a device: 1 + its index ("cuda:3" -> 4).
int gpu_pid(const std::string& device) {
  auto colon = device.find(':');
  return 1 + (colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1)));
}

std::string common_args(const Event& e) {
  return fmt::format("\"kind\": \"{}\", \"id\": {}, \"parent\": {}", event_kind_name(e.kind), e.id, e.parent);
}

std::string metadata(const char* what, int pid, int tid, const std::string& name) {
  return fmt::format("{{\"ph\": \"M\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}", what,
                     pid, tid, io::json_quote(name));
}

}  // namespace

std::string to_chrome_trace(const std::vector<Event>& events) {
  std::vector<std::string> out;
  std::set<int> threads;
  std::set<std::pair<int, int>> gpu_tracks;  // (pid, stream)
  std::map<int, std::string> gpu_names;
  for (const Event& e : events) {
    const int tid = 2 * e.thread;
    switch (e.kind) {
      case EventKind::op:
      case EventKind::range: {
        std::string args = common_args(e);
        if (!e.input_shapes.empty())
          args += fmt::format(", \"Input Dims\": {}, \"Input type\": {}", io::json_quote(e.input_shapes),
                              io::json_quote(e.input_dtypes));
        out.push_back(fmt::format(
            "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, \"dur\": {:.3f}, "
            "\"args\": {{{}}}}}",
            e.kind == EventKind::op ? "cpu_op" : "user_annotation", io::json_quote(e.name), kCpuPid, tid, e.start_us,
            e.dur_us, args));
        threads.insert(e.thread);
        break;
      }
      case EventKind::kernel: {
        std::string args = common_args(e) + fmt::format(", \"grid\": [{}, {}, {}], \"device\": {}", e.grid[0], e.grid[1],
                                                        e.grid[2], io::json_quote(e.device));
        out.push_back(fmt::format(
            "{{\"ph\": \"X\", \"cat\": \"kernel_launch\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, "
            "\"dur\": {:.3f}, \"args\": {{{}}}}}",
            io::json_quote(e.name), kCpuPid, tid + 1, e.start_us, e.dur_us, args));
        threads.insert(e.thread);
        if (e.gpu_dur_us >= 0) {
          int pid = gpu_pid(e.device);
          gpu_tracks.insert({pid, e.stream});
          gpu_names[pid] = e.device;
          out.push_back(fmt::format(
              "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, \"dur\": {:.3f}, "
              "\"args\": {{{}, \"stream\": {}}}}}",
              io::json_quote(e.name), pid, e.stream, e.gpu_start_us, e.gpu_dur_us, args, e.stream));
        }
        break;
      }
      case EventKind::memory: {
        out.push_back(fmt::format(
            "{{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"memory\", \"name\": \"[memory]\", \"pid\": {}, \"tid\": {}, "
            "\"ts\": {:.3f}, \"args\": {{{}, \"Bytes\": {}, \"Total Allocated\": {}, \"Device\": {}}}}}",
            kCpuPid, tid, e.start_us, common_args(e), e.bytes, e.allocated, io::json_quote(e.device)));
        out.push_back(fmt::format(
            "{{\"ph\": \"C\", \"name\": {}, \"pid\": {}, \"ts\": {:.3f}, \"args\": {{\"bytes\": {}}}}}",
            io::json_quote("allocated " + e.device), kCpuPid, e.start_us, e.allocated));
        threads.insert(e.thread);
        break;
      }
    }
  }
  out.push_back(metadata("process_name", kCpuPid, 0, "CPU"));
  for (int t : threads) {
    out.push_back(metadata("thread_name", kCpuPid, 2 * t, fmt::format("thread {} ops", t)));
    out.push_back(metadata("thread_name", kCpuPid, 2 * t + 1, fmt::format("thread {} kernel launches", t)));
  }
  for (auto& [pid, name] : gpu_names) out.push_back(metadata("process_name", pid, 0, "GPU " + name));
  for (auto& [pid, stream] : gpu_tracks)
    out.push_back(metadata("thread_name", pid, stream, fmt::format("stream {}", stream)));

  std::string text = "{\"traceEvents\": [\n";
  for (size_t i = 0; i < out.size(); ++i) text += (i ? ",\n  " : "  ") + out[i];
  text += "\n], \"displayTimeUnit\": \"ms\"}\n";
  return text;
}

void write_chrome_trace(const std::vector<Event>& events, const std::string& path) {
  io::write_text_file(path, to_chrome_trace(events));
}

}  // namespace tritium::profiler
