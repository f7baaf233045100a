#include "dsl/control_flow.h"

#include <algorithm>
#include <exception>
#include <unordered_set>
#include <vector>

#include "dsl/early_exit.h"
#include "dsl/if_trace.h"
#include "dsl/semantic.h"

namespace tritium::tl {

using ir::OpKind;
using ir::Value;

// Every tensor object of this trace alive on this thread: the candidates for loop-carried state.
// Tensors of an outer trace (whose body launched this one) or of an ended trace are not.
std::vector<tensor*> live_tensors() {
  std::vector<tensor*> out;
  for (tensor* t = tensor::live_head(); t; t = t->next_live())
    if (t->raw() && t->in_current_trace()) out.push_back(t);
  return out;
}

std::unordered_set<tensor*> live_set() {
  std::unordered_set<tensor*> s;
  for (tensor* t = tensor::live_head(); t; t = t->next_live()) s.insert(t);
  return s;
}

namespace {

Value* scalar_int(const char* op, const operand& o, const SourceLoc& loc) {
  Value* v = dsl::operand_value(op, o);
  if (v->type.is_block() || !is_int(v->type.dtype) || v->type.dtype == DType::i1)
    fail(loc, "tl::{}: loop bounds must be integer scalars, got {}", op, dsl::describe(v));
  return v;
}

}  // namespace

struct LoopTrace {
  struct Carried {
    tensor* handle;
    Value* init;
    Value* arg;
  };
  ir::Op* loop = nullptr;
  ir::Block* body = nullptr;
  ir::Block* outer_block = nullptr;
  Value* iv = nullptr;
  std::vector<Carried> carried;
  bool finished = false;
  std::unique_ptr<dsl::NoReturnScope> no_return;  // while the body is traced
};

range::range(operand end, std::source_location loc) : range(operand(0, loc), end, operand(1, loc), loc) {}

range::range(operand start, operand end, operand step, std::source_location loc)
    : start_(start), end_(end), step_(step), loc_(SourceLoc::from(loc)) {}

range::range(operand start, operand end, operand step, RangeOptions options, std::source_location loc)
    : start_(start), end_(end), step_(step), options_(options), loc_(SourceLoc::from(loc)) {}

range::iterator range::begin() {
  if (trace_) fail(loc_, "tl::range: a range can be iterated only once");
  ir::Builder& b = dsl::builder("range", loc_);
  dsl::check_nesting("range", loc_, b);
  Value* lb = scalar_int("range", start_, loc_);
  Value* ub = scalar_int("range", end_, loc_);
  Value* st = scalar_int("range", step_, loc_);
  if (step_.is_literal() && step_.ival <= 0) fail(loc_, "tl::range: the step must be positive, got {}", step_.ival);
  const bool constant_step = st->def && st->def->kind == OpKind::Constant;
  if (constant_step && st->def->attrs.ival <= 0)
    fail(loc_, "tl::range: the step must be positive, got {}", st->def->attrs.ival);
  DType t = DType::i32;
  for (Value* v : {lb, ub, st})
    if (dtype_bits(v->type.dtype) == 64) t = DType::i64;
  lb = dsl::cast("range", loc_, lb, t);
  ub = dsl::cast("range", loc_, ub, t);
  st = dsl::cast("range", loc_, st, t);
  if (!constant_step) {
    // A run-time step <= 0 would never reach the end: the loop runs zero times instead
    // (docs/language.md, "Control flow"). Not a device assert: on a GPU that makes every launch
    // wait for the kernel to read the assert flag.
    b.loc = loc_;
    Value* positive = b.create1(OpKind::CmpGt, {st, b.constant_int(0, ir::Type::scalar(t))}, ir::Type::scalar(DType::i1));
    ub = b.create1(OpKind::Select, {positive, ub, lb}, ir::Type::scalar(t));
  }

  trace_ = std::make_unique<LoopTrace>();
  LoopTrace& tr = *trace_;
  tr.outer_block = b.block();
  tr.loop = b.create(OpKind::For, {lb, ub, st}, {});
  tr.loop->attrs.flag = options_.flatten;
  ir::Function& f = b.function();
  tr.body = f.new_block(tr.loop);
  tr.loop->regions.push_back(tr.body);
  tr.iv = f.add_block_arg(tr.body, ir::Type::scalar(t));
  // Every live tensor gets a placeholder argument; the ones left untouched are folded back.
  for (tensor* h : live_tensors()) {
    Value* arg = f.add_block_arg(tr.body, h->raw()->type);
    tr.carried.push_back({h, h->raw(), arg});
    h->rebind(arg);
  }
  b.set_insertion_end(tr.body);
  tr.no_return = std::make_unique<dsl::NoReturnScope>();
  uncaught_at_begin_ = std::uncaught_exceptions();
  return iterator(this, false);
}

tensor range::iterator::operator*() const { return tensor(range_->trace_->iv); }

range::iterator& range::iterator::operator++() {
  range_->finish();
  done_ = true;
  return *this;
}

void range::finish() {
  LoopTrace& tr = *trace_;
  tr.finished = true;
  tr.no_return.reset();
  ir::Builder& b = dsl::builder("range", loc_);
  ir::Function& f = b.function();
  if (b.block() != tr.body)
    fail(loc_, "tl::range: the loop body ended inside another construct (a nested loop was left early?)");
  auto alive = live_set();
  std::vector<Value*> yields;
  std::vector<LoopTrace::Carried> kept;
  for (auto& c : tr.carried) {
    bool changed = alive.count(c.handle) && c.handle->raw() != c.arg;
    if (!changed) {
      f.replace_all_uses(c.arg, c.init);
      f.erase_block_arg(tr.body, c.arg->index);
      if (alive.count(c.handle) && c.handle->raw() == c.arg) c.handle->rebind(c.init);
      continue;
    }
    Value* next = c.handle->raw();
    if (next->type != c.init->type)
      fail(loc_,
           "tl::range: a tensor reassigned in this run-time loop changes type from {} to {}; loop-carried values "
           "must keep their type (cast the new value with .to(...) or broadcast it)",
           c.init->type.str(), next->type.str());
    yields.push_back(next);
    kept.push_back(c);
  }
  b.create(OpKind::Yield, yields, {});
  b.set_insertion_end(tr.outer_block);
  for (auto& c : kept) {
    f.add_operand(tr.loop, c.init);
    Value* r = f.add_result(tr.loop, c.init->type);
    c.handle->rebind(r);
  }
}

range::~range() noexcept(false) {
  if (!trace_ || trace_->finished) return;
  LoopTrace& tr = *trace_;
  tr.no_return.reset();
  // Unwinding from an error in the body: put the outer tensors back and leave quietly.
  auto alive = live_set();
  for (auto& c : tr.carried)
    if (alive.count(c.handle)) c.handle->rebind(c.init);
  if (dsl::TraceContext::active()) dsl::TraceContext::current("range", loc_).builder.set_insertion_end(tr.outer_block);
  if (std::uncaught_exceptions() > uncaught_at_begin_) return;
  fail(loc_, "tl::range: the loop body was left early (break or return); run-time loops must run their body to the end");
}

}  // namespace tritium::tl

