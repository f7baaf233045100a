// The tracing context: while a kernel's C++ body runs to build its IR, tl:: operations append ops
// through the context of the current thread. Nested contexts (a kernel traced while another one
// is) are allowed; the innermost wins.
#pragma once
#include "common/error.h"
#include "ir/builder.h"

namespace tritium::dsl {

class TraceContext {
 public:
  explicit TraceContext(ir::Function& f);
  ~TraceContext();
  TraceContext(const TraceContext&) = delete;
  TraceContext& operator=(const TraceContext&) = delete;

  ir::Function& function;
  ir::Builder builder;

  // The current context; a clear error (naming the op) when a tl:: op runs outside a kernel.
  static TraceContext& current(const char* op, const SourceLoc& loc);
  static bool active();

 private:
  TraceContext* previous_;
};

// The builder of the current context, positioned with `loc` for new ops.
inline ir::Builder& builder(const char* op, const SourceLoc& loc) {
  ir::Builder& b = TraceContext::current(op, loc).builder;
  b.loc = loc;
  return b;
}

}  // namespace tritium::dsl
