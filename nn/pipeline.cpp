// Model parallelism: the differentiable copy between devices and GPipe's schedule (nn/pipeline.h).
// The CUDA paths (peer copies, two devices' streams) are written and compiled without a GPU at
// hand; docs/distributed.md says how they are run on two GPUs.
#include "nn/pipeline.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <utility>

#include "common/error.h"
#include "nn/autograd.h"
#include "nn/tensor_ops.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/tensor.h"

namespace tritium::nn {

namespace {

namespace cuda = runtime::cuda;

constexpr cuda::CUresult kPeerAccessAlreadyEnabled = 704;  // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED

// Lets `device`'s context reach `peer`'s memory directly (NVLink / PCIe), once per ordered pair,
// where the hardware allows it (PyTorch enables it at the first copy between two GPUs too).
void enable_peer_access(int device, int peer) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard lock(mutex);
  if (!tried.insert({device, peer}).second) return;
  int can = 0;
  cuda::check(cuda::driver().cuDeviceCanAccessPeer(&can, cuda::device_handle(device), cuda::device_handle(peer)),
              "cuDeviceCanAccessPeer", fmt::format("cuda:{} -> cuda:{}", device, peer));
  if (!can) return;  // cuMemcpyPeerAsync still works: the driver stages the copy
  cuda::ensure_context(device);
  cuda::CUresult r = cuda::driver().cuCtxEnablePeerAccess(cuda::primary_context(peer), 0);
  if (r != kPeerAccessAlreadyEnabled) cuda::check(r, "cuCtxEnablePeerAccess", fmt::format("cuda:{} -> cuda:{}", device, peer));
}

// A contiguous copy of t on another CUDA device, queued on the destination's current stream
// after the work queued so far on the source's current stream. Its memory belongs to the
// destination's current stream; t's block is record_stream'ed there (it is read on it).
Tensor peer_copy(const Tensor& t, Device to) {
  const Device from = t.device();
  Tensor src = t.contiguous();
  enable_peer_access(to.index, from.index);
  const Stream dst_stream = current_stream(to);
  dst_stream.wait_stream(current_stream(from));
  Tensor out = Tensor::empty(src.shape(), src.dtype(), to);
  cuda::ensure_context(to.index);
  cuda::check(cuda::driver().cuMemcpyPeerAsync(cuda::to_deviceptr(out.raw_data()), cuda::primary_context(to.index),
                                               cuda::to_deviceptr(src.raw_data()), cuda::primary_context(from.index),
                                               static_cast<size_t>(src.nbytes()),
                                               static_cast<cuda::CUstream>(dst_stream.native_handle())),
              "cuMemcpyPeerAsync", fmt::format("to_device: {} -> {}", from.str(), to.str()));
  record_stream(src, dst_stream);
  return out;
}

// torch.chunk's split of dimension 0: ceil(n / chunks) rows a piece, the last one shorter.
std::vector<std::pair<int64_t, int64_t>> chunk_rows(int64_t n, int64_t chunks) {
  const int64_t rows = (n + chunks - 1) / chunks;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t lo = 0; lo < n; lo += rows) out.push_back({lo, std::min(n, lo + rows)});
  return out;
}

}  // namespace

Tensor to_device(const Tensor& t, Device device) {
  if (!t.defined()) fail("to_device: the tensor is undefined");
  if (t.device() == device) return t;
  if (!(t.device().is_cuda() && device.is_cuda())) return t.to(device);  // host <-> device: Tensor::to
  Tensor out;
  {
    NoGradGuard no_grad;
    out = peer_copy(t.detach(), device);
  }
  const Device from = t.device();
  return record(std::move(out), {t}, "ToDeviceBackward",
                [from](const Tensor& g) { return std::vector<Tensor>{to_device(g, from)}; });
}

