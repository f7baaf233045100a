#include "profiler/key_averages.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "common/error.h"

namespace tritium::profiler {
namespace {

// PyTorch's time format: "812.000us", "12.345ms", "1.234s".
std::string time_text(double us) {
  if (us >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
  return fmt::format("{:.3f}us", us);
}

std::string bytes_text(int64_t b) {
  const double a = std::fabs(static_cast<double>(b));
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} Gb", static_cast<double>(b) / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.2f} Mb", static_cast<double>(b) / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.2f} Kb", static_cast<double>(b) / 1024.0);
  return fmt::format("{} b", b);
}

std::string percent(double part, double whole) { return fmt::format("{:.2f}%", whole > 0 ? 100.0 * part / whole : 0.0); }

std::string cut(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

using Metric = std::function<double(const KeyAverage&)>;
const std::vector<std::pair<std::string_view, Metric>>& metrics() {
  static const std::vector<std::pair<std::string_view, Metric>> m = {
      {"cpu_time_total", [](const KeyAverage& r) { return r.cpu_total_us; }},
      {"self_cpu_time_total", [](const KeyAverage& r) { return r.cpu_self_us; }},
      {"cpu_time", [](const KeyAverage& r) { return r.cpu_avg_us(); }},
      {"cuda_time_total", [](const KeyAverage& r) { return r.gpu_total_us; }},
      {"device_time_total", [](const KeyAverage& r) { return r.gpu_total_us; }},
      {"self_cuda_time_total", [](const KeyAverage& r) {
         return r.kind == EventKind::kernel || r.kind == EventKind::collective ? r.gpu_total_us : 0.0;
       }},
      {"comm_time_total", [](const KeyAverage& r) { return r.comm_total_us; }},
      {"count", [](const KeyAverage& r) { return static_cast<double>(r.count); }},
      {"cpu_memory_usage", [](const KeyAverage& r) { return static_cast<double>(r.cpu_memory); }},
      {"self_cpu_memory_usage", [](const KeyAverage& r) { return static_cast<double>(r.self_cpu_memory); }},
      {"cuda_memory_usage", [](const KeyAverage& r) { return static_cast<double>(r.gpu_memory); }},
      {"self_cuda_memory_usage", [](const KeyAverage& r) { return static_cast<double>(r.self_gpu_memory); }},
  };
  return m;
}

}  // namespace

KeyAverages::KeyAverages(const std::vector<Event>& events, bool group_by_input_shape) : by_shape_(group_by_input_shape) {
  std::unordered_map<int64_t, size_t> index;
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].kind != EventKind::memory) index[events[i].id] = i;
  auto parent_of = [&](const Event& e) -> const Event* {
    auto it = index.find(e.parent);
    return it == index.end() ? nullptr : &events[it->second];
  };
  // Per event: time of its direct children, GPU time of the kernels below it, memory.
  std::vector<double> child_us(events.size(), 0), gpu_us(events.size(), 0);
  struct Memory {
    int64_t cpu = 0, self_cpu = 0, gpu = 0, self_gpu = 0;
  };
  std::vector<Memory> mem(events.size());
  for (const Event& e : events) {
    const Event* p = parent_of(e);
    if (e.kind == EventKind::memory) {
      const bool on_cpu = e.device == "cpu";
      has_memory_ = true;
      has_gpu_memory_ = has_gpu_memory_ || !on_cpu;
      if (!p) continue;
      size_t pi = index[p->id];
      (on_cpu ? mem[pi].self_cpu : mem[pi].self_gpu) += e.bytes;
      for (; p; p = parent_of(*p)) (on_cpu ? mem[index[p->id]].cpu : mem[index[p->id]].gpu) += e.bytes;
      continue;
    }
    if (p) child_us[index[p->id]] += e.dur_us;
    if (e.kind == EventKind::collective) has_comm_ = true;
    if ((e.kind == EventKind::kernel || e.kind == EventKind::collective) && e.gpu_dur_us >= 0) {
      has_gpu_time_ = true;
      gpu_us[index[e.id]] += e.gpu_dur_us;
      for (; p; p = parent_of(*p)) gpu_us[index[p->id]] += e.gpu_dur_us;
    }
  }
  std::map<std::tuple<int, std::string, std::string>, size_t> rows;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind == EventKind::memory) continue;
    auto key = std::make_tuple(static_cast<int>(e.kind), e.name, by_shape_ ? e.input_shapes : std::string());
    auto [it, inserted] = rows.emplace(key, rows_.size());
    if (inserted) {
      KeyAverage r;
      r.name = e.name;
      r.kind = e.kind;
      if (by_shape_) r.input_shapes = e.input_shapes;
      rows_.push_back(std::move(r));
    }
    KeyAverage& r = rows_[it->second];
    ++r.count;
    r.cpu_total_us += e.dur_us;
    r.cpu_self_us += std::max(0.0, e.dur_us - child_us[i]);
    r.gpu_total_us += gpu_us[i];
    if (e.kind == EventKind::collective)  // where it ran: the GPU (NCCL) or Gloo's worker thread
      r.comm_total_us += e.gpu_dur_us >= 0 ? e.gpu_dur_us : std::max(0.0, e.exec_dur_us);
    r.cpu_memory += mem[i].cpu, r.self_cpu_memory += mem[i].self_cpu;
    r.gpu_memory += mem[i].gpu, r.self_gpu_memory += mem[i].self_gpu;
  }
}

