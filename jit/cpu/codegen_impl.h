// The CPU code generator (IR -> LLVM IR, docs/cpu-backend.md): its class, private to jit/cpu; its
// members are the state every file of the generator shares.
//
// Scalars are SSA values. A block value is either *inline* (evaluated inside the loop nest of the
// op that consumes it: that is how chains of elementwise ops, broadcasts and single-use loads
// fuse into one loop) or *materialised* in a stack buffer (values used several times, results
// of reductions/scans/dots/atomics, loop-carried blocks). Loop nests run over a block's shape
// with the last dim in chunks of up to kLanes lanes, as LLVM vectors; a load or store whose
// pointer is contiguous along the chunk (axis info) becomes one llvm.masked.load/store, any
// other becomes a gather/scatter.
//
// Definitions, one file per op family (the sections below name theirs):
//   codegen.cpp       the entry function, op dispatch, lower_to_llvm
//   elementwise.cpp   LLVM types, constants, elementwise arithmetic and casts (exp, tanh, erf inline)
//   loops.cpp         loops, loop nests over a shape, indices
//   values.cpp        buffers (stack or heap), evaluation of a block value at an index
//   transpose.cpp     materialising a transposed view in register-transposed square tiles
//   memory.cpp        loads, stores, atomics
//   lane_patterns.cpp loads whose lanes read a fixed pattern (strided, repeated, reversed)
//   reduce.cpp        combine regions, reductions, scans
//   block_data.cpp    histogram, gather, split
//   dot.cpp           dot (register micro-tiles)
//   control_flow.cpp  for, while, if
//   mask_versions.cpp loop nests in two versions on their bounds masks
//   debug.cpp         device_print, device_assert
#pragma once
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "jit/cpu/codegen.h"
#include "jit/passes/block_plan.h"

namespace tritium::jit::cpu::detail {

using ir::OpKind;
using ir::Shape;
using llvm::Value;

inline constexpr int kLanes = 16;  // lanes per chunk: one 512-bit register of f32

// One dim of an index into a block, for the W lanes of a chunk: base + lane * stride, or an
// arbitrary per-lane vector when not affine. `align` is a power of two known to divide base.
struct VIdx {
  Value* base = nullptr;
  int64_t stride = 0;
  Value* vec = nullptr;
  int64_t align = 1;
};
using Index = std::vector<VIdx>;

inline bool is_atomic(OpKind k) { return k >= OpKind::AtomicAdd && k <= OpKind::AtomicCas; }

class Codegen {
 public:
  Codegen(ir::Function& f, const AxisInfoMap& axis, llvm::LLVMContext& ctx, const VectorRegisters& regs)
      : f_(f), axis_(axis), ctx_(ctx), regs_(regs), b_(ctx), module_(std::make_unique<llvm::Module>("tritium_" + f.name, ctx)) {}

  std::unique_ptr<llvm::Module> run();

 private:
  ir::Function& f_;
  const AxisInfoMap& axis_;
  llvm::LLVMContext& ctx_;
  VectorRegisters regs_;
  llvm::IRBuilder<> b_;
  std::unique_ptr<llvm::Module> module_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* alloca_block_ = nullptr;
  std::vector<std::pair<llvm::AllocaInst*, uint64_t>> buffer_allocas_;

  std::unordered_map<const ir::Value*, Value*> scalars_;   // scalar SSA values
  std::unordered_map<const ir::Value*, Value*> buffers_;   // materialised block values
  BlockPlan plan_;  // which block values get a buffer
  Value* pid_[3] = {};
  Value* nprog_[3] = {};
  Value* launch_ = nullptr;

  // ---- types (elementwise.cpp) ------------------------------------------------------------------

  llvm::Type* reg_type(DType d);
  llvm::Type* mem_type(DType d) { return d == DType::i1 ? b_.getInt8Ty() : reg_type(d); }
  llvm::Type* vec_of(llvm::Type* t, int w) { return llvm::FixedVectorType::get(t, w); }
  // `t` shaped like `like` (a vector of the same width, or a scalar).
  llvm::Type* shaped(llvm::Type* t, Value* like);
  int width_of(Value* v);
  Value* splat(Value* s, int w) { return w == 0 ? s : b_.CreateVectorSplat(w, s); }
  Value* i32(int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }

