// The element-loop CUDA code generator (IR -> CUDA C++, docs/cuda-backend.md): its class, private
// to jit/cuda; its members are the state every file of the generator shares. Definitions, one file
// per op family (the sections below name theirs):
//   codegen.cpp              kernel signature and prologue, output, op dispatch, generate_cuda
//   element_barriers.cpp     __syncthreads after shared or global writes, pending writes across if
//   element_values.cpp       buffers, register values and their planning, materialisation
//   element_loops.cpp        indices and the loop nests over a shape (thread_loop)
//   element_eval.cpp         a value at an index: elementwise ops, views, inline loads; scalar ops
//   element_memory.cpp       vector loads, scalar loads, stores, atomics
//   element_reduce.cpp       combine regions, reductions along an axis (block_reduce.cpp: whole
//                            block; element_scan.cpp: scans)
//   block_data.cpp           histogram, gather, split
//   element_control_flow.cpp for (software pipelining), while, if
//   element_debug.cpp        device_print, device_assert
// Kernels with a `dot` never come here: generate_cuda (codegen.cpp) sends them through layouts
// (jit/cuda/lowering); this generator lowers the dot-free ones.
//
// One program is one CTA of num_warps * 32 threads. Scalars are C++ variables computed
// uniformly by every thread. A block value is either *inline* (evaluated inside the loop nest of
// the op that consumes it, like the CPU backend: elementwise chains, broadcasts and single-use
// loads fuse into one loop) or *materialised* into shared memory (or, past the shared-memory
// budget, a per-CTA slice of a global scratch buffer). A loop nest over a block's elements is
// distributed over the threads: element e = (k * nthreads + tid) * V + lane, where V lets each
// thread move 16 bytes when the axis info says the pointer is contiguous and aligned along the
// last dim; those loads and stores become one 16-byte access (coalesced across the warp) when
// all V lanes are in the mask, element accesses under the mask otherwise. __syncthreads()
// separates a loop that writes a buffer from its readers (and from earlier readers).
//
// Register values: a materialised value (or a loop-carried or `if` result) whose every use reads
// it at the element the using thread itself owns stays in a per-thread array instead of a buffer
// (Triton's blocked layout). All loop nests over its shape then use one mapping, fixed per shape:
// a fully unrolled loop over k < ITER with element (k * nthreads + tid) * V + lane, so that
// array[k * V + lane] is a register. Reductions of a whole block read their input in that mapping
// and combine with warp shuffles and one shared-memory pass; no barrier, no shared memory and no
// layout conversion for elementwise chains between them. Reductions along the last dim whose rows
// sit in aligned lane groups of that mapping keep each row's result in a register too
// (element_reduce.cpp, lane_group), and blocks of at most a warp's elements are replicated in
// every warp for register-only loop nests (replicated, below).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "jit/cuda/cache_hints.h"
#include "jit/cuda/codegen.h"
#include "jit/cuda/scalar_expr.h"
#include "jit/passes/block_plan.h"

namespace tritium::jit::cuda {
struct ScanHooks;  // jit/cuda/scan.h
}

namespace tritium::jit::cuda::detail {
using ir::OpKind;
using ir::Shape;
using Index = std::vector<std::string>;  // one C++ int expression per dim

// Lanes one load or store through `op`'s pointer may move at once along `dim` (-1: the last): as
// many as the axis info proves contiguous and aligned, 16 bytes at most (both generators use it).
inline int access_width(const ir::Op* op, const AxisInfoMap& axis, int dim = -1) {
  const ir::Value* p = op->operand(0);
  if (!p->type.is_ptr() || p->type.is_scalar() || !axis.contains(p)) return 1;
  const AxisInfo& info = axis.get(p);
  const size_t d = dim < 0 ? info.dims() - 1 : static_cast<size_t>(dim);
  int64_t elem = std::max<int64_t>(1, dtype_bytes(p->type.pointee));
  int64_t w = pow2_divisor(info.contiguity[d]);
  w = std::min(w, std::max<int64_t>(1, info.divisibility[d] / elem));
  w = std::min(w, std::max<int64_t>(1, 16 / elem));
  w = std::min<int64_t>(w, p->type.shape[d]);
  return static_cast<int>(w);
}

// A global load (an expression) or store (a statement) of one element through `ptr`: the device
// header's cache-hinted helpers when the op has hints (jit/cuda/cache_hints.h), plain C++ otherwise.
inline std::string load_of(const ir::Op* op, const std::string& ptr) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? "*" + ptr : fmt::format("tt_ld{}({})", s, ptr);
}
inline std::string store_of(const ir::Op* op, const std::string& ptr, const std::string& v) {
  std::string s = cache_hint_suffix(*op);
  return s.empty() ? fmt::format("*{} = {};", ptr, v) : fmt::format("tt_st{}({}, {});", s, ptr, v);
}

