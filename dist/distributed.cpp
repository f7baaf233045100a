// The process-wide state of torch.distributed: the store, the default group, the sub-group count.
#include "dist/distributed.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>

#include "common/error.h"
#include "dist/gloo_process_group.h"
#include "dist/nccl_process_group.h"
#include "dist/tcp_store.h"

namespace tritium::dist {

namespace {

struct State {
  std::mutex mutex;
  std::shared_ptr<Store> store;
  std::shared_ptr<ProcessGroup> world;
  std::string backend;
  std::chrono::milliseconds timeout{};
  int groups_made = 0;  // new_group calls so far (the same on every rank): each group's store name space
  int cuda_device = 0;
};
State& state() {
  static State s;
  return s;
}

long long parse_variable(const char* name, bool required, long long fallback, long long lo, long long hi,
                         const char* range) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    if (!required) return fallback;
    fail("dist::init_process_group: the environment variable {} is not set (start the program with tritium-run, "
         "or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun does)",
         name);
  }
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (errno || end == v || *end) fail("dist::init_process_group: {}='{}' is not an integer", name, v);
  if (x < lo || x > hi) fail("dist::init_process_group: {}={} is out of range ({})", name, x, range);
  return x;
}

std::shared_ptr<ProcessGroup> make_group(const std::string& backend, std::shared_ptr<Store> store, int rank, int size,
                                         std::chrono::milliseconds timeout, std::vector<int> global_ranks,
                                         int cuda_device) {
  if (backend == "gloo") return GlooProcessGroup::create(std::move(store), rank, size, timeout, std::move(global_ranks));
  return NcclProcessGroup::create(std::move(store), rank, size, timeout, cuda_device, std::move(global_ranks));
}

void check_backend(const std::string& backend) {
  if (backend != "gloo" && backend != "nccl")
    fail("dist::init_process_group: unknown backend '{}' (expected gloo or nccl)", backend);
}

std::shared_ptr<ProcessGroup> group_or_default(std::shared_ptr<ProcessGroup> group) {
  return group ? std::move(group) : default_group();
}

WorkPtr finish(WorkPtr work, bool async_op) {
  if (async_op) return work;
  work->wait();
  return nullptr;
}

}  // namespace

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment e;
  e.world_size = static_cast<int>(parse_variable("WORLD_SIZE", true, 1, 1, 1 << 20, "1 or more"));
  e.rank = static_cast<int>(
      parse_variable("RANK", true, 0, 0, 1 << 20, "0 to WORLD_SIZE - 1"));
  if (e.rank >= e.world_size)
    fail("dist::init_process_group: RANK={} is out of range: WORLD_SIZE={} (ranks are 0 to {})", e.rank, e.world_size,
         e.world_size - 1);
  e.local_world_size =
      static_cast<int>(parse_variable("LOCAL_WORLD_SIZE", false, e.world_size, 1, e.world_size, "1 to WORLD_SIZE"));
  e.local_rank = static_cast<int>(
      parse_variable("LOCAL_RANK", false, e.rank % e.local_world_size, 0, e.local_world_size - 1,
                     "0 to LOCAL_WORLD_SIZE - 1"));
  const char* addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr)
    fail("dist::init_process_group: the environment variable MASTER_ADDR is not set (start the program with "
         "tritium-run, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun does)");
  e.master_addr = addr;
  e.master_port = static_cast<int>(parse_variable("MASTER_PORT", true, 0, 1, 65535, "1 to 65535"));
  return e;
}

void init_process_group(const std::string& backend, InitOptions options) {
  check_backend(backend);
  if (is_initialized()) fail("dist::init_process_group: already initialised (call destroy_process_group first)");
  LaunchEnvironment env = read_launch_environment();
  auto store = std::make_shared<TCPStore>(env.master_addr, env.master_port, env.rank == 0, options.timeout);
  state().cuda_device = env.local_rank;
  init_process_group(backend, store, env.rank, env.world_size, options);
}