  // f16, bf16 and fp8 (is_narrow_float) compute in f32.
  Value* to_f32(Value* v, DType d);
  Value* from_f32(Value* v, DType d);
  // fp8_from_float (ir/types.h) on vectors: saturate, then subnormals by rounding a * 2^(bias-1+m)
  // to an integer (nearest even), normals by rounding the f32 mantissa (nearest even) and
  // rebiasing the exponent.
  Value* f32_to_fp8(Value* v, DType d);

  // ---- constants (elementwise.cpp) --------------------------------------------------------------

  Value* constant(DType d, int64_t ival, double fval, bool is_fp);
  Value* constant_of(const ir::Op* op, int w);

  // ---- loops (loops.cpp) ------------------------------------------------------------------------

  // for (iv = begin; iv < end; iv += step) with loop-carried values; returns their final values.
  std::vector<Value*> emit_loop(Value* begin, Value* end, Value* step, std::vector<Value*> inits,
                                const std::function<std::vector<Value*>(Value*, std::vector<Value*>)>& body);

  void emit_loop(int64_t begin, int64_t end, int64_t step, const std::function<void(Value*)>& body);

  // Runs body over `shape`, the last dim in chunks of w lanes (w divides the last dim).
  void loop_nest(const Shape& shape, int w, const std::function<void(const Index&)>& body);

  int lanes_for(const Shape& shape) { return shape.empty() ? 1 : static_cast<int>(std::min<int64_t>(kLanes, shape.back())); }

  // ---- indices (loops.cpp) ----------------------------------------------------------------------

  Value* lane_vector(const VIdx& x, int w);

  static std::vector<int64_t> strides_of(const Shape& s);

  // Row-major flat index of idx in shape.
  VIdx flatten(const Index& idx, const Shape& shape, int w);

  // The index into `to` (same number of elements) of element `idx` of `from` (row-major reshape).
  Index reshape_index(const Index& idx, const Shape& from, const Shape& to, int w);

  // The index into a broadcast's, expand_dims' or permute's operand of its result's element idx
  // (a broadcast's stretched dims at 0).
  Index view_operand_index(const ir::Op* view, const Index& idx);

  // ---- buffers (values.cpp) ---------------------------------------------------------------------

  Value* alloc_buffer(const ir::Type& t);

  // Blocks of up to 2^20 elements would overflow a thread's stack: past kMaxStackBytes in all,
  // the buffers move to one heap block allocated per call of the entry (per chunk of programs).
  static constexpr uint64_t kMaxStackBytes = 256 * 1024;
  void move_large_buffers_to_heap();

  Value* mem_to_reg(Value* v, DType d);
  Value* reg_to_mem(Value* v, DType d);

  Value* read_buffer(Value* buf, const ir::Type& t, const Index& idx, int w);

  void write_buffer(Value* buf, const ir::Type& t, const Index& idx, int w, Value* v);

  // Evaluates `v` over its whole shape into a new buffer.
  Value* materialize_into(const ir::Value* v, Value* buf = nullptr);

  void copy_buffer(Value* from, Value* to, const ir::Type& t);

  // ---- transposed materialisation (transpose.cpp) -----------------------------------------------
  //
  // A block whose loads are contiguous in memory along the dim before the last, not along the
  // last (a transposed view), is materialised in square tiles: wt vectors down that dim, a
  // transpose in registers, wt row vectors stored, instead of one gather per chunk.

  // wt (a power of two >= 4, at most one register of v's dtype) when v's inline tree has such a
  // load and nothing the column order would make worse (a buffer read across rows, a load already
  // contiguous along the last dim, a reshape); 0 otherwise.
  int transposed_lanes(const ir::Value* v);

  void materialize_transposed(const ir::Value* v, Value* buf, int wt);