class Codegen {
 public:
  Codegen(ir::Function& f, const AxisInfoMap& axis, const CompileOptions& opts, int64_t smem_budget, int cc)
      : f_(f), axis_(axis), nwarps_(std::max(1, opts.num_warps)), nt_(nwarps_ * 32), num_stages_(opts.num_stages),
        cc_(cc), smem_budget_(smem_budget) {}

  KernelSource run();

 private:
  ir::Function& f_;
  const AxisInfoMap& axis_;
  int nwarps_, nt_;
  int num_stages_;
  int cc_;  // compute capability of the target (90 for sm_90a)
  std::string body_, decls_;
  int indent_ = 1;
  bool synced_ = true;
  bool global_dirty_ = false;  // global stores/atomics emitted since the last barrier
  // The kernel parameters those writes went through (unknown_: some pointer was not traced to
  // one): a later load through another parameter needs no barrier (distinct arguments are taken
  // to be distinct memory, as Triton does).
  std::vector<const ir::Value*> dirty_roots_;
  bool dirty_unknown_ = false;
  // The pending global writes above, saved and merged across an if's two sides
  // (jit/cuda/element_barriers.cpp).
  struct DirtyState {
    bool dirty = false, unknown = false;
    std::vector<const ir::Value*> roots;
  };
  DirtyState dirty_state() const;
  void set_dirty_state(const DirtyState& s);
  void merge_dirty_state(const DirtyState& s);  // union: the writes of either path are pending
  int64_t shared_writes_ = 0;  // ops emitted that write shared memory (buffers, partials, slots)
  int64_t shared_writes_synced_ = 0;  // shared_writes_ at the last barrier (emit_if)
  int counter_ = 0;
  int64_t smem_budget_;
  int64_t smem_ = 0, scratch_ = 0;
  int num_asserts_ = 0;
  bool has_print_ = false;
  std::string lane_ = "0";
  // Inside a loop nest's lane loop: its width V, the last index of the lane's element
  // "(base + lane_)" and that of the chunk's first element, "base".
  int lane_width_ = 1;
  std::string lane_index_, lane_base_;

  std::unordered_map<const ir::Value*, std::string> scalars_;
  std::unordered_map<const ir::Value*, std::string> buffers_;
  std::unordered_set<std::string> scratch_bufs_;  // buffers in the global scratch, not shared memory
  BlockPlan plan_;  // which block values get a buffer (shared with the CPU backend)
  std::unordered_map<const ir::Op*, std::string> vec_loads_;  // inline loads moved by a vector access

  // Register values (see the top of this file): the per-thread array of each, the shapes whose
  // loop nests use the register mapping and its width, and the values that also need a buffer
  // copy after their registers are final (a loop or `if` result read at other elements).
  std::unordered_map<const ir::Value*, std::string> regs_;
  std::unordered_set<const ir::Value*> reg_planned_, reg_spill_;
  std::map<Shape, int> mapped_width_;
  std::map<Shape, int> widest_access_;  // per shape: the widest vector access of its loads/stores
  std::unordered_map<const ir::Value*, bool> reg_ok_;  // memo of only_own_elements
  std::unordered_map<const ir::Op*, bool> reg_scan_;     // memo of register_scan
  std::unordered_map<const ir::Value*, bool> nan_unseen_;  // memo of nan_bits_unseen
  // Loads of a run-time loop issued one iteration ahead (software pipelining): load -> the
  // registers the current iteration reads.
  std::unordered_map<const ir::Op*, std::string> prefetched_;
  // The register-mapped loop nest being emitted: its shape, width, k variable and base index.
  struct MappedLoop {
    bool active = false;
    Shape shape;
    int V = 1;
    std::string k;
    Index base;
  } loop_;

