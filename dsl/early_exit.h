// tl::return_(): Triton's `return` anywhere outside a run-time loop, as a trace-time rewrite.
//
// The IR stays structured: a `return` inside a run-time branch makes the branch yield a run-time
// flag "this program has returned", and the rest of the enclosing region (up to the end of the
// enclosing branch, or of the kernel) is traced inside a guard `if (!returned)`. A return
// directly at a region's level makes the rest of that region dead (a guard on `false`). So no
// backend or pass needs to know about early exits: nothing is moved across one, and every op
// that synchronises a program (reductions, dots) runs under a per-program scalar condition, the
// same for all the program's threads. Triton refuses `return` inside `for`/`while`; so does this.
#pragma once
#include <memory>
#include <vector>

#include "common/error.h"
#include "ir/ir.h"

namespace tritium::dsl {

class IfTrace;  // dsl/control_flow.cpp: a run-time branch being traced

// Per trace: the regions that may contain a return, innermost last.
struct ExitFrames {
  struct Frame {
    bool guard = false;             // a guard opened after a return (false: a branch or the kernel)
    ir::Value* returned = nullptr;  // i1 in this region: the program has returned; nullptr: never
    std::unique_ptr<IfTrace> guard_if;
  };
  std::vector<Frame> frames;  // frames[0]: the kernel body
  int no_return_depth = 0;    // run-time loops and combine functions being traced
  ExitFrames();
  ~ExitFrames();
};

// Called by tl::if_ around each branch.
void exit_push_branch();
// Closes the guards the branch opened; its "returned" flag (nullptr: the branch never returns).
ir::Value* exit_pop_branch(const SourceLoc& loc);
// Unwinding from an error inside a branch: drops the branch's frames, rebinding tensors.
void exit_abandon_branch();
// After a tl::if_ whose branches may return (flag `returned`): the rest is traced under a guard.
void exit_after_branch(ir::Value* returned, const SourceLoc& loc);
// At the end of the kernel body: closes every guard.
void exit_close_all(const SourceLoc& loc);

// While alive, tl::return_() is refused (run-time loops, combine functions).
struct NoReturnScope {
  NoReturnScope();
  ~NoReturnScope();
  NoReturnScope(const NoReturnScope&) = delete;
  NoReturnScope& operator=(const NoReturnScope&) = delete;
};

}  // namespace tritium::dsl