  // Loops over the outer dims of shape s and its last two dims in wt x wt squares; body gets the
  // outer dims' index and the square's first row and column (aligned bases).
  void for_each_square(const Shape& s, int wt, const std::function<void(const Index&, const VIdx&, const VIdx&)>& body);

  // A store whose pointer is not contiguous along the last dim but likely so down the columns
  // (axis info's stride along the dim before the last is one element: an NCHW output written from
  // a [pixels, channels] tile): wt (a power of two >= 4 dividing both dims) for store_transposed,
  // else 0.
  int transposed_store_lanes(const ir::Op* store);

  // Stores the value in wt x wt squares: wt row vectors transposed in registers, each column
  // stored as one vector down the rows where its lanes that are on write consecutive elements
  // (checked per column at run time), else scattered. Replaces a scatter per row chunk.
  void store_transposed(const ir::Op* store, int wt);

  // The transpose of a square of vectors (rows[i] lane j -> result[j] lane i).
  std::vector<Value*> transpose_square(std::vector<Value*> rows);

  // ---- evaluation of block values at an index (values.cpp) --------------------------------------

  Value* scalar(const ir::Value* v);

  Value* eval(const ir::Value* v, const Index& idx, int w);

  Value* eval_op(const ir::Op* op, const Index& idx, int w);

  // ---- elementwise arithmetic (elementwise.cpp) -------------------------------------------------

  Value* call_per_lane(const char* name32, const char* name64, Value* x, DType d);

  // expf for f32 scalars and vectors, inline (LLVM lowers llvm.exp.v16f32 to 16 libm calls):
  // n = round(x / ln 2), r = x - n ln 2 in two parts (Cody-Waite), exp(r) by Cephes' degree-6
  // polynomial (~1 ulp), times 2^n built in two halves so subnormal results come out right.
  // Overflow gives inf, underflow 0, NaN stays NaN.
  Value* exp_f32(Value* x);
  // exp2f the same way (base2): n = round(x), 2^(x - n) = e^((x - n) ln 2) by the same polynomial.
  Value* exp_f32(Value* x, bool base2);

  // logf (log2f with base2) for f32 scalars and vectors, inline (LLVM lowers llvm.log.v16f32 to
  // 16 libm calls; the op table's log ran at 0.42 x PyTorch's vectorised one on one CPU thread):
  // x = m 2^k with m in [0.75, 1.5) picked from the bits (subnormals scaled by 2^23 first),
  // f = m - 1 exact, log = k ln 2 + f + f^2 P(f), P the degree-8 fit ops/math_approx.h's log1p
  // uses (kLog1pF32, within 1.6 ulp); log2 = k + (f + f^2 P(f)) log2(e), so powers of two are
  // exact. 0 gives -inf, negatives NaN, inf inf, NaN stays NaN.
  Value* log_f32(Value* x, bool base2);

  // sinf / cosf for f32 scalars and vectors, inline (LLVM lowers llvm.sin.v16f32 to 16 libm calls;
  // sin ran at 0.14-0.27 x PyTorch on one CPU thread): j = rint(x 2 / pi), r = x - j pi / 2 in
  // three parts by FMAs (the first product exact for |j| < 2^16), Cephes' sinf /
  // cosf polynomials on |r| <= pi / 4 picked and signed by the quadrant. A vector holding any
  // |x| > 65536 (or an infinity) takes libm for those lanes. NaN stays NaN, sin(-0) = -0.
  Value* sincos_f32(Value* x, bool cosine);

  // i32 of t's shape (a scalar or a vector of as many lanes): the bit patterns of f32 values.
  llvm::Type* i32_like(llvm::Type* t);

  // Horner's rule with fused multiply-adds; `cs` from the highest power down.
  Value* horner(std::initializer_list<double> cs, Value* x);

  // tanhf for f32 scalars and vectors, inline (libm's would be called lane by lane, ~70x slower
  // than exp): Cephes' odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) with x's sign
  // above (exp overflowing to inf gives 1). Within 1.3 ulp of tanh on 450k sampled points
  // (modelling exp as correctly rounded); tanh(-0) = -0, NaN stays NaN.
  Value* tanh_f32(Value* x);

