// The Tritium IR: SSA values of scalar and block types, ops with attributes and nested regions
// (loops, branches, reduction/scan combine functions), grouped in a Function. A Function owns
// every op, value and block it contains; blocks keep their ops in program order.
#pragma once
#include <cstdint>
#include <memory>
#include <deque>
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/types.h"

namespace tritium::ir {

enum class OpKind : uint8_t {
  // Values from nothing.
  Constant,     // scalar or splat block; attr: ival (ints, bool) or fval (floats)
  ProgramId,    // attr: axis
  NumPrograms,  // attr: axis
  Arange,       // attr: ints = {start, end}; result [end-start]i32
  // Shape manipulation.
  Splat,        // scalar -> block
  Broadcast,    // block -> block of the same rank, size-1 dims stretched
  ExpandDims,   // attr: axis
  Reshape,      // attr: result shape (row-major order kept)
  Permute,      // attr: ints = permutation (result dim i = operand dim ints[i])
  // Elementwise arithmetic (operands share the result's shape and dtype, except Cmp*/Select).
  Add, Sub, Mul, Div, Rem,  // Div/Rem: C semantics on ints (truncation), IEEE / fmod on floats
  Neg, And, Or, Xor, Not, Shl, Shr,  // Shr: arithmetic for signed, logical for unsigned
  Min, Max,                 // float: a NaN operand yields the other (maxnum), Triton's default
  Umulhi, Fma,
  CmpEq, CmpNe, CmpLt, CmpLe, CmpGt, CmpGe,  // result i1; signedness from operand dtype
  Select,       // (cond i1, a, b)
  Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Rcp, Abs, Floor, Ceil, Sin, Cos, Tanh, Erf, Sigmoid,  // Rcp: 1 / x,
                // approximate on CUDA f32 (rcp.approx.ftz: 1 ulp, |x| past 2^126 gives 0)
  Cast,         // value conversion to the result dtype (int<->float, widths, ptr<->int)
  Bitcast,      // same bit width reinterpretation
  AddPtr,       // (ptr, int offset in elements)
  // Memory.
  Load,         // (ptr [, mask [, other]]); attr: ints[0] = has_mask, ints[1] = has_other [, ints[2..3] =
                // cache modifier, eviction policy (ir/cache_hints.h)]; str:
                // "tensor BASE SHAPE0 SHAPE1 STRIDE0 STRIDE1" on a bounds-checked block-pointer load
                // whose tensor is kernel parameters / constants (dsl/block_ptr.cpp; CUDA's TMA)
  Store,        // (ptr, value [, mask]); no result; attr: ints = {} or {cache modifier, eviction policy}
  AtomicAdd, AtomicMax, AtomicMin, AtomicAnd, AtomicOr, AtomicXor, AtomicXchg,  // (ptr, val [, mask]) -> old
  AtomicCas,    // (ptr, cmp, val) -> old
  // Block-level computations with regions.
  Reduce,       // operands: N blocks; region(0): combine(lhs_0..lhs_N-1, rhs_0..rhs_N-1) -> yield N
                // attr: axis, flags = keep_dims
  Scan,         // operands: N blocks; region(0): combine; attr: axis, flags = reverse
  Dot,          // (a [M,K], b [K,N], acc [M,N] [, use_acc i1]) -> [M,N]; attr: str = input_precision (fp32
                // operands). use_acc false: acc is read as zero (wgmma's scale-d; only the CUDA backend's
                // pipeline adds it: jit/passes/accumulator_init.h)
  // Data movement within a block (Triton's tt.histogram, tt.gather, tt.join, tt.split).
  Histogram,    // (x [N] int [, mask [N] i1]) -> [num_bins] i32: counts of x == b for b in [0, num_bins);
                // values outside the range and masked-off elements are not counted
  Gather,       // (src, index int) -> index's shape, src's dtype; attr: axis. out[i] = src[i with
                // i[axis] = index[i]]; index has src's rank and src's shape off the axis
  Join,         // (a, b) of one type -> [..., 2]: a at [..., 0], b at [..., 1]
  Split,        // (x [..., 2]) -> two results [...]: x[..., 0], x[..., 1]
  // Control flow.
  For,          // (lb, ub, step, init_0..init_n); region(0) args: (iv, carried_0..n) -> yield n;
                // attr: flag = flatten (tl::RangeOptions; jit/passes/fuse_nested_loops.h)
  If,           // (cond); region(0) then, region(1) else; each yields the results
  While,        // (init_0..n); region(0) before(carried_0..n) -> yield (i1 cond);
                // region(1) body(carried_0..n) -> yield n; runs body while cond; results: the last carried
  Yield,        // terminator of a region: its operands are the region's results
  // Debugging and hints.
  Print,        // operands printed; attr: str = prefix
  Assert,       // (cond [, i64 payload...]); attr: str = message, ints = {CheckKind, ...} for debug
                // checks (jit/passes/debug_checks.h); device-side check
  DebugBarrier, // synchronises a program's threads (tl::debug_barrier); no operands
  MultipleOf,   // identity; attr: ints = divisor per dim (hint for axis info)
  MaxContiguous,// identity; attr: ints = contiguity per dim (hint)
  // GPU layouts (jit/passes/assign_layouts): the same value in another layout (its result's layout
  // is in the LayoutMap). Only the CUDA backend's pipeline inserts it.
  ConvertLayout,
};

const char* op_name(OpKind k);  // "add", "load", ...
bool is_elementwise(OpKind k);  // same-shape pointwise ops (arith, math, cmp, select, casts, addptr)
bool has_side_effects(OpKind k);  // stores, atomics, print, assert
// The input_precision values of a dot on fp32 operands: "tf32", "tf32x3", "ieee".
inline bool is_input_precision(const std::string& p) { return p == "tf32" || p == "tf32x3" || p == "ieee"; }

class Op;
class Block;
class Function;

// One operand slot that reads a value: operand `operand` of `user`.
struct Use {
  Op* user;
  uint32_t operand;
};

class Value {
 public:
  Type type;
  Op* def = nullptr;        // defining op, or nullptr for a block argument
  Block* owner = nullptr;   // for block arguments: the block
  int index = 0;            // result index in def, or argument index in owner
  int id = -1;              // stable numbering, assigned by Function::renumber

