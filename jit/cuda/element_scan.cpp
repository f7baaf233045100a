// The element-loop generator's scans (tl::cumsum, tl::cumprod, tl::associative_scan): the parallel
// scan of scan.h over the result buffers, reading the operands as fused expressions. Each result
// is a buffer (shared memory while the budget lasts, else the program's global scratch).
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
  ScanHooks h;
  h.line = [&](const std::string& l) { line(l); };
  h.open = [&](const std::string& l) { open(l); };
  h.close = [&] { close(); };
  h.fresh = [&](const char* p) { return fresh(p); };
  h.tmp = [&](const std::string& t, const std::string& e) { return tmp(t, e); };
  h.combine = [&](const std::vector<std::string>& a, const std::vector<std::string>& b) { return combine(region, a, b); };
  h.input = [&](size_t i, const std::string& row, const std::string& pos) { return eval(op->operands[i], at(row, pos)); };
  h.result = [&](size_t i, const std::string& row, const std::string& pos) {
    return fmt::format("{}[{}]", outs[i], flatten(at(row, pos), s));
  };
  h.write = [&](size_t i, const std::string& row, const std::string& pos, const std::string& v) {
    line(fmt::format("{}[{}] = {};", outs[i], flatten(at(row, pos), s), v));
  };
  h.shared_array = [&](const std::string& t, int64_t count) { return alloc_shared(t, count, 8); };
  h.barrier = [&] { line("__syncthreads();"); };
  sync();
  emit_parallel_scan(shape, h);
  sync();
}

}  // namespace tritium::jit::cuda::detail
