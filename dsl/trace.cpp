#include "dsl/trace.h"

#include <atomic>

#include "common/env.h"
#include "dsl/early_exit.h"
#include "dsl/tensor.h"

namespace tritium::dsl {

namespace {
thread_local TraceContext* g_current = nullptr;
thread_local tl::tensor* g_live_head = nullptr;
}  // namespace

std::atomic<uint64_t> g_next_serial{1};

TraceContext::TraceContext(ir::Function& f)
    : function(f), builder(f), max_ops(env().max_ir_ops), serial(g_next_serial++), exits(std::make_unique<ExitFrames>()), previous_(g_current) {
  g_current = this;
}
TraceContext::~TraceContext() { g_current = previous_; }

void TraceContext::too_many_ops(const char* op, const SourceLoc& loc) const {
  fail(loc,
       "tl::{}: kernel {} has reached {} IR ops while being traced, the limit (TRITIUM_MAX_IR_OPS); a C++ loop in "
       "the body unrolls too far? Use tl::range for a run-time loop, or raise TRITIUM_MAX_IR_OPS",
       op, function.name, max_ops);
}

void check_nesting(const char* op, const SourceLoc& loc, const ir::Builder& b) {
  int depth = 0;
  for (const ir::Block* block = b.block(); block->parent; block = block->parent->parent) ++depth;
  if (depth >= kMaxNesting)
    fail(loc,
         "tl::{}: run-time control flow nested {} levels deep; at most {} levels of tl::range, tl::if_, tl::while_ "
         "and reductions inside one another are supported",
         op, depth + 1, kMaxNesting);
}

TraceContext& TraceContext::current(const char* op, const SourceLoc& loc) {
  if (!g_current)
    fail(loc, "tl::{} was called outside a kernel being traced; tl:: operations only run inside a kernel body", op);
  return *g_current;
}

bool TraceContext::active() { return g_current != nullptr; }
uint64_t TraceContext::current_serial() { return g_current ? g_current->serial : 0; }

}  // namespace tritium::dsl

namespace tritium::tl {

tensor* tensor::live_head() { return dsl::g_live_head; }

void tensor::link() {
  next_ = dsl::g_live_head;
  if (next_) next_->prev_ = this;
  dsl::g_live_head = this;
}

void tensor::unlink() {
  if (prev_) prev_->next_ = next_;
  else dsl::g_live_head = next_;
  if (next_) next_->prev_ = prev_;
}

tensor::tensor(ir::Value* v) : v_(v), trace_(dsl::TraceContext::current_serial()) { link(); }

bool tensor::in_current_trace() const { return trace_ != 0 && trace_ == dsl::TraceContext::current_serial(); }

ir::Value* tensor::value(std::source_location loc) const {
  if (!v_) fail(SourceLoc::from(loc), "use of an empty tl::tensor (it was default-constructed and never assigned)");
  if (none_)
    fail(SourceLoc::from(loc),
         "use of pointer argument {}, which is None (it was passed as nullptr or an undefined "
         "Tensor); test it with {}.is_none() before using it, as Triton's `if {} is not None:`",
         none_, none_, none_);
  // Its IR belongs to another function, or is freed: a clear error instead of a read after free.
  if (!in_current_trace())
    fail(SourceLoc::from(loc),
         "use of a tl::tensor outside the trace that made it: it was kept past the end of another kernel body's "
         "trace (or an earlier trace of this one), e.g. in a captured variable or a static; a tl::tensor lives only "
         "while the kernel body that creates it is being traced");
  return v_;
}

DType tensor::element_ty(std::source_location loc) const {
  if (none_)
    fail(SourceLoc::from(loc), "{}.element_ty(): pointer argument {} is None and has no element type", none_, none_);
  const ir::Type& t = value(loc)->type;
  if (!t.is_ptr())
    fail(SourceLoc::from(loc), "element_ty(): the value is {}, not a pointer (Triton's ptr.dtype.element_ty needs a pointer)",
         t.str());
  return t.pointee;
}

}  // namespace tritium::tl
