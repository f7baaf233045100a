// The element-loop generator's histogram, gather and split (Triton's tt.histogram, tt.gather,
// tt.split); join is evaluated inline (Codegen::eval_op). Each result is a buffer: in shared memory
// while the budget lasts, else in the program's global scratch.
#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

// The counts live in a buffer of the CTA (shared memory), which every thread updates with atomicAdd:
// Triton's lowering counts in shared memory too; no global atomic per element.
void Codegen::emit_histogram(const ir::Op* op) {
  ++shared_writes_;
  const ir::Value* r = op->result();
  const ir::Value* x = op->operand(0);
  const ir::Value* mask = op->operands.size() > 1 ? op->operand(1) : nullptr;
  int64_t bins = r->type.shape[0];
  std::string counts = alloc_buffer(r->type);
  sync();
  std::string e = fresh("e");
  line(fmt::format("for (int {0} = tid; {0} < {1}; {0} += {2}) {3}[{0}] = 0;", e, bins, nt_, counts));
  sync();
  std::vector<const ir::Value*> reads{x};
  if (mask) reads.push_back(mask);
  sync_if_reading(reads);
  thread_loop(x->type.shape, 1, nullptr, [&](const Index& idx) {
    // Signed values widen with their sign, unsigned ones without: negatives wrap past num_bins.
    std::string v = tmp("long long", fmt::format("(long long)({})", eval(x, idx)));
    std::string in_range = fmt::format("(unsigned long long){} < {}ull", v, bins);
    std::string cond = mask ? fmt::format("{} && ({})", in_range, eval(mask, idx)) : in_range;
    line(fmt::format("if ({}) atomicAdd(reinterpret_cast<int*>(&{}[(int){}]), 1);", cond, counts, v));
  }, nullptr);
  sync();
  buffers_[r] = counts;
}

// Reads the source from its buffer at the index's positions; an index outside [0, n) wraps
// modulo n (a power of two), so a bad index never reads outside the buffer (as on the CPU).
void Codegen::emit_gather(const ir::Op* op) {
  ++shared_writes_;
  const ir::Value* src = op->operand(0);
  const ir::Value* index = op->operand(1);
  const ir::Value* r = op->result();
  std::string from;
  if (auto it = buffers_.find(src); it != buffers_.end()) {
    from = it->second;
  } else {
    from = alloc_buffer(src->type);
    materialize_into(src, from);
  }
  size_t axis = static_cast<size_t>(op->attrs.axis);
  int64_t n = src->type.shape[axis];
  std::string out = alloc_buffer(r->type);
  sync();
  sync_if_reading({index});
  thread_loop(r->type.shape, 1, nullptr, [&](const Index& idx) {
    Index in(idx);
    in[axis] = tmp("int", fmt::format("(int)({}) & {}", eval(index, idx), n - 1));
    line(fmt::format("{}[{}] = {}[{}];", out, flatten(idx, r->type.shape), from, flatten(in, src->type.shape)));
  }, nullptr);
  sync();
  buffers_[r] = out;
}

void Codegen::emit_split(const ir::Op* op) {
  const ir::Value* x = op->operand(0);
  for (size_t i = 0; i < 2; ++i) {
    const ir::Value* r = op->results[i];
    if (r->type.is_scalar()) {
      scalars_[r] = tmp(ctype(r->type), eval(x, {std::to_string(i)}));
      continue;
    }
    ++shared_writes_;
    std::string buf = alloc_buffer(r->type);
    sync();
    sync_if_reading({x});
    thread_loop(r->type.shape, 1, nullptr, [&](const Index& idx) {
      Index in(idx);
      in.push_back(std::to_string(i));
      line(fmt::format("{}[{}] = {};", buf, flatten(idx, r->type.shape), eval(x, in)));
    }, nullptr);
    sync();
    buffers_[r] = buf;
  }
}

}  // namespace tritium::jit::cuda::detail