  // Small register-mapped shapes (at most a warp's elements, a power of two, fewer than the
  // threads) are replicated: in loop nests that only compute registers or reduce (no writes to
  // memory), thread tid owns element tid & (n - 1), so every warp - every aligned group of n lanes
  // - holds the whole block and reduces it with shuffles alone (Triton's blocked layout of a small
  // tensor). Loop nests that write (stores, atomics, buffers) keep element tid for tid < n, the
  // same element: one copy writes. replicate_ok_ says which kind the current loop nest is.
  bool replicated(const Shape& s) const;
  bool replicate_ok_ = false;

  // Reductions along the last dim whose rows each sit in an aligned group of lanes of the
  // register mapping (element_reduce.cpp, lane_group): the results of the rows a thread's steps
  // touch, one register per step, read by loop nests in the same mapping (eval).
  struct RowRegisters {
    std::string array;
    Shape shape;  // the reduced operand's
    bool keep_dims = false;
  };
  std::unordered_map<const ir::Value*, RowRegisters> row_regs_;
  // Lanes a row takes when `reduce` can combine in lane groups (0: it cannot): the last axis, K / V
  // lanes a power of two <= 32, the mapping's steps all full and at most kMaxRowSteps of them.
  int lane_group(const ir::Op* reduce);
  static constexpr int64_t kMaxRowSteps = 16;
  void emit_lane_group_reduce(const ir::Op* op, const std::vector<std::string>& types, const std::vector<std::string>& outs, int G);
  // The row register of reduce result v at idx in the current loop nest ("" when none).
  std::string row_register_at(const ir::Value* v, const Index& idx);
  // Whether block value v is elementwise arithmetic on such results (and scalars, constants):
  // evaluated inline at each use instead of materialised, it stays in the row registers inside
  // the mapping and reads the results' buffer elsewhere (silu_mul_quant_fp8's scale, used by
  // the quantisation and by the scale store).
  bool from_row_results(const ir::Value* v);


  // ---- output (codegen.cpp; barriers: element_barriers.cpp) -------------------------------------

  void line(const std::string& s);
  void open(const std::string& s);
  void close();
  // Inline values already evaluated in the enclosing scopes: (op, index) -> variable. A value
  // used several times in one loop nest is computed once per element.
  std::vector<std::unordered_map<std::string, std::string>> memo_ = std::vector<std::unordered_map<std::string, std::string>>(1);
  const std::string* memo_find(const std::string& key) const;
  std::string fresh(const char* prefix) { return fmt::format("{}{}", prefix, counter_++); }
  std::string tmp(const std::string& type, const std::string& expr);
  void sync();
  void clean();
  void mark_global_write(const ir::Value* ptr);
  // Whether a load through ptr may read what this program wrote since the last barrier.
  bool may_read_written(const ir::Value* ptr) const;
  // Whether evaluating these values inline reads global memory (a load not yet materialised).
  bool reads_global(const std::vector<const ir::Value*>& vs);
  void sync_if_reading(const std::vector<const ir::Value*>& vs);
  // Global memory this CTA wrote (stores, atomics) may be read back by other threads of the CTA:
  // a barrier before the next loop nest or scalar load keeps program order within the program.
  void sync_after_global_writes();

  // ---- buffers (element_values.cpp) -------------------------------------------------------------

  // Shared memory while the budget lasts, else this CTA's slice of the global scratch.
  std::string alloc_buffer(const ir::Type& t);
  // A small shared array (reduction partials, broadcast slots): always in shared memory.
  std::string alloc_shared(const std::string& ct, int64_t count, int64_t elem_bytes);

  // Evaluates `v` over its whole shape into buffer `buf`.
  void materialize_into(const ir::Value* v, const std::string& buf, const ir::Op* op = nullptr);

  void copy_buffer(const std::string& from, const std::string& to, const ir::Type& t);

  // ---- register values (element_values.cpp) -----------------------------------------------------