  // erff for f32 scalars and vectors, inline: x Q(x^2) up to |x| = 0.921875 and
  // 1 - exp(R(|x|)) with x's sign above (R fits log(erfc)), 1 from |x| = 4 (erf rounds to 1 in
  // f32 from 3.92). Q (degree 5) and R (degree 8) are least-squares fits on Chebyshev nodes,
  // within 2.4 ulp of erf on 160k sampled points; NaN stays NaN.
  Value* erf_f32(Value* x);

  Value* float_op(OpKind k, std::vector<Value*> x, DType d);

  Value* int_op(OpKind k, std::vector<Value*> x, DType d);

  Value* compare(OpKind k, Value* a, Value* bv, DType d);

  Value* cast(Value* v, DType from, DType to);

  Value* elementwise(const ir::Op* op, const std::vector<Value*>& x);

  // ---- memory (memory.cpp) ----------------------------------------------------------------------

  // The one dim the chunk's lanes move along (stride 1, its base aligned to w); -1 when none moves
  // (every lane the same index), -2 when the index is not of that form.
  static int lane_dim(const Index& idx, int w);

  // Lanes of this chunk are consecutive elements of `ptr` (so one vector access can move them).
  bool contiguous(const ir::Value* ptr, const Index& idx, int w);

  // Every lane of this chunk is the same element (no dim moves with the lane).
  static bool uniform(const Index& idx);

  // Every lane of this chunk reads the same element of `ptr`: no dim moves with the lane, or the
  // pointer is constant along the lanes' dim (axis info: a block broadcast along it, a stride of
  // 0), e.g. a [rows, 1] operand of an element-wise op stretched over the columns.
  bool same_element(const ir::Value* ptr, const Index& idx, int w);

  // The address of the chunk's first lane, evaluated on one lane (scalar arithmetic) rather than
  // extracted from a vector of w addresses (i64 vector adds and widenings LLVM kept: ~6
  // instructions a chunk).
  Value* first_lane_pointer(const ir::Value* ptr, const Index& idx);

  Value* eval_load(const ir::Op* op, const Index& idx, int w);

  // ---- loads along a fixed lane pattern (lane_patterns.cpp) -------------------------------------

  // Lane l's value minus lane 0's for the chunk at idx (pointers in elements), from v's index
  // arithmetic (aranges, splats, views, + - neg, * << by constants, / % by constants assuming the
  // first lane's dividend is a multiple); nullopt when it depends on data or run-time values.
  // `exact`: no division was assumed, so the pattern holds for every chunk (as axis info, integer
  // arithmetic is assumed not to wrap) and needs no run-time check.
  struct LanePattern {
    std::vector<int64_t> offsets;
    bool exact = false;
  };
  std::optional<LanePattern> lane_pattern(const ir::Value* v, const Index& idx, int w);
  struct PatternWalk {
    std::map<std::pair<const ir::Value*, int>, std::optional<std::vector<int64_t>>> seen;
    int visited = 0;
    bool assumed = false;  // a division's alignment was assumed somewhere in the walk
  };
  std::optional<std::vector<int64_t>> lane_pattern(const ir::Value* v, const Index& idx, int w, PatternWalk& walk);
  // lane_pattern's step for one value whose lanes move along dim d.
  std::optional<std::vector<int64_t>> pattern_of(const ir::Value* v, const Index& idx, int w, int d, PatternWalk& walk);

  // A pattern whose span (first to last element read) is short enough for a few vector loads, and
  // not one element.
  bool pattern_worth_loading(const std::vector<int64_t>& pat, DType d);

  // The chunk's elements at p0 + pat (memory type; lanes off in `mask`, which may be null, take
  // `other`): one load of the span the lanes that are on cover and a permutation. With `ptrs`
  // (the lanes' pointers), only when they are exactly p0 + pat, else gather(); without (an exact
  // pattern), unchecked.
  Value* load_by_pattern(Value* p0, Value* ptrs, const std::vector<int64_t>& pat, Value* mask, Value* other, DType d,
                         const std::function<Value*()>& gather);