const KeyAverage* KeyAverages::find(std::string_view name, EventKind kind) const {
  for (const KeyAverage& r : rows_)
    if (r.name == name && r.kind == kind) return &r;
  return nullptr;
}

std::vector<KeyAverage> KeyAverages::sorted(std::string_view sort_by) const {
  const Metric* metric = nullptr;
  std::string known;
  for (const auto& [name, m] : metrics()) {
    if (name == sort_by) metric = &m;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  if (!metric) fail("profiler key_averages: unknown sort key '{}' (one of {})", sort_by, known);
  std::vector<KeyAverage> out = rows_;
  std::stable_sort(out.begin(), out.end(),
                   [&](const KeyAverage& a, const KeyAverage& b) { return (*metric)(a) > (*metric)(b); });
  return out;
}

std::string KeyAverages::table(std::string_view sort_by, int row_limit) const {
  std::vector<KeyAverage> rows = sorted(sort_by);
  if (row_limit >= 0 && rows.size() > static_cast<size_t>(row_limit)) rows.resize(static_cast<size_t>(row_limit));
  double self_sum = 0, gpu_sum = 0;
  for (const KeyAverage& r : rows_) {
    self_sum += r.cpu_self_us;
    if (r.kind == EventKind::kernel || r.kind == EventKind::collective) gpu_sum += r.gpu_total_us;
  }
  size_t name_w = 4;
  for (const KeyAverage& r : rows) name_w = std::max(name_w, std::min<size_t>(r.name.size(), 48));
  struct Column {
    std::string title;
    size_t width;
    std::function<std::string(const KeyAverage&)> cell;
  };
  std::vector<Column> cols = {
      {"Name", name_w, [&](const KeyAverage& r) { return cut(r.name, name_w); }},
      {"Kind", 10, [](const KeyAverage& r) { return std::string(event_kind_name(r.kind)); }},
      {"Self CPU %", 10, [&](const KeyAverage& r) { return percent(r.cpu_self_us, self_sum); }},
      {"Self CPU", 12, [](const KeyAverage& r) { return time_text(r.cpu_self_us); }},
      {"CPU total %", 11, [&](const KeyAverage& r) { return percent(r.cpu_total_us, self_sum); }},
      {"CPU total", 12, [](const KeyAverage& r) { return time_text(r.cpu_total_us); }},
      {"CPU time avg", 12, [](const KeyAverage& r) { return time_text(r.cpu_avg_us()); }},
  };
  if (has_gpu_time_) {
    cols.push_back({"GPU total", 12, [](const KeyAverage& r) { return time_text(r.gpu_total_us); }});
    cols.push_back({"GPU time avg", 12, [](const KeyAverage& r) { return time_text(r.gpu_avg_us()); }});
  }
  if (has_comm_) {
    cols.push_back({"Comm total", 12, [](const KeyAverage& r) { return r.kind == EventKind::collective ? time_text(r.comm_total_us) : std::string("-"); }});
  }
  cols.push_back({"# of Calls", 10, [](const KeyAverage& r) { return fmt::format("{}", r.count); }});
  if (has_memory_) {
    cols.push_back({"CPU Mem", 11, [](const KeyAverage& r) { return bytes_text(r.cpu_memory); }});
    cols.push_back({"Self CPU Mem", 12, [](const KeyAverage& r) { return bytes_text(r.self_cpu_memory); }});
  }
  if (has_gpu_memory_) {
    cols.push_back({"GPU Mem", 11, [](const KeyAverage& r) { return bytes_text(r.gpu_memory); }});
    cols.push_back({"Self GPU Mem", 12, [](const KeyAverage& r) { return bytes_text(r.self_gpu_memory); }});
  }
  if (by_shape_) cols.push_back({"Input Shapes", 40, [](const KeyAverage& r) { return r.input_shapes; }});
  std::string rule, header;
  for (size_t c = 0; c < cols.size(); ++c) {
    rule += std::string(cols[c].width, '-') + "  ";
    header += c == 0 || c == 1 ? fmt::format("{:<{}}  ", cols[c].title, cols[c].width) : fmt::format("{:>{}}  ", cols[c].title, cols[c].width);
  }
  auto trim = [](std::string line) { return line.erase(line.find_last_not_of(' ') + 1) + "\n"; };
  std::string out = trim(rule) + trim(header) + trim(rule);
  for (const KeyAverage& r : rows) {
    std::string line;
    for (size_t c = 0; c < cols.size(); ++c) {
      std::string v = cols[c].cell(r);
      line += c == 0 || c == 1 ? fmt::format("{:<{}}  ", v, cols[c].width) : fmt::format("{:>{}}  ", v, cols[c].width);
    }
    out += trim(line);
  }
  out += trim(rule);
  out += fmt::format("Self CPU time total: {}\n", time_text(self_sum));
  if (has_gpu_time_) out += fmt::format("Self GPU time total: {}\n", time_text(gpu_sum));
  return out;
}

}  // namespace tritium::profiler