  // Per-thread registers a register value of type t would take: elements per thread (whole
  // mapping steps of V) times 32-bit words per element.
  int64_t register_words(const ir::Type& t, int V);
  static constexpr int64_t kMaxRegisterWords = 64;  // per value; past it the buffer is cheaper than spills
  static constexpr int64_t kMaxPrefetchWords = 32;  // per load issued one loop trip ahead
  static constexpr int64_t kMaxDeepPrefetchWords = 16;  // all loads of a loop, when more than one trip ahead
  // Loads a loop uses once get registers to be issued a trip ahead while all its copies a trip
  // ahead stay within this (plan_registers); multi-use loads have registers anyway. Three rows of
  // 16 registers (Liger's RMSNorm backwards: bf16 4096 on 8 warps), not a second full-size load
  // (32) beside one already ahead: that would cost an occupancy step where other CTAs hide latency.
  static constexpr int64_t kMaxPrefetchWordsPerLoop = 48;

  // Whether every use of v reads it at the element of v the using thread owns in the register
  // mapping of v's shape: elementwise chains evaluated in a loop nest over that shape, stores
  // through pointers of that shape, whole-block reductions, loop inits and yields.
  bool only_own_elements(const ir::Value* v);
  // Whether bf16 result v may round without the NaN fix-up (scalar_expr.h, nan_bits_unseen):
  // 2 of the 3 instructions of each rounding (Liger's poly_norm forward rounds 182 times a thread).
  bool nan_unseen(const ir::Value* v) {
    if (v->type.dtype != DType::bf16) return false;
    return nan_bits_unseen(v, [&](const ir::Value* x) -> const std::vector<ir::Op*>& { return plan_.users(x); }, nan_unseen_);
  }

  // The width of the register mapping of a shape: the widest vector access of the kernel's loads
  // and stores of that shape, narrowed as choose_width narrows.
  int mapped_width(const Shape& s);

  void plan_registers();

  bool mapped(const Shape& s, int V) const;

  // The register of v for index idx inside the mapped loop nest, or "" when idx is not an
  // element the current thread owns (a lane of the current step).
  std::string register_at(const std::string& array, const ir::Value* v, const Index& idx);

  // Declares the per-thread array of a register value of type t.
  std::string declare_registers(const ir::Type& t);

  // array[own elements] = v (or op evaluated at them, for v's own definition).
  void fill_registers(const std::string& array, const ir::Value* v, const ir::Op* op = nullptr);

  // to = from, two register arrays of one value (free once unrolled: register renaming).
  void copy_registers(const std::string& to, const std::string& from);

  // The buffer copy of a register value read at other elements than its own.
  void spill_registers(const ir::Value* v);

  // ---- indices and loop nests (element_loops.cpp) -----------------------------------------------

  Index index_of(const Shape& s, const std::string& e);

  std::string flatten(const Index& idx, const Shape& s);

  // for each element of `shape`, distributed over the threads, V consecutive elements (of the
  // last dim) per thread and step: pre(base index), body(index of lane) for each lane, post(base).
  // A shape with register values uses its mapping: the steps are unrolled (see the top).
  void thread_loop(const Shape& shape, int V, const std::function<void(const Index&)>& pre,
                   const std::function<void(const Index&)>& body, const std::function<void(const Index&)>& post);

  // ---- vector accesses (element_memory.cpp) -----------------------------------------------------

  // Elements one 16-byte access of `op`'s pointer may move (ignoring the mask: the code checks
  // at run time whether all lanes are on).
  int access_width(const ir::Op* op, int dim = -1);  // dim -1: the last

  // Inline loads reached from the roots through ops that keep the last index (elementwise, hints,
  // broadcasts and expand_dims that leave the last dim alone), each with its index, once.
  void collect_loads(const std::vector<const ir::Value*>& roots, const Index& idx,
                     std::vector<std::pair<const ir::Op*, Index>>& out);

  // The lanes per thread of a loop nest over `shape` evaluating `roots` (and storing through
  // `store`, when given): the narrowest vector access among them, 1 when there is none.
  int choose_width(const Shape& shape, const std::vector<const ir::Value*>& roots, const ir::Op* store);

  static const char* vector_type(int64_t bytes);

  // Before the lanes of a loop step: the inline loads of `roots` that move V contiguous elements
  // become one vector load into a per-thread array (element loads under the mask when some lane
  // is off); the lanes read the array.
  void emit_vector_loads(const std::vector<const ir::Value*>& roots, const Index& base, int V);
  // One load of V lanes as V / w accesses of w lanes (w: the op's own access width, below V).
  void emit_split_vector_load(const ir::Op* op, const Index& idx, int V, int w);

