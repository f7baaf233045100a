#include "dsl/control_flow.h"

#include <algorithm>
#include <exception>
#include <unordered_set>
#include <vector>

#include "dsl/semantic.h"

namespace tritium::tl {

using ir::OpKind;
using ir::Value;

namespace {

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
};

range::range(operand end, std::source_location loc) : range(operand(0, loc), end, operand(1, loc), loc) {}

range::range(operand start, operand end, operand step, std::source_location loc)
    : start_(start), end_(end), step_(step), loc_(SourceLoc::from(loc)) {}

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
  // Unwinding from an error in the body: put the outer tensors back and leave quietly.
  auto alive = live_set();
  for (auto& c : tr.carried)
    if (alive.count(c.handle)) c.handle->rebind(c.init);
  if (dsl::TraceContext::active()) dsl::TraceContext::current("range", loc_).builder.set_insertion_end(tr.outer_block);
  if (std::uncaught_exceptions() > uncaught_at_begin_) return;
  fail(loc_, "tl::range: the loop body was left early (break or return); run-time loops must run their body to the end");
}

void if_(operand condition, const std::function<void()>& then_body, const std::function<void()>& else_body,
         std::source_location location) {
  SourceLoc loc = SourceLoc::from(location);
  Value* c = dsl::to_bool("if_", loc, dsl::operand_value("if_", condition));
  if (c->type.is_block())
    fail(loc, "tl::if_: the condition must be a scalar, got {}; use tl::where for blocks", dsl::describe(c));
  ir::Builder& b = dsl::builder("if_", loc);
  dsl::check_nesting("if_", loc, b);
  ir::Function& f = b.function();
  ir::Block* outer = b.block();
  ir::Op* op = b.create(OpKind::If, {c}, {});
  ir::Block* then_block = f.new_block(op);
  ir::Block* else_block = f.new_block(op);
  op->regions = {then_block, else_block};

  struct Record {
    tensor* handle;
    Value* before;
    Value* after_then;
    Value* after_else;
  };
  std::vector<Record> records;
  for (tensor* h : live_tensors()) records.push_back({h, h->raw(), h->raw(), h->raw()});

  auto trace_branch = [&](ir::Block* block, const std::function<void()>& body, bool is_then) {
    b.set_insertion_end(block);
    try {
      if (body) body();
    } catch (...) {
      auto alive = live_set();
      for (auto& r : records)
        if (alive.count(r.handle)) r.handle->rebind(r.before);
      b.set_insertion_end(outer);
      throw;
    }
    auto alive = live_set();
    for (auto& r : records) {
      if (!alive.count(r.handle)) continue;
      (is_then ? r.after_then : r.after_else) = r.handle->raw();
      r.handle->rebind(r.before);
    }
  };
  trace_branch(then_block, then_body, true);
  trace_branch(else_block, else_body, false);

  std::vector<Value*> then_yields, else_yields;
  std::vector<Record*> merged;
  for (auto& r : records) {
    if (r.after_then == r.before && r.after_else == r.before) continue;
    if (r.after_then->type != r.before->type || r.after_else->type != r.before->type)
      fail(loc,
           "tl::if_: a tensor reassigned in a branch changes type ({} before, {} after the then-branch, {} after "
           "the else-branch); both branches must leave it with the same type",
           r.before->type.str(), r.after_then->type.str(), r.after_else->type.str());
    then_yields.push_back(r.after_then);
    else_yields.push_back(r.after_else);
    merged.push_back(&r);
  }
  b.set_insertion_end(then_block);
  b.create(OpKind::Yield, then_yields, {});
  b.set_insertion_end(else_block);
  b.create(OpKind::Yield, else_yields, {});
  b.set_insertion_end(outer);
  for (Record* r : merged) r->handle->rebind(f.add_result(op, r->before->type));
}

void while_(const std::function<tensor()>& cond, const std::function<void()>& body, std::source_location location) {
  SourceLoc loc = SourceLoc::from(location);
  ir::Builder& b = dsl::builder("while_", loc);
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
