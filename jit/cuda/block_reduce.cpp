// The element-loop generator's reduction of a whole block to one value (OUT == 1 in
// Codegen::emit_reduce): each thread combines the elements it owns (vector loads, registers),
// then warp shuffles, then - with several warps - one pass over the warps' partials in shared
// memory. A one-warp CTA stops after the shuffles, as Triton's lowering does: the butterfly leaves
// the result in every lane, so the partials' store, barrier and reload (and the barrier a loop
// around it then needs before the partials are rewritten) would only add latency; grpo_loss's
// forward (num_warps=1) had three barriers a vocabulary chunk for its two reductions.
#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

// One accumulator per reduced operand (value-initialised) and a flag saying whether any element
// has been combined yet: both block-reduce paths start this way.
void Codegen::declare_accumulators(const std::vector<std::string>& types, std::vector<std::string>& acc,
                                   std::string& have) {
  for (const std::string& t : types) {
    acc.push_back(fresh("acc"));
    line(fmt::format("{} {}{{}};", t, acc.back()));
  }
  have = fresh("have");
  line(fmt::format("bool {} = false;", have));
}

void Codegen::emit_block_reduce(const ir::Op* op, const std::vector<std::string>& types,
                                const std::vector<std::string>& outs) {
  const Shape& s = op->operand(0)->type.shape;
  const size_t n = op->operands.size();
  const ir::Block* region = op->regions[0];
  const bool scalar_out = op->result()->type.is_scalar();
  auto decl_acc = [&](std::vector<std::string>& acc, std::string& have) { declare_accumulators(types, acc, have); };
  std::vector<const ir::Value*> roots(op->operands.begin(), op->operands.end());
  sync_if_reading(roots);
  if (scalar_out && replicated(s)) {
    // Every aligned group of n lanes holds the whole block (codegen_impl.h, replicated): a
    // butterfly within the group leaves the result in every thread, no shared memory, no barrier
    // (Liger's attn_res: 16 sums over [8] blocks a program, each went through shared partials).
    std::vector<std::string> acc;
    std::string have;
    decl_acc(acc, have);
    open("");
    const bool saved = replicate_ok_;
    replicate_ok_ = true;
    thread_loop(s, 1, nullptr, [&](const Index& idx) {
      std::vector<std::string> xs;
      for (ir::Value* x : op->operands) xs.push_back(eval(x, idx));
      accumulate(region, have, acc, xs);
    }, nullptr);
    replicate_ok_ = saved;
    for (int64_t off = numel(s) / 2; off > 0; off /= 2) {
      std::vector<std::string> other;
      for (size_t i = 0; i < n; ++i) other.push_back(tmp(types[i], fmt::format("tt_shfl_xor({}, {})", acc[i], off)));
      std::vector<std::string> r = combine(region, acc, other);
      for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", acc[i], r[i]));
    }
    close();
    for (size_t i = 0; i < n; ++i) scalars_[op->results[i]] = acc[i];
    return;
  }
  // One warp, scalar result: the accumulators live on past the block (declared outside it).
  const bool one_warp = nwarps_ == 1 && scalar_out;
  std::vector<std::string> acc;
  std::string have;
  if (one_warp) decl_acc(acc, have);
  open("");
  if (!one_warp) decl_acc(acc, have);
  int V = choose_width(s, roots, nullptr);
  thread_loop(
      s, V, [&](const Index& base) { emit_vector_loads(roots, base, V); },
      [&](const Index& idx) {
        std::vector<std::string> xs;
        for (ir::Value* x : op->operands) xs.push_back(eval(x, idx));
        accumulate(region, have, acc, xs);
      },
      nullptr);
  vec_loads_.clear();
  // Every thread owns an element when the mapping's steps are all full.
  bool all_have = numel(s) % (int64_t(nt_) * V) == 0;
  warp_reduce(region, have, acc, types, all_have);
  if (one_warp) {
    close();
    for (size_t i = 0; i < n; ++i) scalars_[op->results[i]] = acc[i];
    return;
  }
  ++shared_writes_;  // partials or the output buffer
  std::vector<std::string> part;
  for (size_t i = 0; i < n; ++i) part.push_back(alloc_shared(types[i], nwarps_, 8));
  std::string part_have = all_have ? "" : alloc_shared("bool", nwarps_, 1);
  open("if ((tid & 31) == 0)");
  for (size_t i = 0; i < n; ++i) line(fmt::format("{}[tid >> 5] = {};", part[i], acc[i]));
  if (!all_have) line(fmt::format("{}[tid >> 5] = {};", part_have, have));
  close();
  sync();
  close();
  std::vector<std::string> res;
  std::string rh;
  decl_acc(res, rh);
  std::string w = fresh("w");
  std::vector<std::string> xs;
  for (size_t i = 0; i < n; ++i) xs.push_back(fmt::format("{}[{}]", part[i], w));
  if (all_have) {
    for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {}[0];", res[i], part[i]));
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 1; {0} < {1}; ++{0})", w, nwarps_));
    std::vector<std::string> r = combine(region, res, xs);
    for (size_t i = 0; i < n; ++i) line(fmt::format("{} = {};", res[i], r[i]));
    close();
  } else {
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", w, nwarps_));
    open(fmt::format("if ({}[{}])", part_have, w));
    accumulate(region, rh, res, xs);
    close();
    close();
  }
  if (scalar_out) {
    // No barrier: the partials are this op's own, and a loop around it ends in a barrier.
    for (size_t i = 0; i < n; ++i) scalars_[op->results[i]] = res[i];
    return;
  }
  open("if (tid == 0)");
  for (size_t i = 0; i < n; ++i) line(fmt::format("{}[0] = {};", outs[i], res[i]));
  close();
  sync();
}

}  // namespace tritium::jit::cuda::detail