  // ---- evaluation of block values at an index (element_eval.cpp) --------------------------------

  std::string scalar(const ir::Value* v);

  std::string eval(const ir::Value* v, const Index& idx);

  std::string eval_op(const ir::Op* op, const Index& idx);

  // ---- constants and arithmetic (element_eval.cpp) ----------------------------------------------

  std::string constant_of(const ir::Op* op);

  // ---- memory (element_memory.cpp) -------------------------------------------------------------

  std::string scalar_load(const ir::Op* op);

  void emit_store(const ir::Op* op);
  // Block stores of one shape in one loop nest; every element's values before its stores.
  void emit_stores(const std::vector<const ir::Op*>& ops);
  void emit_vector_store(const ir::Op* op, const Index& base, int V, bool split_store, int w, const std::string& sv,
                         const std::string& sm);


  // ---- atomics (element_memory.cpp) -------------------------------------------------------------

  void emit_atomic(const ir::Op* op);
  bool emit_vector_red(const ir::Op* op);  // element_memory.cpp: a float atomic_add as vector reds
  // The lanes one vector red of `op` adds when a thread takes V lanes (0: lane by lane).
  int vector_red_width(const ir::Op* op, int V);
  // Whether atomic `op` reads block value v (its value or mask) only at the elements the thread
  // owns in v's register mapping.
  bool atomic_reads_own(const ir::Op* op, const ir::Value* v);

  // ---- reductions (element_reduce.cpp, block_reduce.cpp), scans, block data -----------------------

  // Emits a combine region on scalars: args lhs..., rhs... -> the yielded values.
  std::vector<std::string> combine(const ir::Block* region, const std::vector<std::string>& lhs,
                                   const std::vector<std::string>& rhs);

  // acc = have ? combine(acc, x) : x; have = true.
  void accumulate(const ir::Block* region, const std::string& have, const std::vector<std::string>& acc,
                  const std::vector<std::string>& x);

  // Combines (acc, have) across the 32 lanes of each warp; every lane gets the result. When every
  // lane holds a value (all_have), the flags are not exchanged.
  void warp_reduce(const ir::Block* region, const std::string& have, const std::vector<std::string>& acc,
                   const std::vector<std::string>& types, bool all_have);

  void emit_reduce(const ir::Op* op);
  // A reduction of the whole block to one value (jit/cuda/block_reduce.cpp); outs: the output
  // buffers of a keep_dims result, empty for a scalar one.
  void emit_block_reduce(const ir::Op* op, const std::vector<std::string>& types, const std::vector<std::string>& outs);
  void declare_accumulators(const std::vector<std::string>& types, std::vector<std::string>& acc, std::string& have);

  // Scans (element_scan.cpp): the parallel scan of jit/cuda/scan.h over padded shared copies,
  // or, for a register_scan, in the register mapping (emit_register_scan).
  void emit_scan(const ir::Op* op);
  // Whether a scan runs in registers: forward along the last dim, its results register values in
  // their shape's mapping (every step of the mapping full), the mapping's segments of V elements
  // tiling each row in whole warps or within one (segments a row a multiple or divisor of 32).
  bool register_scan(const ir::Op* op);
  void emit_register_scan(const ir::Op* op);
  // The hooks every emit_parallel_scan call shares: this generator's lines, names and temporaries,
  // and the scan's combine region; the caller adds the element accessors.
  ScanHooks scan_hooks(const ir::Block* region);
  // Data movement within a block (jit/cuda/block_data.cpp): counts in shared memory, gathers and
  // splits read from buffers.
  void emit_histogram(const ir::Op* op);
  void emit_gather(const ir::Op* op);
  void emit_split(const ir::Op* op);

  // ---- control flow (element_control_flow.cpp) --------------------------------------------------

  // Binds the body's scalars that `roots` need for the trip whose induction variable is `iv`
  // (computed again there); returns the bindings to restore.
  std::unordered_map<const ir::Value*, std::string> bind_trip(const ir::Op* loop, const std::vector<const ir::Value*>& roots,
                                                             const std::string& iv);

  // ---- software pipelining (element_control_flow.cpp; pointer_root: element_barriers.cpp) -------

