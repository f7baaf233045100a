// A run-time branch (an If op) being traced: the live tensors it may reassign, each branch's
// values, and the merge into the If's results. tl::if_ and the guards of tl::return_() use it.
#pragma once
#include <unordered_set>
#include <vector>

#include "dsl/tensor.h"

namespace tritium::tl {
// Every tensor object of the current trace alive on this thread (control_flow.cpp).
std::vector<tensor*> live_tensors();
std::unordered_set<tensor*> live_set();
}  // namespace tritium::tl

namespace tritium::dsl {

class IfTrace {
 public:
  IfTrace(const char* op, ir::Value* cond, const SourceLoc& loc);
  // Moves the builder into the then- (or else-) region, live tensors holding their values before.
  void begin(bool then_branch);
  // Records the live tensors' values at the end of the branch and puts back the values before.
  void end(bool then_branch);
  // Unwinding from an error: the values before, the builder after the If.
  void abandon();
  // Yields and merges; `then_extra`/`else_extra` (both or neither, i1 scalars created in their
  // branch) become one more result, returned (nullptr without them). The builder ends after the If.
  ir::Value* close(ir::Value* then_extra, ir::Value* else_extra);
  ir::Block* block(bool then_branch) const { return then_branch ? then_ : else_; }

 private:
  struct Record {
    tl::tensor* handle;
    ir::Value* before;
    ir::Value* after_then;
    ir::Value* after_else;
  };
  const char* op_;
  SourceLoc loc_;
  ir::Op* if_op_;
  ir::Block* outer_;
  ir::Block* then_;
  ir::Block* else_;
  std::vector<Record> records_;
};

}  // namespace tritium::dsl
