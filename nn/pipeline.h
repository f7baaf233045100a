// Model parallelism (issue 32 item 4): a model split over devices, and GPipe's pipeline of
// micro-batches over such a split (PyTorch's "model parallel" tutorial and torch.distributed.pipelining's
// ScheduleGPipe, in one process).
//
//   auto first = std::make_shared<nn::Sequential>(...), second = std::make_shared<nn::Sequential>(...);
//   first->to(Device::cuda(0)), second->to(Device::cuda(1));
//   // split by hand: the activation crosses devices through a differentiable peer copy
//   Tensor y = (*second)(nn::to_device((*first)(x), Device::cuda(1)));
//   // or pipelined: 4 micro-batches, stage 0 runs micro-batch i + 1 while stage 1 runs i
//   nn::Pipeline pipe({{first, Device::cuda(0)}, {second, Device::cuda(1)}}, /*chunks=*/4);
//   Tensor out = pipe.forward(x);                       // on cuda:1, = (*second)((*first)(x))
//   cross_entropy(out, target).backward();              // the unsplit model's gradients
//
// Streams: each stage runs on a stream of its own (from its device's pool) that first waits for
// the caller's current stream on that device; each hand-over makes the next stage's stream wait
// for the previous one's (an event) and copies on it; at the end the caller's current streams wait
// for the stages. The forward work is issued in GPipe's clock order (at clock t, stage s runs
// micro-batch t - s, earlier stages first), so on two GPUs, or on two streams of one, stage 0's
// forward of micro-batch i + 1 runs while stage 1's of micro-batch i does. Backward runs in the
// autograd engine's order on the caller's current streams (the gradients of the hand-overs are
// peer copies back), each micro-batch's gradients accumulating into the parameters' .grad. On
// the CPU every stream is the calling thread: the same values, no overlap.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "nn/module.h"
#include "runtime/streams.h"

namespace tritium::nn {

// t on `device`, differentiably (its gradient comes back to t's device). CUDA to another CUDA
// device: a peer copy (cuMemcpyPeerAsync, peer access enabled once per pair where the devices
// allow it, otherwise the driver stages it) queued on the destination's current stream after it
// waits for the source's current stream: the host does not wait. Otherwise Tensor::to. t itself
// when already there.
Tensor to_device(const Tensor& t, Device device);

struct PipelineStage {
  std::shared_ptr<Module> module;  // its parameters on `device`
  Device device;
};

class Pipeline {
 public:
  // chunks: micro-batches per forward (dimension 0 split as torch.chunk: ceil(n / chunks) rows
  // each, fewer micro-batches when n is smaller). Errors: no stage, a null module, chunks < 1.
  Pipeline(std::vector<PipelineStage> stages, int64_t chunks);

  // The stages applied in turn to input (any device: moved to stage 0's), micro-batch by
  // micro-batch; returns their outputs concatenated along dimension 0, on the last stage's device.
  // Errors: an input of rank 0 or with no rows.
  Tensor forward(const Tensor& input);
  // The same schedule, the last stage's outputs per micro-batch, unconcatenated (for a loss per
  // micro-batch).
  std::vector<Tensor> forward_micro_batches(const Tensor& input);

  int64_t chunks() const { return chunks_; }
  const std::vector<PipelineStage>& stages() const { return stages_; }

 private:
  std::vector<PipelineStage> stages_;
  std::vector<Stream> streams_;
  int64_t chunks_;
};

}  // namespace tritium::nn
