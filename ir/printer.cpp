#include "ir/printer.h"

#include "ir/cache_hints.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace tritium::ir {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string ints_str(const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ", ")); }

std::string constant_str(const Op& op) {
  DType d = op.results.empty() ? DType::invalid : op.result()->type.dtype;
  // "{}" of a double is the shortest text that reads back to the same bits.
  if (is_float(d)) return fmt::format("{}", op.attrs.fval);
  if (is_bool(d)) return op.attrs.ival ? "true" : "false";
  if (is_unsigned_int(d)) return fmt::format("{}", static_cast<uint64_t>(op.attrs.ival));
  return fmt::format("{}", op.attrs.ival);
}

bool load_flags_match_operands(const Op& op) {
  const auto& f = op.attrs.ints;
  if (f.empty()) return true;
  return (f.size() == 2 || f.size() == 4) && f[0] == (op.operands.size() >= 2) && f[1] == (op.operands.size() >= 3);
}

// "cache=.cg", "evict=evict_first" of a load or store with hints (ir/cache_hints.h).
void add_cache_hints(const Op& op, std::vector<std::string>& parts) {
  CacheHints h = cache_hints(op);
  if (h.cache != CacheModifier::none) parts.push_back(fmt::format("cache={}", cache_modifier_name(h.cache)));
  if (h.eviction != EvictionPolicy::normal) parts.push_back(fmt::format("evict={}", eviction_policy_name(h.eviction)));
}

// The attribute text of `op` ("" if none), including any non-default field the op's own format
// does not cover, so that two ops print alike only if they are alike.
std::string attrs_str(const Op& op) {
  const Attrs& a = op.attrs;
  std::vector<std::string> parts;
  bool axis_done = false, flag_done = false, ints_done = false, str_done = false, value_done = false;
  switch (op.kind) {
    case OpKind::Constant: value_done = true; break;
    case OpKind::ProgramId:
    case OpKind::NumPrograms:
    case OpKind::ExpandDims:
    case OpKind::Gather:
      parts.push_back(fmt::format("axis={}", a.axis));
      axis_done = true;
      break;
    case OpKind::Arange:
    case OpKind::Permute:
    case OpKind::MultipleOf:
    case OpKind::MaxContiguous:
      parts.push_back(ints_str(a.ints));
      ints_done = true;
      break;
    case OpKind::Reshape:
      // The result type already says the shape; print the attr only if it says something else.
      ints_done = op.results.size() == 1 && a.ints == op.result()->type.shape;
      break;
    case OpKind::Load:
      ints_done = load_flags_match_operands(op);
      if (ints_done) add_cache_hints(op, parts);
      break;
    case OpKind::Store:
      ints_done = a.ints.size() == 2;
      add_cache_hints(op, parts);
      break;
    case OpKind::Reduce:
    case OpKind::Scan:
      parts.push_back(fmt::format("axis={}", a.axis));
      if (a.flag) parts.push_back(op.kind == OpKind::Reduce ? "keep_dims" : "reverse");
      axis_done = flag_done = true;
      break;
    case OpKind::Print:
      parts.push_back(fmt::format("prefix={}", quote(a.str)));
      str_done = true;
      break;
    case OpKind::Assert:
      parts.push_back(fmt::format("msg={}", quote(a.str)));
      str_done = true;
      break;
    case OpKind::For:
      if (a.flag) parts.push_back("flatten");
      flag_done = true;
      break;
    case OpKind::Dot:
      if (!a.str.empty()) parts.push_back(fmt::format("input_precision={}", a.str));
      str_done = true;
      break;
    case OpKind::AtomicAdd:
    case OpKind::AtomicMax:
    case OpKind::AtomicMin:
    case OpKind::AtomicAnd:
    case OpKind::AtomicOr:
    case OpKind::AtomicXor:
    case OpKind::AtomicXchg:
    case OpKind::AtomicCas:
      if (!a.str.empty()) parts.push_back(fmt::format("sem={}", a.str));  // empty: acq_rel
      str_done = true;
      break;
    default: break;
  }
  if (!value_done && a.ival != 0) parts.push_back(fmt::format("ival={}", a.ival));
  if (!value_done && (a.fval != 0.0 || std::signbit(a.fval))) parts.push_back(fmt::format("fval={}", a.fval));
  if (!axis_done && a.axis != 0) parts.push_back(fmt::format("axis={}", a.axis));
  if (!flag_done && a.flag) parts.push_back("flag");
  if (!ints_done && !a.ints.empty()) parts.push_back(fmt::format("ints=[{}]", ints_str(a.ints)));
  if (!str_done && !a.str.empty()) parts.push_back(fmt::format("str={}", quote(a.str)));
  if (parts.empty()) return "";
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

std::string values_str(const std::vector<Value*>& vs, size_t from = 0, size_t to = SIZE_MAX) {
  std::string out;
  for (size_t i = from; i < vs.size() && i < to; ++i) {
    if (i > from) out += ", ";
    out += print_value(vs[i]);
  }
  return out;
}

std::string types_str(const std::vector<Value*>& vs) {
  std::string out;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (i) out += ", ";
    out += vs[i] ? vs[i]->type.str() : "<null>";
  }
  return out;
}