  void emit_store(const ir::Op* op);

  // if (all lanes of mask) all(); else some(); then continues after both.
  void branch_on_all(Value* mask, const std::function<void()>& all, const std::function<void()>& some);

  // if (cond) body(); cond may be null (always).
  void guarded(Value* cond, const std::function<void()>& body);

  Value* scalar_load(const ir::Op* op);

  // One atomic on one element; returns the old value (register type).
  Value* atomic_one(OpKind k, Value* ptr, Value* val, Value* cmp, DType d);

  void emit_atomic(const ir::Op* op);

  // ---- reductions, scans (reduce.cpp) -----------------------------------------------------------

  // Emits a combine region on vectors (or scalars): args lhs..., rhs... -> yielded values.
  std::vector<Value*> combine(const ir::Block* region, const std::vector<Value*>& lhs, const std::vector<Value*>& rhs);

  Value* shuffle_half(Value* v, int from, int n);

  void emit_reduce(const ir::Op* op);

  void emit_scan(const ir::Op* op);

  // ---- histogram, gather, split (block_data.cpp) ------------------------------------------------

  // One element at a time: counts[x]++ where x is in [0, bins) and the mask holds.
  void emit_histogram(const ir::Op* op);

  // Reads the materialised source at the index's positions (masked gathers); an index outside
  // [0, n) wraps modulo n (a power of two), so a bad index never reads outside the buffer.
  void emit_gather(const ir::Op* op);

  void emit_split(const ir::Op* op);

  // ---- dot (dot.cpp) ----------------------------------------------------------------------------
  //
  // out = a @ b + c on materialised row-major operands, as a register-blocked FMA micro-kernel:
  // a tile of `rows` x `chunks` vectors of C stays in registers across the whole K loop, and each
  // k loads the tile's vectors of B once and broadcasts one element of A per row. The operand
  // buffers are already packed (contiguous, the transposes resolved when they were materialised),
  // so no further packing pays. f16/bf16 and i8 operands are widened as they are read; the
  // accumulation is in f32 (f64 for f64, i32 for integers) and rounded to the result type once.

  struct DotArgs {
    const ir::Value *a, *b, *c;
    const ir::Type& result;
    Value *abuf, *bbuf, *out;
    DType compute;  // accumulation type
    int w;          // lanes per vector chunk of a row of C
  };

  struct MicroTile {
    int64_t rows, chunks;
  };

  // Among the tiles whose accumulators, plus the B vectors of one k and a broadcast A element,
  // fit the vector registers: the most FMAs per load (rows * v / (rows + v) for v registers of B
  // per k), then the fewest edge tiles, then wider (B is read along rows). AVX-512: 6 x 4 f32,
  // 6 x 2 f64 (two registers per 16 lanes); AVX2: 6 rows x 1 chunk of 16 f32.
  MicroTile micro_tile(DType compute, int w, int64_t M, int64_t chunks);

  // The dot writes into c's buffer when c dies here: a materialised value whose only use is as
  // this dot's accumulator (not also an operand), in the same region (not re-read by a later trip
  // of an inner loop). Each tile reads its part of c before writing it, so the update is safe,
  // and a loop-carried accumulator is then neither copied nor given a second buffer.
  Value* dot_output_buffer(const ir::Op* op);

  void emit_dot(const ir::Op* op);

  struct TileRange {
    int64_t begin, end, step;  // rows (or chunks) [begin, end) in tiles of `step`
  };

  void emit_dot_tiles(const DotArgs& d, TileRange rows, TileRange chunks);

  // One rows x chunks tile of C at row i0, column j0: accumulators in registers over all of K.
  void emit_dot_tile(const DotArgs& d, Value* i0, Value* j0, int64_t rows, int64_t chunks);

