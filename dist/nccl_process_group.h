// The NCCL backend: collectives on CUDA tensors of one device per process (LOCAL_RANK's), on a
// communication stream of their own so that they overlap the computation (DDP's all-reduce runs
// while backward goes on). Rank 0 makes the NCCL unique id and passes it through the store.
//
// Ordering, as PyTorch's ProcessGroupNCCL: the group has one communication stream (from the
// device's pool, runtime/streams.h). A collective first makes it wait (on the GPU, through an
// event) for the work queued so far on the caller's current stream, and record_stream's the
// caller's tensors on it; Work::wait() makes the caller's current stream (at wait time) wait for
// the collective's event, and the host does not block (barrier() blocks the host). A watchdog
// thread checks NCCL's asynchronous errors and the timeout: a collective that fails or does not
// finish within it aborts the communicator and ends the process with a message naming the
// collective and the rank (a hung peer must not hang the job; tritium-run then stops the rest).
#pragma once
#include <memory>

#include "dist/process_group.h"
#include "dist/store.h"

namespace tritium::dist {

class NcclProcessGroup : public ProcessGroup {
 public:
  // Errors: NCCL or CUDA unavailable (saying why), a device index out of range, a rank that
  // does not arrive within the timeout.
  static std::shared_ptr<NcclProcessGroup> create(std::shared_ptr<Store> store, int rank, int size,
                                                  std::chrono::milliseconds timeout, int cuda_device,
                                                  std::vector<int> global_ranks = {});
  ~NcclProcessGroup() override;
  std::string backend() const override { return "nccl"; }

  WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::sum) override;
  WorkPtr broadcast(Tensor& tensor, int root) override;
  WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input) override;
  WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::sum) override;
  WorkPtr barrier() override;

  struct Impl;

 private:
  NcclProcessGroup(int rank, int size, std::vector<int> global_ranks, std::chrono::milliseconds timeout);
  void check_cuda(const Tensor& t, const char* collective) const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tritium::dist
