// Builder: creates ops at an insertion point. It trusts its caller about operand shapes and
// dtypes (the DSL's semantic layer checks them and raises user-facing errors); the verifier
// re-checks the result.
#pragma once
#include "ir/ir.h"

namespace tritium::ir {

class Builder {
 public:
  explicit Builder(Function& f) : f_(f), block_(f.body), pos_(-1) {}

  Function& function() { return f_; }
  Block* block() const { return block_; }
  void set_insertion_end(Block* b) { block_ = b; pos_ = -1; }
  void set_insertion_before(Op* op);  // op must be in a block

  SourceLoc loc;  // location given to new ops

  Op* create(OpKind kind, std::vector<Value*> operands, std::vector<Type> result_types, Attrs attrs = {});
  Value* create1(OpKind kind, std::vector<Value*> operands, const Type& result, Attrs attrs = {}) {
    return create(kind, std::move(operands), {result}, std::move(attrs))->result();
  }

  Value* constant_int(int64_t v, const Type& t);   // integer or bool dtype, scalar or block
  Value* constant_float(double v, const Type& t);  // float dtype, scalar or block
  Value* constant(double v, const Type& t) { return is_float(t.dtype) ? constant_float(v, t) : constant_int(static_cast<int64_t>(v), t); }

 private:
  Function& f_;
  Block* block_;
  long pos_;  // insert before index pos_; -1 = append
};

}  // namespace tritium::ir
