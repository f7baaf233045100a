// The element-loop generator's scans (tl::cumsum, tl::cumprod, tl::associative_scan): the parallel
// scan of scan.h. Each result is a buffer (shared memory while the budget lasts, else the program's
// global scratch). Where shared memory allows, the operands are first copied (coalesced) into a
// padded shared copy, one spare slot after every 32 elements, so that the threads of a warp
// walking their chunks (stride = chunk) hit distinct banks; the operands' loads there are vector
// loads (V consecutive elements a thread); the scan runs in place there, and the copy out to the
// result buffers folds in each chunk's prefix (scan.h's last step: one pass over the row fewer).
// Else it runs in place in the result buffers.
#include "jit/cuda/codegen_impl.h"
#include "jit/cuda/scan.h"

namespace tritium::jit::cuda::detail {

void Codegen::emit_scan(const ir::Op* op) {
  ++shared_writes_;
  const Shape& s = op->operand(0)->type.shape;
  const int axis = op->attrs.axis;
  const ir::Block* region = op->regions[0];
  std::vector<std::string> outs;
  ScanShape shape;
  for (ir::Value* res : op->results) outs.push_back(buffers_[res] = alloc_buffer(res->type));
  for (ir::Value* x : op->operands) shape.types.push_back(ctype(x->type.element()));
  Shape outer = s;
  outer.erase(outer.begin() + axis);
  shape.rows = numel(outer);
  shape.len = s[static_cast<size_t>(axis)];
  shape.reverse = op->attrs.flag;
  shape.num_threads = nt_;
  // Element `pos` along the axis of row `row` (an index into `outer`).
  auto at = [&](const std::string& row, const std::string& pos) {
    Index idx = index_of(outer, row);
    idx.insert(idx.begin() + axis, pos);
    return idx;
  };
  const int64_t elems = numel(s);
  const int64_t padded_elems = elems + elems / 32 + 1;
  int64_t staging_bytes = 0;
  for (ir::Value* x : op->operands) staging_bytes += (padded_elems * std::max(4, dtype_bytes(x->type.dtype)) + 15) / 16 * 16;
  const bool staged = smem_ + staging_bytes <= smem_budget_;
  std::vector<std::string> stage;
  auto padded = [](const std::string& e) { return fmt::format("({0}) + ({0}) / 32", e); };
  auto slot = [&](size_t i, const std::string& row, const std::string& pos) {
    std::string e = flatten(at(row, pos), s);
    return staged ? fmt::format("{}[{}]", stage[i], padded(e)) : fmt::format("{}[{}]", outs[i], e);
  };
  sync();
  if (staged) {
    for (size_t i = 0; i < op->operands.size(); ++i)
      stage.push_back(alloc_shared(shape.types[i], padded_elems, std::max(4, dtype_bytes(op->operands[i]->type.dtype))));
    // V consecutive elements a thread, so that the operands' loads are 16 bytes wide (the padded
    // slots of a warp's writes still fall in distinct banks).
    const std::vector<const ir::Value*> roots(op->operands.begin(), op->operands.end());
    const int V = choose_width(s, roots, nullptr);
    thread_loop(
        s, V, [&](const Index& base) { emit_vector_loads(roots, base, V); },
        [&](const Index& idx) {
          const std::string e = tmp("int", flatten(idx, s));
          for (size_t i = 0; i < stage.size(); ++i)
            line(fmt::format("{}[{}] = {};", stage[i], padded(e), eval(op->operands[i], idx)));
        },
        nullptr);
    vec_loads_.clear();
    sync();
  }
  ScanHooks h;
  h.line = [&](const std::string& l) { line(l); };
  h.open = [&](const std::string& l) { open(l); };
  h.close = [&] { close(); };
  h.fresh = [&](const char* p) { return fresh(p); };
  h.tmp = [&](const std::string& t, const std::string& e) { return tmp(t, e); };
  h.combine = [&](const std::vector<std::string>& a, const std::vector<std::string>& b) { return combine(region, a, b); };
  h.input = [&](size_t i, const std::string& row, const std::string& pos) {
    return staged ? slot(i, row, pos) : eval(op->operands[i], at(row, pos));
  };
  h.result = slot;
  h.write = [&](size_t i, const std::string& row, const std::string& pos, const std::string& v) {
    line(fmt::format("{} = {};", slot(i, row, pos), v));
  };
  h.shared_array = [&](const std::string& t, int64_t count) { return alloc_shared(t, count, 8); };
  h.barrier = [&] { line("__syncthreads();"); };
  h.defer_fold = staged;  // folded while copying out
  const ScanFold fold = emit_parallel_scan(shape, h);
  sync();
  if (staged) {
    std::string e = fresh("e");
    open(fmt::format("for (int {0} = tid; {0} < {1}; {0} += {2})", e, elems, nt_));
    std::vector<std::string> x;
    for (size_t i = 0; i < stage.size(); ++i) x.push_back(tmp(shape.types[i], fmt::format("{}[{}]", stage[i], padded(e))));
    if (!fold.prefix.empty()) {
      // The chunk holding the element, and the thread that scanned it (step 4 of scan.h).
      Index idx = index_of(s, e);
      const std::string pos = idx[static_cast<size_t>(axis)];
      idx.erase(idx.begin() + axis);
      const std::string along = shape.reverse ? fmt::format("{} - ({})", shape.len - 1, pos) : pos;
      const std::string k = tmp("int", fmt::format("({}) / {}", along, fold.chunk));
      const std::string owner = tmp("int", fmt::format("({}) * {} + {}", flatten(idx, outer), fold.threads_per_row, k));
      std::vector<std::string> pre;
      for (size_t i = 0; i < stage.size(); ++i) pre.push_back(tmp(shape.types[i], fmt::format("{}[{}]", fold.prefix[i], owner)));
      std::vector<std::string> c = combine(region, pre, x);
      for (size_t i = 0; i < stage.size(); ++i) x[i] = tmp(shape.types[i], fmt::format("{} > 0 ? {} : {}", k, c[i], x[i]));
    }
    for (size_t i = 0; i < stage.size(); ++i) line(fmt::format("{}[{}] = {};", outs[i], e, x[i]));
    close();
    sync();
  }
}

}  // namespace tritium::jit::cuda::detail