  bool is_block_arg() const { return def == nullptr; }
  // Every operand slot reading this value, in no particular order. Kept by Function's operand
  // edits, so replacing a value costs its uses, not a walk over the function.
  const std::vector<Use>& uses() const { return uses_; }
  bool has_uses() const { return !uses_.empty(); }

 private:
  friend class Function;
  std::vector<Use> uses_;
};

// An op's operands: read like a std::vector<Value*>; changed only through Function
// (set_operands, add_operand, replace_all_uses, release_uses), which keeps every
// value's use list in step.
class Operands {
 public:
  using const_iterator = std::vector<Value*>::const_iterator;
  Operands() = default;
  Operands(const Operands&) = delete;
  Operands& operator=(const Operands&) = delete;

  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  Value* operator[](size_t i) const { return values_[i]; }
  Value* at(size_t i) const { return values_.at(i); }
  Value* front() const { return values_.front(); }
  Value* back() const { return values_.back(); }
  const_iterator begin() const { return values_.begin(); }
  const_iterator end() const { return values_.end(); }
  const std::vector<Value*>& vec() const { return values_; }
  operator const std::vector<Value*>&() const { return values_; }

 private:
  friend class Function;
  std::vector<Value*> values_;
  std::vector<uint32_t> use_at_;  // use_at_[i]: where slot i sits in values_[i]->uses()
};

struct Attrs {
  int64_t ival = 0;            // integer/bool constants
  double fval = 0.0;           // float constants
  int axis = 0;                // program_id / reduce / scan / expand_dims axis
  bool flag = false;           // keep_dims (reduce), reverse (scan)
  std::vector<int64_t> ints;   // arange bounds, permutation, reshape shape, hints, load flags
  std::string str;             // print prefix, assert message

  bool operator==(const Attrs&) const = default;
};

class Block {
 public:
  std::vector<Value*> args;
  std::vector<Op*> ops;  // program order; a region's last op is its Yield (if it yields)
  Op* parent = nullptr;  // the op owning this region; nullptr for the function body
};

class Op {
 public:
  OpKind kind;
  Operands operands;
  std::vector<Value*> results;
  std::vector<Block*> regions;
  Attrs attrs;
  SourceLoc loc;
  Block* parent = nullptr;

  Value* result() const { return results.at(0); }
  Value* operand(size_t i) const { return operands.at(i); }
};

// A kernel parameter after specialisation.
struct Param {
  std::string name;
  Type type;               // scalar (pointer or number)
  int divisibility = 1;    // known divisor (16 when specialised), for pointers in bytes
};

class Function {
 public:
  explicit Function(std::string name);
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  std::string name;
  std::vector<Param> params;
  Block* body;  // args = one Value per param

  // Creation (the Function owns everything).
  Block* new_block(Op* parent);
  Value* new_value(const Type& t);
  Op* new_op(OpKind kind, SourceLoc loc);
  Value* add_block_arg(Block* b, const Type& t);
  void erase_block_arg(Block* b, int index);  // the argument must be unused
  Value* add_result(Op* op, const Type& t);

  // Walk every op, nested regions included, in program order (pre-order).
  template <class F> void walk(F&& f) { walk_block(body, f); }
  template <class F> static void walk_block(Block* b, F& f) {
    for (Op* op : b->ops) {
      f(op);
      for (Block* r : op->regions) walk_block(r, f);
    }
  }
  // Operand edits; each keeps the use lists (Value::uses) exact.
  void set_operands(Op* op, std::vector<Value*> operands);  // op must have none yet
  void add_operand(Op* op, Value* v);
  // Operand `i` of `op` reads `v` instead (O(1)).
  void set_operand(Op* op, size_t i, Value* v);
  // Every use of `from` reads `to` instead; costs the uses of `from`.
  void replace_all_uses(Value* from, Value* to);
  // Drops the uses made by `op` and by every op nested in its regions, for an op a pass removes
  // from its block (it stays allocated, with no operands).
  void release_uses(Op* op);
  void renumber();  // ids in program order, used by the printer
  size_t num_ops() const { return ops_.size(); }  // ops ever created, removed ones included

 private:
  static void unlink_use(Op* op, size_t i);
  std::deque<Value> values_;
  std::deque<Op> ops_;
  std::deque<Block> blocks_;
};

}  // namespace tritium::ir