  // The kernel parameter a pointer value is derived from (nullptr: unknown).
  static const ir::Value* pointer_root(const ir::Value* v);

  // Whether v can be computed for another iteration of `body` from the induction variable and
  // values defined outside the loop: pure computation, no loads, no carried values, no buffers
  // or registers of this iteration.
  bool iteration_invariant_but_iv(const ir::Value* v, const ir::Block* body);

  // The global memory a loop body touches, by the kernel parameter each pointer comes from
  // (unknown_*: some pointer could not be traced to one).
  struct BodyMemory {
    std::vector<const ir::Value*> written, read;
    bool unknown_written = false, unknown_read = false;
    // Written parameters whose every access in a trip lies in a window that the next trip's
    // window does not overlap (trips_touch_disjoint_memory): no trip reads another's writes.
    std::vector<const ir::Value*> disjoint_trips;
    bool disjoint(const ir::Value* root) const {
      return std::find(disjoint_trips.begin(), disjoint_trips.end(), root) != disjoint_trips.end();
    }
    // Whether a trip may write what another trip reads (what a load issued a trip ahead reads).
    bool may_write(const ir::Value* root) const {
      return unknown_written || !root ||
             (std::find(written.begin(), written.end(), root) != written.end() && !disjoint(root));
    }
    // Whether a trip may load what an earlier trip stored: the trips then need a barrier between them.
    bool trips_reread_writes() const {
      if (written.empty() && !unknown_written) return false;
      if (unknown_written || unknown_read) return true;
      for (const ir::Value* w : written)
        if (std::find(read.begin(), read.end(), w) != read.end() && !disjoint(w)) return true;
      return false;
    }
  };
  // The memory of `loop`'s body, with the written parameters whose trips are disjoint.
  static BodyMemory body_memory(const ir::Op* loop);
  // Whether every load, store and atomic through `root` in `loop`'s body addresses
  // root + iv * c + (the same loop-invariant scalars) + a constant range narrower than |c * step|
  // (element_barriers.cpp).
  static bool trips_touch_disjoint_memory(const ir::Op* loop, const ir::Value* root);

  // The loads of a loop body worth issuing one iteration ahead: in registers, at the body's top
  // level, addresses from the induction variable only, and no store or atomic in the loop that
  // may write what they read (a different kernel parameter is taken as different memory, as
  // Triton's pipeliner assumes).
  std::vector<const ir::Op*> pipelined_loads(const ir::Block* body, const BodyMemory& memory);
  // Whether `loop` runs at most one trip: a constant step and an upper bound of lb + c (or a min
  // with such a term) with c <= step. Nothing overlaps then; a copy ahead costs registers only.
  static bool at_most_one_trip(const ir::Op* loop);
  // Whether load `op` of `body` can be issued a trip ahead (its value in registers aside): small
  // enough, from memory the body does not write, its operands computable for another trip.
  bool pipelinable_load(const ir::Op* op, const ir::Block* body, const BodyMemory& memory);

  // Loads `loads` for the iteration whose induction variable is `iv` into `arrays`: the scalars
  // of the body they depend on are computed again for that iteration.
  void prefetch(const ir::Op* loop, const std::vector<const ir::Op*>& loads, const std::vector<std::string>& arrays,
                const std::string& iv);

  void emit_for(const ir::Op* op);

  // while (before(carried)) carried = body(carried); carried values are scalars (the DSL only
  // carries scalars), computed uniformly by every thread, so the exit is the same for all of them.
  void emit_while(const ir::Op* op);

  bool updatable_in_place(const ir::Value* v, const ir::Block* body, size_t self, bool same_index);

  void emit_if(const ir::Op* op);

  // ---- debugging (element_debug.cpp) ------------------------------------------------------------

  // printf arguments of one value: (format, argument).
  std::pair<std::string, std::string> print_value(const std::string& x, const ir::Type& t);

  void emit_print(const ir::Op* op);

  void emit_assert(const ir::Op* op);

  // ---- ops in program order (codegen.cpp; emit_scalar: element_eval.cpp) ------------------------

  void emit_block(const ir::Block* block);

  void emit_op(const ir::Op* op);

  std::string emit_scalar(const ir::Op* op);
};

}  // namespace tritium::jit::cuda::detail
