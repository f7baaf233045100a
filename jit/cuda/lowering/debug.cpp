// tl::device_print and tl::device_assert in layouts: each element printed or checked once, by the
// thread holding its first copy, with its flat index (the same text as the element-loop generator).
#include "jit/cuda/lowering/lowering.h"

#include <functional>

namespace tritium::jit::cuda::lowering {
namespace {

std::pair<std::string, std::string> print_value(const std::string& x, const ir::Type& t) {
  DType d = t.dtype;
  if (is_float(d)) return {"%.9g", fmt::format("(double)({})", to_f32(x, d))};
  if (d == DType::ptr) return {"%p", fmt::format("(const void*)({})", x)};
  if (d == DType::i1) return {"%s", fmt::format("({}) ? \"true\" : \"false\"", x)};
  if (is_unsigned_int(d)) return {"%llu", fmt::format("(unsigned long long)({})", x)};
  return {"%lld", fmt::format("(long long)({})", x)};
}

}  // namespace

void Lowering::emit_print(const ir::Op* op) {
  has_print_ = true;
  wait_mma();
  std::string prefix = quote(op->attrs.str);
  if (op->operands.empty()) {
    line(fmt::format("if (tid == 0) printf(\"pid (%d, %d, %d) %s\\n\", tt_pid0, tt_pid1, tt_pid2, {});", prefix));
    return;
  }
  for (size_t oi = 0; oi < op->operands.size(); ++oi) {
    const ir::Value* v = op->operands[oi];
    std::string operand = oi > 0 ? fmt::format(" (operand {})", oi) : "";
    if (v->type.is_scalar()) {
      auto [f, a] = print_value(scalar(v), v->type);
      line(fmt::format("if (tid == 0) printf(\"pid (%d, %d, %d) %s{} {}\\n\", tt_pid0, tt_pid1, tt_pid2, {}, {});",
                       operand, f, prefix, a));
      continue;
    }
    const Val& x = val(v);
    const Layout& l = layout(v);
    const ir::Shape& s = v->type.shape;
    open(fmt::format("if ({})", owner(l)));
    for (int r = 0; r < l.num_regs(); ++r) {
      std::string flat = "0";
      for (size_t d = 0; d < s.size(); ++d) flat = fmt::format("({}) * {} + {}", flat, s[d], coord(l, r, static_cast<int>(d)));
      auto [f, a] = print_value(x.at(r), v->type);
      line(fmt::format("printf(\"pid (%d, %d, %d) idx (%d) %s{} {}\\n\", tt_pid0, tt_pid1, tt_pid2, (int)({}), {}, {});",
                       operand, f, flat, prefix, a));
    }
    close();
  }
}

// A failing element reports its row-major index and the payload there (TRITIUM_DEBUG's address
// and bounds); the layout pass gives the payload blocks the condition's layout.
void Lowering::emit_assert(const ir::Op* op) {
  const ir::Value* c = op->operand(0);
  int id = num_asserts_++;
  wait_mma();
  line(fmt::format("// device_assert {}: {}", id, op->attrs.str.substr(0, op->attrs.str.find('\n'))));
  auto fail_call = [&](const std::string& lane, const std::function<std::string(const ir::Value*)>& at) {
    std::string call = fmt::format("tt_assert_fail(tt_assert, {}, tt_pid0, tt_pid1, tt_pid2, (long long)({})", id, lane);
    for (size_t i = 1; i < 4; ++i) call += i < op->operands.size() ? fmt::format(", (long long)({})", at(op->operand(i))) : ", 0";
    return call + ")";
  };
  if (c->type.is_scalar()) {
    line(fmt::format("if (!({})) {};", scalar(c), fail_call("-1", [&](const ir::Value* p) { return scalar(p); })));
    return;
  }
  const Val& x = val(c);
  const Layout& l = layout(c);
  const ir::Shape& s = c->type.shape;
  for (int r = 0; r < l.num_regs(); ++r) {
    std::string flat = "0";
    for (size_t d = 0; d < s.size(); ++d) flat = fmt::format("({}) * {} + {}", flat, s[d], coord(l, r, static_cast<int>(d)));
    line(fmt::format("if (!({})) {};", x.at(r), fail_call(flat, [&](const ir::Value* p) {
                       return p->type.is_scalar() ? scalar(p) : val(p).at(r);
                     })));
  }
}

}  // namespace tritium::jit::cuda::lowering
