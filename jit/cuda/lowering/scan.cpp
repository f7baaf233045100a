// Scans over layouts (tl::cumsum, tl::cumprod, tl::associative_scan): the operands' registers go to
// shared memory in row-major order with a spare slot after every 32 elements (the threads of a
// warp walk their chunks at a stride of the chunk length: the padding puts them in distinct banks),
// the parallel scan of jit/cuda/scan.h runs in place there, and every thread reads its result
// registers back.
#include "jit/cuda/lowering/lowering.h"
#include "jit/cuda/scan.h"

namespace tritium::jit::cuda::lowering {

void Lowering::emit_scan(const ir::Op* op) {
  const int axis = op->attrs.axis;
  const size_t n = op->operands.size();
  const Layout& l = layout(op->operand(0));
  const ir::Shape& s = op->operand(0)->type.shape;
  const int64_t elems = numel(s), len = s[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  ScanShape shape;
  shape.rows = elems / len;
  shape.len = len;
  shape.reverse = op->attrs.flag;
  shape.num_threads = nt_;
  std::vector<int64_t> offs;
  std::vector<std::string> bufs;
  for (size_t i = 0; i < n; ++i) {
    shape.types.push_back(ctype(op->operand(i)->type.element()));
    offs.push_back(alloc_smem((elems + elems / 32 + 1) * std::max(4, dtype_bytes(op->operand(i)->type.dtype)), 16));
    bufs.push_back(fmt::format("reinterpret_cast<{}*>(tt_smem + {})", shape.types[i], offs[i]));
  }
  auto padded = [](const std::string& e) { return fmt::format("({0}) + ({0}) / 32", e); };
  auto flat = [&](int r) {
    std::string e = "0";
    for (size_t d = 0; d < s.size(); ++d) e = fmt::format("({}) * {} + {}", e, s[d], coord(l, r, static_cast<int>(d)));
    return padded(e);
  };
  sync();
  open(fmt::format("if ({})", owner(l)));
  for (size_t i = 0; i < n; ++i) {
    const Val& x = val(op->operand(i));
    for (int r = 0; r < l.num_regs(); ++r) line(fmt::format("{}[{}] = {};", bufs[i], flat(r), x.at(r)));
  }
  close();
  touched();
  sync();
  // Element `pos` of row `row`: rows run over the dims before the axis, then those after it.
  auto at = [&](size_t i, const std::string& row, const std::string& pos) {
    return fmt::format("{}[{}]", bufs[i],
                       padded(fmt::format("(({}) / {}) * {} + ({}) % {} + ({}) * {}", row, inner, len * inner, row, inner, pos, inner)));
  };
  ScanHooks h;
  h.line = [&](const std::string& x) { line(x); };
  h.open = [&](const std::string& x) { open(x); };
  h.close = [&] { close(); };
  h.fresh = [&](const char* p) { return fresh(p); };
  h.tmp = [&](const std::string& t, const std::string& e) { return tmp(t, e); };
  h.combine = [&](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return combine(op->regions[0], a, b);
  };
  h.input = at;
  h.result = at;
  h.write = [&](size_t i, const std::string& row, const std::string& pos, const std::string& v) {
    line(fmt::format("{} = {};", at(i, row, pos), v));
  };
  std::vector<int64_t> scratch;
  h.shared_array = [&](const std::string& t, int64_t count) {
    scratch.push_back(alloc_smem(count * 8, 16));
    return fmt::format("reinterpret_cast<{}*>(tt_smem + {})", t, scratch.back());
  };
  h.barrier = [&] {
    touched();
    sync();
  };
  emit_parallel_scan(shape, h);
  touched();
  sync();
  for (size_t i = 0; i < n; ++i) {
    Val& out = declare_regs(op->results[i]);
    const Layout& rl = layout(op->results[i]);
    for (int r = 0; r < rl.num_regs(); ++r) line(fmt::format("{}[{}] = {}[{}];", out.name, r, bufs[i], flat(r)));
  }
  touched();
  for (size_t i = scratch.size(); i-- > 0;) free_smem(scratch[i]);
  for (size_t i = n; i-- > 0;) free_smem(offs[i]);
}

}  // namespace tritium::jit::cuda::lowering