namespace tritium::dsl {

using ir::OpKind;

IfTrace::IfTrace(const char* op, Value* cond, const SourceLoc& loc) : op_(op), loc_(loc) {
  ir::Builder& b = builder(op, loc);
  check_nesting(op, loc, b);
  ir::Function& f = b.function();
  outer_ = b.block();
  if_op_ = b.create(OpKind::If, {cond}, {});
  then_ = f.new_block(if_op_);
  else_ = f.new_block(if_op_);
  if_op_->regions = {then_, else_};
  for (tl::tensor* h : tl::live_tensors()) records_.push_back({h, h->raw(), h->raw(), h->raw()});
}

void IfTrace::begin(bool then_branch) { builder(op_, loc_).set_insertion_end(block(then_branch)); }

void IfTrace::end(bool then_branch) {
  auto alive = tl::live_set();
  for (auto& r : records_) {
    if (!alive.count(r.handle)) continue;
    (then_branch ? r.after_then : r.after_else) = r.handle->raw();
    r.handle->rebind(r.before);
  }
}

void IfTrace::abandon() {
  auto alive = tl::live_set();
  for (auto& r : records_)
    if (alive.count(r.handle)) r.handle->rebind(r.before);
  if (TraceContext::active()) TraceContext::current(op_, loc_).builder.set_insertion_end(outer_);
}

Value* IfTrace::close(Value* then_extra, Value* else_extra) {
  ir::Builder& b = builder(op_, loc_);
  ir::Function& f = b.function();
  std::vector<Value*> then_yields, else_yields;
  std::vector<Record*> merged;
  for (auto& r : records_) {
    if (r.after_then == r.before && r.after_else == r.before) continue;
    if (r.after_then->type != r.before->type || r.after_else->type != r.before->type) {
      abandon();
      fail(loc_,
           "tl::{}: a tensor reassigned in a branch changes type ({} before, {} after the then-branch, {} after "
           "the else-branch); both branches must leave it with the same type",
           op_, r.before->type.str(), r.after_then->type.str(), r.after_else->type.str());
    }
    then_yields.push_back(r.after_then);
    else_yields.push_back(r.after_else);
    merged.push_back(&r);
  }
  if (then_extra) then_yields.push_back(then_extra), else_yields.push_back(else_extra);
  b.set_insertion_end(then_);
  b.create(OpKind::Yield, then_yields, {});
  b.set_insertion_end(else_);
  b.create(OpKind::Yield, else_yields, {});
  b.set_insertion_end(outer_);
  for (Record* r : merged) r->handle->rebind(f.add_result(if_op_, r->before->type));
  return then_extra ? f.add_result(if_op_, then_extra->type) : nullptr;
}

}  // namespace tritium::dsl

