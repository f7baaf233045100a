// The Gloo backend (Debian's libgloo-dev): collectives on CPU tensors over TCP. The members
// connect to each other (a full mesh) through addresses exchanged in the store. Collectives run
// on one worker thread per group, in the order they were issued, so that the caller goes on
// (DDP's backward) while one is in flight; Work::wait() joins it. A peer that dies or a
// collective past the timeout ends the collective with an error, never a hang. Creating a group
// ignores SIGPIPE when the program left it at its default (as Python does for PyTorch): a write
// to a dead peer then fails with EPIPE instead of killing the process without a word.
#pragma once
#include <memory>

#include "dist/process_group.h"
#include "dist/store.h"

namespace tritium::dist {

class GlooProcessGroup : public ProcessGroup {
 public:
  // Connects rank (of size) to the others through store (all of them call this with the same
  // store name space). global_ranks: each member's rank in the world (empty: 0..size-1).
  // Sets SIGPIPE to SIG_IGN if it is SIG_DFL (a handler or SIG_IGN of the program is kept).
  static std::shared_ptr<GlooProcessGroup> create(std::shared_ptr<Store> store, int rank, int size,
                                                  std::chrono::milliseconds timeout,
                                                  std::vector<int> global_ranks = {});
  // Whether this build has the Gloo backend (libgloo-dev at configure time).
  static bool available();
  ~GlooProcessGroup() override;
  std::string backend() const override { return "gloo"; }

  WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::sum) override;
  WorkPtr broadcast(Tensor& tensor, int root) override;
  WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input) override;
  WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::sum) override;
  WorkPtr barrier() override;

  struct Impl;

 private:
  GlooProcessGroup(int rank, int size, std::vector<int> global_ranks, std::chrono::milliseconds timeout);
  void check_cpu(const Tensor& t, const char* collective) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tritium::dist
