// The recorder: hooks (profiler/hooks.h) append to one list under a mutex; each thread keeps the
// stack of its open scopes so an event knows its parent. A generation number ties every open
// scope to the profile it began in, so a scope that outlives its profile is dropped, not mixed
// into the next one.
#include "profiler/recorder.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

#include "common/error.h"

namespace tritium::profiler::detail {

std::atomic<bool> g_recording{false};

namespace {

using Clock = std::chrono::steady_clock;

struct State {
  std::mutex mutex;
  bool active = false;
  uint64_t generation = 0;
  ProfileOptions options;
  // When the profile started (Clock ticks): atomic, as now_us() reads it without the mutex on any
  // thread while the next profile may be setting it.
  std::atomic<Clock::rep> start{0};
  std::atomic<int64_t> next_id{0};
  std::vector<Event> events;
  std::map<std::string, int64_t> allocated;  // device -> bytes, since the profile started
  // Gloo collectives' executions on their worker threads, merged into their events at stop (a
  // worker may finish before or after the issuing scope has ended).
  struct Execution {
    int64_t id;
    int thread;
    double start_us, dur_us;
  };
  std::vector<Execution> executions;
};
State& state() {
  static State s;
  return s;
}

std::atomic<int> g_next_thread{0};

// This thread's open scopes, innermost last.
struct ThreadScopes {
  int thread = g_next_thread.fetch_add(1);
  std::vector<Event> open;
  std::vector<uint64_t> generation;
};
ThreadScopes& thread_scopes() {
  thread_local ThreadScopes t;
  return t;
}

// The id of the innermost scope of this profile open on this thread; -1 when none.
int64_t current_parent(ThreadScopes& t, uint64_t generation) {
  for (size_t i = t.open.size(); i-- > 0;)
    if (t.generation[i] == generation) return t.open[i].id;
  return -1;
}

OpenScope begin(EventKind kind, std::string_view name) {
  State& s = state();
  ThreadScopes& t = thread_scopes();
  const uint64_t gen = [&] {
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.active ? s.generation : 0;
  }();
  if (gen == 0) return {};
  Event e;
  e.id = s.next_id.fetch_add(1, std::memory_order_relaxed);
  e.parent = current_parent(t, gen);
  e.kind = kind;
  e.name = std::string(name);
  e.thread = t.thread;
  e.start_us = now_us();
  t.open.push_back(std::move(e));
  t.generation.push_back(gen);
  return {t.open.back().id, gen};
}

}  // namespace

namespace {
double to_profile_us(Clock::time_point t) {
  const Clock::duration since(t.time_since_epoch().count() - state().start.load(std::memory_order_relaxed));
  return std::chrono::duration<double, std::micro>(since).count();
}
}  // namespace

double now_us() { return to_profile_us(Clock::now()); }

// Under the mutex: the options are those of the profile start_recording set, possibly on another
// thread (the relaxed flag orders nothing).
bool recording_shapes() {
  if (!recording()) return false;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.active && s.options.record_shapes;
}

OpenScope begin_op(std::string_view name, std::string shapes, std::string dtypes) {
  OpenScope s = begin(EventKind::op, name);
  if (s.id >= 0) {
    Event& e = thread_scopes().open.back();
    e.input_shapes = std::move(shapes);
    e.input_dtypes = std::move(dtypes);
  }
  return s;
}

OpenScope begin_range(std::string_view name) { return begin(EventKind::range, name); }

OpenScope begin_collective(CommInfo info) {
  OpenScope s = begin(EventKind::collective, info.backend + ":" + info.collective);
  if (s.id >= 0) {
    ThreadScopes& t = thread_scopes();
    // The bucket of the DDP launch this collective is issued in (the innermost open one).
    for (size_t i = t.open.size() - 1; i-- > 0;)
      if (t.generation[i] == s.generation && t.open[i].comm.bucket >= 0) {
        info.bucket = t.open[i].comm.bucket;
        break;
      }
    t.open.back().comm = std::move(info);
  }
  return s;
}

OpenScope begin_bucket_range(int bucket, int64_t bytes) {
  OpenScope s = begin(EventKind::range, "ddp:bucket");
  if (s.id >= 0) {
    CommInfo& c = thread_scopes().open.back().comm;
    c.bucket = bucket;
    c.bytes = bytes;
  }
  return s;
}

void record_collective_execution(const OpenScope& issued, Clock::time_point start) {
  if (issued.id < 0) return;
  const double begin_us = to_profile_us(start), end_us = now_us();
  const int thread = thread_scopes().thread;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.active && s.generation == issued.generation)
    s.executions.push_back({issued.id, thread, begin_us, end_us - begin_us});
}

