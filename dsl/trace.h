// The tracing context: while a kernel's C++ body runs to build its IR, tl:: operations append ops
// through the context of the current thread. Nested contexts (a kernel traced while another one
// is) are allowed; the innermost wins.
#pragma once
#include <memory>

#include "common/error.h"
#include "ir/builder.h"

namespace tritium::dsl {

// Limits on what one trace builds, checked as it goes so that a runaway kernel body ends in a
// tritium::Error at the user's line instead of minutes of tracing or a stack overflow
// (docs/language.md, "Limits").
// Run-time constructs (tl::range, tl::if_, tl::while_, reduce/scan combine functions) nested in
// one another: every later stage (verifier, passes, code generators) recurses once per level.
inline constexpr int kMaxNesting = 256;
// IR ops one trace may create: Env::max_ir_ops (TRITIUM_MAX_IR_OPS, default 2^22; tracing runs
// at about a million ops a second, and the backends take far longer on such a kernel).

struct ExitFrames;  // dsl/early_exit.h

class TraceContext {
 public:
  explicit TraceContext(ir::Function& f);
  ~TraceContext();
  TraceContext(const TraceContext&) = delete;
  TraceContext& operator=(const TraceContext&) = delete;

  ir::Function& function;
  ir::Builder builder;
  const size_t max_ops;  // TRITIUM_MAX_IR_OPS, read when the trace starts
  const uint64_t serial;  // unique over the process: tl::tensors remember the trace that made them
  std::unique_ptr<ExitFrames> exits;  // tl::return_()'s regions (dsl/early_exit.h)

  // The current context; a clear error (naming the op) when a tl:: op runs outside a kernel.
  static TraceContext& current(const char* op, const SourceLoc& loc);
  static bool active();
  static uint64_t current_serial();  // 0 outside a trace

  [[noreturn]] void too_many_ops(const char* op, const SourceLoc& loc) const;

 private:
  TraceContext* previous_;
};

// The builder of the current context, positioned with `loc` for new ops.
inline ir::Builder& builder(const char* op, const SourceLoc& loc) {
  TraceContext& c = TraceContext::current(op, loc);
  if (c.function.num_ops() >= c.max_ops) c.too_many_ops(op, loc);
  c.builder.loc = loc;
  return c.builder;
}

// Before a run-time construct opens a region inside the builder's current block: a clear error
// when that would nest more than kMaxNesting deep.
void check_nesting(const char* op, const SourceLoc& loc, const ir::Builder& b);

}  // namespace tritium::dsl
