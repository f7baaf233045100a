// A process group (PyTorch's c10d ProcessGroup): the ranks of a job, or a sub-group of them, and
// the collectives they run together. Every collective is asynchronous and returns a Work handle;
// the group orders collectives as they are issued, and every member must issue the same ones in
// the same order (as in PyTorch). Two backends: Gloo for CPU tensors (dist/gloo_process_group.h),
// NCCL for CUDA tensors (dist/nccl_process_group.h).
//
// Tensors must be contiguous and of a dtype the backend reduces (Gloo: f32, f64, i32, i64; NCCL:
// those and f16, bf16); a collective's tensors keep their shape and are written in place.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::dist {

using runtime::Tensor;

// avg: the sum divided by the group's size (NCCL's ncclAvg; Gloo sums and then divides).
enum class ReduceOp { sum, avg, max, min };
const char* to_string(ReduceOp op);

// The completion of one collective (PyTorch's Work). wait() ends the collective for the caller:
// on Gloo it blocks until the data is there; on NCCL it orders the caller's current stream after
// the collective (the host does not block), as PyTorch's. A failed collective (a peer died, the
// timeout passed) makes wait() throw a tritium::Error naming the collective, the rank and why.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Each member's rank in the default (world) group, by rank in this group.
  const std::vector<int>& global_ranks() const { return global_ranks_; }
  virtual std::string backend() const = 0;  // "gloo" or "nccl"

  // tensor = op over the members' tensors (same shape and dtype everywhere).
  virtual WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::sum) = 0;
  // Every member's tensor = root's (root: a rank of this group).
  virtual WorkPtr broadcast(Tensor& tensor, int root) = 0;
  // outputs[r] = rank r's input, for every r (outputs: size() tensors shaped like input).
  virtual WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input) = 0;
  // output = op over the members' inputs[rank()] (inputs: size() tensors shaped like output).
  virtual WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::sum) = 0;
  virtual WorkPtr barrier() = 0;
  std::chrono::milliseconds timeout() const { return timeout_; }

 protected:
  ProcessGroup(int rank, int size, std::vector<int> global_ranks, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), global_ranks_(std::move(global_ranks)), timeout_(timeout) {}
  // The argument checks shared by the backends (a tritium::Error naming the collective).
  void check_tensor(const Tensor& t, const char* collective) const;
  void check_list(const std::vector<Tensor>& list, const Tensor& like, const char* collective,
                  const char* what) const;
  void check_root(int root, const char* collective) const;

 private:
  int rank_, size_;
  std::vector<int> global_ranks_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tritium::dist