  // bf16 x bf16 into f32 through VDPBF16PS (regs_.bf16_dot, 16 lanes): interleave(x, y) is
  // x0 y0 x1 y1 ..., bf16_pair_dot adds each lane's pair of products (dot.cpp).
  bool bf16_pairs(const DotArgs& d) const;
  Value* interleave(Value* x, Value* y);
  Value* bf16_pair_dot(Value* acc, Value* a_pairs, Value* b_pairs);
  Value* multiply_add(Value* x, Value* y, Value* acc, DType d);

  // ---- control flow (control_flow.cpp) ----------------------------------------------------------

  void emit_for(const ir::Op* op);

  // while (before(carried)) carried = body(carried), carried values being scalars (the DSL
  // carries only scalars through a while loop): a header that evaluates the condition with phis.
  void emit_while(const ir::Op* op);

  // Whether inline value v can be written straight into the buffer of loop argument `self`:
  // it reads no other loop-carried block, and reads `self` only at the element it writes (through
  // elementwise ops, `same_index`), so each element is read before it is overwritten.
  bool updatable_in_place(const ir::Value* v, const ir::Block* body, size_t self, bool same_index);

  void emit_if(const ir::Op* op);

  // ---- mask versioning (mask_versions.cpp) -----------------------------------------------------
  //
  // Most programs of a launch cover whole blocks, where every lane of their bounds masks is on. A
  // loop nest whose masks (of its loads and its store) are comparisons of integer values built
  // from aranges, splats, constants, + - * / %, min / max, casts and shape ops is emitted twice:
  // one copy, taken when a scalar test on the values' ranges proves those masks on over the whole
  // block, evaluates them as true (plain vector loads and stores, no compare or branch per chunk:
  // ~15 instructions a chunk of 16 lanes for an i64 offset `offs < n`); the other as before.

  struct IntRange {
    Value *lo, *hi;  // i128, inclusive
  };
  // v's dtype-interpreted integer, widened to i128.
  Value* wide_int(Value* v, DType d);
  // The range of every element of integer value v, exact in i128; `valid` collects the conditions
  // under which it holds (each intermediate within its dtype, so the IR's wrapping arithmetic
  // computes the exact values; operands in the domain a rule needs). nullopt: not of that form.
  std::optional<IntRange> int_range(const ir::Value* v, std::vector<Value*>& valid);
  // A scalar i1 true only when every element of i1 block `mask` is true; nullptr when unknown.
  Value* all_true_test(const ir::Value* mask);
  // The masks of the loads in v's inline tree (not through materialised values).
  void collect_masks(const ir::Value* v, std::vector<const ir::Value*>& out, std::unordered_set<const ir::Value*>& seen);
  // emit() under the test that `masks` and the masks of the loads in `roots`' inline trees are all
  // on (those masks evaluating as true), and again for the other case; once when none can be
  // tested or the nest has fewer than a few chunks. Returns emit()'s values (phis of the two).
  std::vector<Value*> versioned_on_masks(std::vector<const ir::Value*> masks, const std::vector<const ir::Value*>& roots,
                                         int64_t chunks, const std::function<std::vector<Value*>()>& emit);
  // A mask known on in every lane (a constant): the access needs no mask.
  static bool all_lanes_on(Value* mask);
  std::unordered_set<const ir::Value*> known_true_;  // masks evaluating as true in this copy

  // ---- debugging (debug.cpp) --------------------------------------------------------------------

  Value* global_string(const std::string& s) { return b_.CreateGlobalStringPtr(s); }

  void emit_print(const ir::Op* op);

  // A failing lane reports its row-major index and the payload values there (debug checks' address
  // and bounds, jit/passes/debug_checks.h); the first failure of the launch is raised after it.
  void emit_assert(const ir::Op* op);

  // ---- ops in program order (codegen.cpp) -------------------------------------------------------

  void emit_block(const ir::Block* block) {
    for (const ir::Op* op : block->ops) emit_op(op);
  }

  void emit_op(const ir::Op* op);

  Value* emit_scalar(const ir::Op* op);

  // ---- the entry function (codegen.cpp) ---------------------------------------------------------

  void emit_entry();
};

}  // namespace tritium::jit::cpu::detail
