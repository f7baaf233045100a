#include "dsl/early_exit.h"

#include "dsl/control_flow.h"
#include "dsl/if_trace.h"
#include "dsl/trace.h"

namespace tritium::dsl {

using ir::OpKind;
using ir::Value;

ExitFrames::ExitFrames() { frames.emplace_back(); }
ExitFrames::~ExitFrames() = default;

namespace {

ExitFrames& exits(const SourceLoc& loc = {}) { return *TraceContext::current("return_", loc).exits; }

Value* false_value(ir::Builder& b) { return b.constant_int(0, ir::Type::scalar(DType::i1)); }

// The rest of the innermost region runs only where it has not returned.
void open_guard(const SourceLoc& loc) {
  ExitFrames& e = exits(loc);
  ir::Builder& b = builder("return_", loc);
  Value* returned = e.frames.back().returned;
  Value* go_on = returned->def && returned->def->kind == OpKind::Constant
                     ? b.constant_int(returned->def->attrs.ival ? 0 : 1, ir::Type::scalar(DType::i1))
                     : b.create1(OpKind::Not, {returned}, ir::Type::scalar(DType::i1));
  auto guard = std::make_unique<IfTrace>("return_", go_on, loc);
  guard->begin(true);
  ExitFrames::Frame frame;
  frame.guard = true;
  frame.guard_if = std::move(guard);
  e.frames.push_back(std::move(frame));
}

// Ends the innermost guard: its If yields whether the guarded code returned, which the
// enclosing region's flag takes in.
void close_guard(const SourceLoc& loc) {
  ExitFrames& e = exits(loc);
  ExitFrames::Frame g = std::move(e.frames.back());
  e.frames.pop_back();
  IfTrace& t = *g.guard_if;
  t.end(true);
  ir::Builder& b = builder("return_", loc);
  Value* then_flag = g.returned;
  Value* else_flag = nullptr;
  if (then_flag) {
    t.begin(false);
    else_flag = false_value(b);
  }
  t.end(false);
  Value* inner = t.close(then_flag, else_flag);
  if (!inner) return;
  Value*& outer = e.frames.back().returned;
  outer = b.create1(OpKind::Or, {outer, inner}, ir::Type::scalar(DType::i1));
}

}  // namespace

void exit_push_branch() { exits().frames.emplace_back(); }

Value* exit_pop_branch(const SourceLoc& loc) {
  ExitFrames& e = exits(loc);
  while (e.frames.back().guard) close_guard(loc);
  Value* returned = e.frames.back().returned;
  e.frames.pop_back();
  return returned;
}

void exit_abandon_branch() {
  if (!TraceContext::active()) return;
  ExitFrames& e = exits();
  while (e.frames.size() > 1 && e.frames.back().guard) {
    e.frames.back().guard_if->abandon();
    e.frames.pop_back();
  }
  if (e.frames.size() > 1) e.frames.pop_back();
}

void exit_after_branch(Value* returned, const SourceLoc& loc) {
  ExitFrames& e = exits(loc);
  ir::Builder& b = builder("if_", loc);
  Value*& flag = e.frames.back().returned;
  flag = flag ? b.create1(OpKind::Or, {flag, returned}, ir::Type::scalar(DType::i1)) : returned;
  open_guard(loc);
}

void exit_close_all(const SourceLoc& loc) {
  ExitFrames& e = exits(loc);
  while (e.frames.size() > 1) {
    if (!e.frames.back().guard)
      fail(loc, "internal: a tl::if_ branch frame is still open at the end of the kernel body");
    close_guard(loc);
  }
}

NoReturnScope::NoReturnScope() { ++exits().no_return_depth; }
NoReturnScope::~NoReturnScope() {
  if (TraceContext::active()) --exits().no_return_depth;
}

}  // namespace tritium::dsl

namespace tritium::tl {

void return_(std::source_location location) {
  SourceLoc loc = SourceLoc::from(location);
  dsl::ExitFrames& e = dsl::exits(loc);
  if (e.no_return_depth > 0)
    fail(loc,
         "tl::return_: a return inside a run-time loop (tl::range, tl::while_) or a combine function is not "
         "supported (Triton refuses it too); set a flag and test it after the loop, or mask the loop's work");
  ir::Builder& b = dsl::builder("return_", loc);
  e.frames.back().returned = b.constant_int(1, ir::Type::scalar(DType::i1));
  dsl::open_guard(loc);  // what follows in this region never runs
}

}  // namespace tritium::tl
