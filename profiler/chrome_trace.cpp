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

// PyTorch's record_param_comms arguments, and DDP's bucket index.
std::string comm_args(const Event& e) {
  const CommInfo& c = e.comm;
  std::string a = fmt::format(
      ", \"Collective name\": {}, \"Backend\": {}, \"dtype\": {}, \"In msg nelems\": {}, \"Bytes\": {}, "
      "\"Group size\": {}",
      io::json_quote(c.collective), io::json_quote(c.backend), io::json_quote(c.dtype), c.elements, c.bytes,
      c.group_size);
  if (c.bucket >= 0) a += fmt::format(", \"bucket\": {}", c.bucket);
  return a;
}

// A flow arrow from the issue (host) to where the collective ran (Perfetto draws it).
void flow(std::vector<std::string>& out, const Event& e, int pid, int tid, double ts, bool start) {
  out.push_back(fmt::format(
      "{{\"ph\": \"{}\", \"cat\": \"comm_flow\", \"name\": \"issue\", \"id\": {}, \"pid\": {}, \"tid\": {}, "
      "\"ts\": {:.3f}{}}}",
      start ? "s" : "f", e.id, pid, tid, ts, start ? "" : ", \"bp\": \"e\""));
}

std::string metadata(const char* what, int pid, int tid, const std::string& name) {
  return fmt::format("{{\"ph\": \"M\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}", what,
                     pid, tid, io::json_quote(name));
}

}  // namespace

std::string to_chrome_trace(const std::vector<Event>& events) {
  std::vector<std::string> out;
  std::set<int> threads;
  std::set<int> comm_threads;  // threads that ran Gloo collectives (their worker threads)
  std::set<std::pair<int, int>> comm_streams;  // (pid, stream) of NCCL's communication streams
  std::set<std::pair<int, int>> gpu_tracks;  // (pid, stream)
  std::map<int, std::string> gpu_names;
  for (const Event& e : events) {
    const int tid = 2 * e.thread;
    switch (e.kind) {
      case EventKind::op:
      case EventKind::range: {
        std::string args = common_args(e);
        if (e.comm.bucket >= 0) args += fmt::format(", \"bucket\": {}, \"Bytes\": {}", e.comm.bucket, e.comm.bytes);
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
      case EventKind::collective: {
        // The issue on the calling thread, then where it ran: the communication stream's track
        // (NCCL) or the Gloo worker thread's own track.
        const std::string args = common_args(e) + comm_args(e);
        out.push_back(fmt::format(
            "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, "
            "\"dur\": {:.3f}, \"args\": {{{}}}}}",
            io::json_quote(e.name), kCpuPid, tid, e.start_us, e.dur_us, args));
        threads.insert(e.thread);
        int pid = -1, exec_tid = 0;
        double ts = 0, dur = 0;
        if (e.gpu_dur_us >= 0) {
          pid = gpu_pid(e.device), exec_tid = e.stream, ts = e.gpu_start_us, dur = e.gpu_dur_us;
          gpu_tracks.insert({pid, e.stream});
          comm_streams.insert({pid, e.stream});
          gpu_names[pid] = e.device;
        } else if (e.exec_dur_us >= 0) {
          pid = kCpuPid, exec_tid = 2 * e.exec_thread, ts = e.exec_start_us, dur = e.exec_dur_us;
          comm_threads.insert(e.exec_thread);
        }
        if (pid >= 0) {
          out.push_back(fmt::format(
              "{{\"ph\": \"X\", \"cat\": \"collective\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, "
              "\"dur\": {:.3f}, \"args\": {{{}{}}}}}",
              io::json_quote(e.name), pid, exec_tid, ts, dur, args,
              e.gpu_dur_us >= 0 ? fmt::format(", \"stream\": {}", e.stream) : std::string()));
          flow(out, e, kCpuPid, tid, e.start_us, true);
          flow(out, e, pid, exec_tid, ts, false);
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
  for (int t : comm_threads)
    if (!threads.count(t)) out.push_back(metadata("thread_name", kCpuPid, 2 * t, fmt::format("thread {} collectives (gloo)", t)));
  for (auto& [pid, name] : gpu_names) out.push_back(metadata("process_name", pid, 0, "GPU " + name));
  for (auto& [pid, stream] : gpu_tracks)
    out.push_back(metadata("thread_name", pid, stream,
                           fmt::format("stream {}{}", stream, comm_streams.count({pid, stream}) ? " (nccl)" : "")));

  std::string text = "{\"traceEvents\": [\n";
  for (size_t i = 0; i < out.size(); ++i) text += (i ? ",\n  " : "  ") + out[i];
  text += "\n], \"displayTimeUnit\": \"ms\"}\n";
  return text;
}

void write_chrome_trace(const std::vector<Event>& events, const std::string& path) {
  io::write_text_file(path, to_chrome_trace(events));
}

}  // namespace tritium::profiler
