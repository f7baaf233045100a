// torch.distributed's entry points: init_process_group from torchrun's environment variables
// (set by tools/tritium-run), the default (world) group, sub-groups, and the collectives as free
// functions on it. docs/distributed.md shows a whole data-parallel program.
//
//   dist::init_process_group("gloo");                  // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   Tensor t = ...;                                    // a CPU tensor (gloo) or a CUDA one (nccl)
//   dist::all_reduce(t, dist::ReduceOp::sum);          // waits; async: all_reduce(t, op, group, true)
//   dist::destroy_process_group();
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "dist/store.h"

namespace tritium::dist {

// torchrun's variables, read from the environment.
struct LaunchEnvironment {
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr;
  int master_port = 0;
};
// Reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (required) and LOCAL_RANK, LOCAL_WORLD_SIZE
// (optional: rank and world size). Errors (tritium::Error) name the variable: missing, not an
// integer, out of range (RANK >= WORLD_SIZE, a port outside 1..65535).
LaunchEnvironment read_launch_environment();

struct InitOptions {
  // Of the rendezvous and of every collective (PyTorch's default is 30 minutes; a dead peer
  // usually ends a collective at once, the timeout bounds the rest).
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
};

// Joins the job described by the environment: rank 0 serves the TCP store on MASTER_PORT, every
// rank connects to MASTER_ADDR:MASTER_PORT (within the timeout), then the backend's group is
// made. backend: "gloo" (CPU tensors) or "nccl" (CUDA tensors: device LOCAL_RANK). Errors: an
// unknown backend, init twice, the variables' errors, an unreachable master, NCCL unavailable.
void init_process_group(const std::string& backend, InitOptions options = {});
// The same from explicit values and a store (tests: several ranks as threads of one process).
void init_process_group(const std::string& backend, std::shared_ptr<Store> store, int rank, int world_size,
                        InitOptions options = {});
bool is_initialized();
// Ends the job's groups (the default and every new_group); init_process_group may follow.
void destroy_process_group();

// The default group (an Error before init_process_group).
std::shared_ptr<ProcessGroup> default_group();
int get_rank();
int get_world_size();
// A group of some world ranks (every rank of the job must call it, members or not, with the same
// list, as PyTorch's). Non-members get nullptr. Errors: a rank out of range or listed twice.
std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks, const std::string& backend = "");

// The collectives on `group` (the default group when null; broadcast's src is a world rank, as
// PyTorch's). With async_op the Work is returned
// unwaited; otherwise it is waited and null is returned.
WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::sum, std::shared_ptr<ProcessGroup> group = nullptr,
                   bool async_op = false);
WorkPtr broadcast(Tensor& tensor, int src, std::shared_ptr<ProcessGroup> group = nullptr, bool async_op = false);
WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, std::shared_ptr<ProcessGroup> group = nullptr,
                   bool async_op = false);
WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::sum,
                       std::shared_ptr<ProcessGroup> group = nullptr, bool async_op = false);
WorkPtr barrier(std::shared_ptr<ProcessGroup> group = nullptr, bool async_op = false);

}  // namespace tritium::dist