namespace tritium::tl {

void if_impl(operand condition, const std::function<void()>& then_body, const std::function<void()>& else_body,
             std::source_location location) {
  SourceLoc loc = SourceLoc::from(location);
  Value* c = dsl::to_bool("if_", loc, dsl::operand_value("if_", condition));
  if (c->type.is_block())
    fail(loc, "tl::if_: the condition must be a scalar, got {}; use tl::where for blocks", dsl::describe(c));
  dsl::IfTrace trace("if_", c, loc);
  Value* returned[2] = {nullptr, nullptr};
  for (bool then_branch : {true, false}) {
    trace.begin(then_branch);
    dsl::exit_push_branch();
    try {
      if (const auto& body = then_branch ? then_body : else_body) body();
      returned[then_branch ? 0 : 1] = dsl::exit_pop_branch(loc);
    } catch (...) {
      dsl::exit_abandon_branch();
      trace.abandon();
      throw;
    }
    trace.end(then_branch);
  }
  if (!returned[0] && !returned[1]) {
    trace.close(nullptr, nullptr);
    return;
  }
  // A branch that may return yields its flag; the other yields false.
  ir::Builder& b = dsl::builder("if_", loc);
  for (int i = 0; i < 2; ++i)
    if (!returned[i]) {
      b.set_insertion_end(trace.block(i == 0));
      returned[i] = b.constant_int(0, ir::Type::scalar(DType::i1));
    }
  Value* flag = trace.close(returned[0], returned[1]);
  dsl::exit_after_branch(flag, loc);
}

void while_(const std::function<tensor()>& cond, const std::function<void()>& body, std::source_location location) {
  SourceLoc loc = SourceLoc::from(location);
  ir::Builder& b = dsl::builder("while_", loc);
  dsl::NoReturnScope no_return;
  dsl::check_nesting("while_", loc, b);
  ir::Function& f = b.function();
  ir::Block* outer = b.block();
  ir::Op* op = b.create(OpKind::While, {}, {});
  ir::Block* before = f.new_block(op);
  ir::Block* after = f.new_block(op);
  op->regions = {before, after};
  // Every live tensor gets an argument in both regions; the ones the body leaves alone are folded
  // back to their outer value.
  struct Carried {
    tensor* handle;
    Value* init;
    Value* before_arg;
    Value* body_arg;
  };
  std::vector<Carried> carried;
  for (tensor* h : live_tensors())
    carried.push_back({h, h->raw(), f.add_block_arg(before, h->raw()->type), f.add_block_arg(after, h->raw()->type)});
  auto rebind_all = [&](Value* Carried::*to) {
    auto alive = live_set();
    for (auto& c : carried)
      if (alive.count(c.handle)) c.handle->rebind(c.*to);
  };
  auto leave = [&] {
    rebind_all(&Carried::init);
    b.set_insertion_end(outer);
  };
  rebind_all(&Carried::before_arg);
  b.set_insertion_end(before);
  Value* c = nullptr;
  try {
    tensor t = cond();
    c = dsl::to_bool("while_", loc, dsl::operand_value("while_", t));
  } catch (...) {
    leave();
    throw;
  }
  auto alive = live_set();
  for (auto& cv : carried)
    if (alive.count(cv.handle) && cv.handle->raw() != cv.before_arg) {
      leave();
      fail(loc, "tl::while_: the condition reassigns an outer tensor; compute new values in the body");
    }
  if (c->type.is_block()) {
    leave();
    fail(loc, "tl::while_: the condition must be a scalar, got {}", dsl::describe(c));
  }
  b.create(OpKind::Yield, {c}, {});

  rebind_all(&Carried::body_arg);
  b.set_insertion_end(after);
  try {
    body();
  } catch (...) {
    leave();
    throw;
  }
  if (b.block() != after) {
    leave();
    fail(loc, "tl::while_: the body ended inside another construct");
  }
  alive = live_set();
  std::vector<Value*> yields;
  std::vector<Carried> kept;
  for (auto& cv : carried) {
    bool changed = alive.count(cv.handle) && cv.handle->raw() != cv.body_arg;
    if (!changed) continue;
    Value* next = cv.handle->raw();
    std::string error;
    if (next->type != cv.init->type)
      error = fmt::format("a tensor reassigned in the body changes type from {} to {}; loop-carried values must keep "
                          "their type (cast the new value with .to(...))",
                          cv.init->type.str(), next->type.str());
    else if (next->type.is_block())
      error = fmt::format("a {} block is reassigned in the body; only scalars can be carried by a while loop "
                          "(use tl::range for blocks)",
                          next->type.str());
    if (!error.empty()) {
      leave();
      fail(loc, "tl::while_: {}", error);
    }
    yields.push_back(next);
    kept.push_back(cv);
  }
  for (auto& cv : carried) {
    if (std::find_if(kept.begin(), kept.end(), [&](const Carried& k) { return k.handle == cv.handle; }) != kept.end())
      continue;
    f.replace_all_uses(cv.before_arg, cv.init);
    f.replace_all_uses(cv.body_arg, cv.init);
    f.erase_block_arg(before, cv.before_arg->index);
    f.erase_block_arg(after, cv.body_arg->index);
  }
  b.create(OpKind::Yield, yields, {});
  b.set_insertion_end(outer);
  leave();
  for (auto& cv : kept) {
    f.add_operand(op, cv.init);
    cv.handle->rebind(f.add_result(op, cv.init->type));
  }
}

}  // namespace tritium::tl