Pipeline::Pipeline(std::vector<PipelineStage> stages, int64_t chunks) : stages_(std::move(stages)), chunks_(chunks) {
  if (stages_.empty()) fail("Pipeline: no stage given");
  if (chunks < 1) fail("Pipeline: chunks must be at least 1, got {}", chunks);
  for (size_t s = 0; s < stages_.size(); ++s) {
    if (!stages_[s].module) fail("Pipeline: stage {} has a null module", s);
    streams_.push_back(Stream(stages_[s].device));  // one of the device's pool: two stages of one GPU still overlap
  }
}

std::vector<Tensor> Pipeline::forward_micro_batches(const Tensor& input) {
  if (!input.defined()) fail("Pipeline::forward: the input is undefined");
  if (input.dim() == 0 || input.size(0) == 0)
    fail("Pipeline::forward: the input {} has no rows to split into micro-batches (dimension 0)", input.str());
  const size_t n_stages = stages_.size();
  // Each stage's stream starts after the caller's work on its device (the input, the previous
  // step's backward and optimiser step, whose blocks the stage may reuse).
  for (size_t s = 0; s < n_stages; ++s) streams_[s].wait_stream(current_stream(stages_[s].device));
  const Tensor x = to_device(input, stages_[0].device);
  record_stream(x, streams_[0]);  // its micro-batches are read on stage 0's stream
  const auto rows = chunk_rows(x.size(0), chunks_);
  const auto n_micro = static_cast<int64_t>(rows.size());
  // act[s][i]: stage s's output for micro-batch i (on stage s's device and stream).
  std::vector<std::vector<Tensor>> act(n_stages, std::vector<Tensor>(rows.size()));
  // GPipe's clock: at clock t, stage s runs micro-batch t - s. Within a clock the earlier stages
  // are issued first: stage 0's queue is fed ahead (it has no one to wait for), and a later
  // stage's hand-over only waits on the GPU (an event) for the micro-batch before it.
  for (int64_t t = 0; t < n_micro + static_cast<int64_t>(n_stages) - 1; ++t) {
    for (int64_t s = 0; s < static_cast<int64_t>(n_stages); ++s) {
      const int64_t i = t - s;
      if (i < 0 || i >= n_micro) continue;
      const PipelineStage& stage = stages_[static_cast<size_t>(s)];
      StreamGuard on_stage(streams_[static_cast<size_t>(s)]);
      Tensor in;
      if (s == 0) {
        in = x.slice(0, rows[static_cast<size_t>(i)].first, rows[static_cast<size_t>(i)].second);
      } else {
        const Tensor& prev = act[static_cast<size_t>(s - 1)][static_cast<size_t>(i)];
        if (prev.device() == stage.device) {
          // The same device: this stage's stream waits for the previous stage's, which produced it.
          streams_[static_cast<size_t>(s)].wait_stream(streams_[static_cast<size_t>(s - 1)]);
          record_stream(prev, streams_[static_cast<size_t>(s)]);
          in = prev;
        } else {
          StreamGuard from_stage(streams_[static_cast<size_t>(s - 1)]);  // to_device waits for the source's current stream
          in = to_device(prev, stage.device);
        }
      }
      act[static_cast<size_t>(s)][static_cast<size_t>(i)] = (*stage.module)(in);
    }
  }
  // The caller's streams see the stages' work (backward reads the saved activations on them), and
  // the outputs' blocks are kept until the caller's work on them is done.
  for (size_t s = 0; s < n_stages; ++s) current_stream(stages_[s].device).wait_stream(streams_[s]);
  std::vector<Tensor> outs = std::move(act.back());
  const Stream caller = current_stream(stages_.back().device);
  for (const Tensor& o : outs) record_stream(o, caller);
  return outs;
}

Tensor Pipeline::forward(const Tensor& input) {
  std::vector<Tensor> outs = forward_micro_batches(input);
  return outs.size() == 1 ? outs[0] : cat(outs, 0);
}

}  // namespace tritium::nn
