// device_print and device_assert in the element-loop generator (asserts exist only in debug
// mode, TRITIUM_DEBUG: docs/debug-mode.md).
#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

std::pair<std::string, std::string> Codegen::print_value(const std::string& x, const ir::Type& t) {
  DType d = t.dtype;
  if (is_float(d)) return {"%.9g", fmt::format("(double)({})", to_f32(x, d))};
  if (d == DType::ptr) return {"%p", fmt::format("(const void*)({})", x)};
  if (d == DType::i1) return {"%s", fmt::format("({}) ? \"true\" : \"false\"", x)};
  if (is_unsigned_int(d)) return {"%llu", fmt::format("(unsigned long long)({})", x)};
  return {"%lld", fmt::format("(long long)({})", x)};
}

void Codegen::emit_print(const ir::Op* op) {
  has_print_ = true;
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
    sync_if_reading({v});
    thread_loop(v->type.shape, 1, nullptr, [&](const Index& idx) {
      auto [f, a] = print_value(eval(v, idx), v->type);
      line(fmt::format("printf(\"pid (%d, %d, %d) idx (%d) %s{} {}\\n\", tt_pid0, tt_pid1, tt_pid2, {}, {}, {});",
                       operand, f, flatten(idx, v->type.shape), prefix, a));
    }, nullptr);
  }
}

// A failing element reports its row-major index and the payload there (TRITIUM_DEBUG's address
// and bounds, jit/passes/debug_checks.h).
void Codegen::emit_assert(const ir::Op* op) {
  const ir::Value* c = op->operand(0);
  int id = num_asserts_++;
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
  std::vector<const ir::Value*> read{c};
  for (size_t i = 1; i < op->operands.size(); ++i) read.push_back(op->operand(i));
  sync_if_reading(read);
  thread_loop(c->type.shape, 1, nullptr, [&](const Index& idx) {
    line(fmt::format("if (!({})) {};", eval(c, idx), fail_call(flatten(idx, c->type.shape), [&](const ir::Value* p) {
                       return p->type.is_scalar() ? scalar(p) : eval(p, idx);
                     })));
  }, nullptr);
}

}  // namespace tritium::jit::cuda::detail