void init_process_group(const std::string& backend, std::shared_ptr<Store> store, int rank, int world_size,
                        InitOptions options) {
  check_backend(backend);
  if (world_size < 1 || rank < 0 || rank >= world_size)
    fail("dist::init_process_group: rank {} is out of range for world size {}", rank, world_size);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.world) fail("dist::init_process_group: already initialised (call destroy_process_group first)");
  // Every rank checks in, so that a rank that never comes is an error saying how many did.
  store->add("init/arrived", 1);
  std::vector<int> ranks(world_size);
  for (int r = 0; r < world_size; ++r) ranks[r] = r;
  try {
    s.world = make_group(backend, std::make_shared<PrefixStore>("default_pg", store), rank, world_size,
                         options.timeout, ranks, s.cuda_device);
  } catch (const Error& e) {
    int64_t arrived = -1;
    try {
      arrived = store->add("init/arrived", 0);
    } catch (const Error&) {
    }
    if (arrived < 0) throw;
    fail("{} ({} of {} ranks had arrived at the rendezvous)", e.what(), arrived, world_size);
  }
  s.store = std::move(store);
  s.backend = backend;
  s.timeout = options.timeout;
  s.groups_made = 0;
}

bool is_initialized() {
  std::lock_guard lock(state().mutex);
  return state().world != nullptr;
}

void destroy_process_group() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.world.reset();
  s.store.reset();
  s.groups_made = 0;
}

std::shared_ptr<ProcessGroup> default_group() {
  std::lock_guard lock(state().mutex);
  if (!state().world) fail("dist: the default process group is not initialised (call dist::init_process_group)");
  return state().world;
}

int get_rank() { return default_group()->rank(); }
int get_world_size() { return default_group()->size(); }

std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks, const std::string& backend) {
  auto world = default_group();
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::string b = backend.empty() ? s.backend : backend;
  check_backend(b);
  std::set<int> seen;
  for (int r : ranks) {
    if (r < 0 || r >= world->size()) fail("dist::new_group: rank {} is not in the world (0 to {})", r, world->size() - 1);
    if (!seen.insert(r).second) fail("dist::new_group: rank {} is listed twice", r);
  }
  if (ranks.empty()) fail("dist::new_group: the list of ranks is empty");
  int id = ++s.groups_made;
  auto me = std::find(ranks.begin(), ranks.end(), world->rank());
  if (me == ranks.end()) return nullptr;
  return make_group(b, std::make_shared<PrefixStore>("group" + std::to_string(id), s.store),
                    static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()), s.timeout, ranks,
                    s.cuda_device);
}

WorkPtr all_reduce(Tensor& tensor, ReduceOp op, std::shared_ptr<ProcessGroup> group, bool async_op) {
  return finish(group_or_default(std::move(group))->all_reduce(tensor, op), async_op);
}
WorkPtr broadcast(Tensor& tensor, int src, std::shared_ptr<ProcessGroup> group, bool async_op) {
  auto g = group_or_default(std::move(group));
  // src is a world rank (PyTorch's rule); the group's own collective takes its rank in the group.
  const auto& members = g->global_ranks();
  auto it = std::find(members.begin(), members.end(), src);
  if (it == members.end()) fail("dist::broadcast: src {} is not a member of the group", src);
  return finish(g->broadcast(tensor, static_cast<int>(it - members.begin())), async_op);
}
WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, std::shared_ptr<ProcessGroup> group,
                   bool async_op) {
  return finish(group_or_default(std::move(group))->all_gather(outputs, input), async_op);
}
WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                       std::shared_ptr<ProcessGroup> group, bool async_op) {
  return finish(group_or_default(std::move(group))->reduce_scatter(output, inputs, op), async_op);
}
WorkPtr barrier(std::shared_ptr<ProcessGroup> group, bool async_op) {
  return finish(group_or_default(std::move(group))->barrier(), async_op);
}

}  // namespace tritium::dist