class Printer {
 public:
  std::string out;
  std::function<std::string(const Value*)> annotate;

  std::string note(const Value* v) const {
    if (!annotate) return "";
    std::string s = annotate(v);
    return s.empty() ? s : " " + s;
  }

  void function(Function& f) {
    out += fmt::format("func @{}(", f.name);
    for (size_t i = 0; i < f.body->args.size(); ++i) {
      if (i) out += ", ";
      const Value* a = f.body->args[i];
      out += fmt::format("{}: {}{}", print_value(a), a->type.str(), note(a));
      if (i < f.params.size() && f.params[i].divisibility != 1)
        out += fmt::format(" {{div={}}}", f.params[i].divisibility);
    }
    out += ") {\n";
    for (const Op* op : f.body->ops) this->op(*op, 1);
    out += "}\n";
  }

 private:
  void indent(int depth) { out.append(2 * depth, ' '); }

  void op(const Op& op, int depth) {
    indent(depth);
    if (op.results.size() == 1) out += print_value(op.result()) + " = ";
    else if (op.results.size() > 1) out += fmt::format("{}:{} = ", print_value(op.results[0]), op.results.size());
    out += op_name(op.kind);

    std::string operands;
    if (op.kind == OpKind::Constant) {
      operands = constant_str(op);
    } else if (op.kind == OpKind::For && op.operands.size() >= 3) {
      operands = values_str(op.operands, 0, 3);
      if (op.operands.size() > 3) operands += fmt::format(" iter({})", values_str(op.operands, 3));
    } else {
      operands = values_str(op.operands);
    }
    if (!operands.empty()) out += " " + operands;
    std::string attrs = attrs_str(op);
    if (!attrs.empty()) out += " " + attrs;

    if (!op.regions.empty()) {
      if (!op.results.empty()) {
        out += fmt::format(" -> ({})", types_str(op.results));
        for (const Value* r : op.results) out += note(r);
      }
      for (size_t r = 0; r < op.regions.size(); ++r) {
        out += r == 0 ? " {\n" : (op.kind == OpKind::If && r == 1 ? " else {\n" : op.kind == OpKind::While ? " do {\n" : " {\n");
        region(*op.regions[r], depth);
        indent(depth);
        out += "}";
      }
      out += "\n";
      return;
    }
    if (op.results.size() == 1) out += " : " + op.result()->type.str() + note(op.result());
    else if (op.results.size() > 1) out += fmt::format(" : ({})", types_str(op.results));
    out += "\n";
  }

  void region(const Block& b, int depth) {
    if (!b.args.empty()) {
      indent(depth);
      out += "^(";
      for (size_t i = 0; i < b.args.size(); ++i) {
        if (i) out += ", ";
        out += fmt::format("{}: {}{}", print_value(b.args[i]), b.args[i]->type.str(), note(b.args[i]));
      }
      out += "):\n";
    }
    for (const Op* o : b.ops) op(*o, depth + 1);
  }
};

}  // namespace

std::string print_value(const Value* v) {
  if (!v) return "<null>";
  if (v->id < 0) return "%?";
  return fmt::format("%{}", v->id);
}

std::string print(Function& f, const std::function<std::string(const Value*)>& annotate) {
  f.renumber();
  Printer p;
  p.annotate = annotate;
  p.function(f);
  return p.out;
}

}  // namespace tritium::ir
