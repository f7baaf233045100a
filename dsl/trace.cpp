#include "dsl/trace.h"

#include "dsl/tensor.h"

namespace tritium::dsl {

namespace {
thread_local TraceContext* g_current = nullptr;
thread_local tl::tensor* g_live_head = nullptr;
}  // namespace

TraceContext::TraceContext(ir::Function& f) : function(f), builder(f), previous_(g_current) { g_current = this; }
TraceContext::~TraceContext() { g_current = previous_; }

TraceContext& TraceContext::current(const char* op, const SourceLoc& loc) {
  if (!g_current)
    fail(loc, "tl::{} was called outside a kernel being traced; tl:: operations only run inside a kernel body", op);
  return *g_current;
}

bool TraceContext::active() { return g_current != nullptr; }

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

ir::Value* tensor::value(std::source_location loc) const {
  if (!v_) fail(SourceLoc::from(loc), "use of an empty tl::tensor (it was default-constructed and never assigned)");
  return v_;
}

}  // namespace tritium::tl