OpenScope begin_kernel(std::string_view name, int64_t gx, int64_t gy, int64_t gz) {
  OpenScope s = begin(EventKind::kernel, name);
  if (s.id >= 0) {
    Event& e = thread_scopes().open.back();
    e.grid[0] = gx, e.grid[1] = gy, e.grid[2] = gz;
  }
  return s;
}

void end_scope(const OpenScope& scope) {
  const double end = now_us();
  ThreadScopes& t = thread_scopes();
  // RAII scopes end innermost first; search anyway, so a mismatch cannot corrupt the stack.
  size_t i = t.open.size();
  while (i-- > 0)
    if (t.open[i].id == scope.id && t.generation[i] == scope.generation) break;
  if (i == static_cast<size_t>(-1)) return;
  Event e = std::move(t.open[i]);
  t.open.erase(t.open.begin() + static_cast<std::ptrdiff_t>(i));
  t.generation.erase(t.generation.begin() + static_cast<std::ptrdiff_t>(i));
  e.dur_us = end - e.start_us;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.active && s.generation == scope.generation) s.events.push_back(std::move(e));
}

// The kernel (or collective) scope open on this thread (the CUDA timing hooks attach to it).
int64_t open_kernel_id(std::string* device_out, int device) {
  ThreadScopes& t = thread_scopes();
  if (t.open.empty() || (t.open.back().kind != EventKind::kernel && t.open.back().kind != EventKind::collective))
    return -1;
  Event& e = t.open.back();
  e.device = "cuda:" + std::to_string(device);
  if (device_out) *device_out = e.device;
  return e.id;
}

void set_open_kernel_stream(int64_t id, int stream) {
  ThreadScopes& t = thread_scopes();
  if (!t.open.empty() && t.open.back().id == id) t.open.back().stream = stream;
}

bool cuda_timing_enabled() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.active && s.options.cuda_timing;
}

void record_memory_slow(int64_t bytes, runtime::Device device) {
  State& s = state();
  ThreadScopes& t = thread_scopes();
  Event e;
  e.kind = EventKind::memory;
  e.name = "[memory]";
  e.thread = t.thread;
  e.device = device.str();
  e.bytes = bytes;
  e.start_us = now_us();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.active || !s.options.profile_memory) return;
  e.id = s.next_id.fetch_add(1, std::memory_order_relaxed);
  e.parent = current_parent(t, s.generation);
  e.allocated = s.allocated[e.device] += bytes;
  s.events.push_back(std::move(e));
}

void start_recording(const ProfileOptions& options) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.active)
      fail("profiler: a Profile is already recording (one profile records at a time; stop() the other first)");
    s.active = true;
    ++s.generation;
    s.options = options;
    s.events.clear();
    s.executions.clear();
    s.allocated.clear();
    s.start.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
  reset_gpu_timing();
  g_recording.store(true, std::memory_order_relaxed);
}

std::vector<Event> stop_recording() {
  State& s = state();
  g_recording.store(false, std::memory_order_relaxed);
  std::vector<Event> events;
  std::vector<State::Execution> executions;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.active = false;
    events = std::move(s.events);
    s.events.clear();
    executions = std::move(s.executions);
    s.executions.clear();
  }
  if (!executions.empty()) {
    std::map<int64_t, Event*> collectives;
    for (Event& e : events)
      if (e.kind == EventKind::collective) collectives[e.id] = &e;
    for (const State::Execution& x : executions)
      if (auto it = collectives.find(x.id); it != collectives.end())
        it->second->exec_thread = x.thread, it->second->exec_start_us = x.start_us, it->second->exec_dur_us = x.dur_us;
  }
  resolve_gpu_times(events);
  return events;
}

}  // namespace tritium::profiler::detail
