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
//   tensor_cores.cpp         dot, matmul loops, mma.sync/wgmma, the store of C (tf32_tiles.cpp:
//                            tf32 tiles; tma.cpp: TMA)
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
// layout conversion for elementwise chains between them.
//
// Tensor cores: the result shape of a tensor-core `dot` uses the mma fragment mapping instead, and
// a matmul main loop (acc = dot(load, load, acc) with advancing pointers) streams its operand
// tiles through swizzled shared-memory stages with cp.async into mma.sync or wgmma (see
// jit/cuda/tensor_cores.cpp and docs/cuda-backend.md).
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
#include "jit/cuda/tma.h"
#include "jit/passes/block_plan.h"

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
  int counter_ = 0;
  int64_t smem_budget_;
  int64_t smem_ = 0, scratch_ = 0;
  int64_t smem_peak_ = 0;  // the high-water mark of smem_, which falls back after a matmul loop's stages
  int num_asserts_ = 0;
  bool has_print_ = false;
  // Persistent programs (codegen.cpp, run): allowed for this kernel (Hopper, no atomics, its last
  // memory access a masked top-level store of a 2-D block), and taken
  // (a store went through the copy engine): resident CTAs then walk over the programs.
  bool may_persist_ = false, persistent_ = false;
  const ir::Op* last_memory_op_ = nullptr;  // the last load, store or atomic in program order
  // The deferred C copy (store_through_tma): its statements, and whether a TMA loop calls it.
  std::string store_flush_;
  bool flush_calls_ = false;
  std::vector<std::string> tma_maps_;  // KernelSource::tma_maps (at most kMaxTensorMaps)
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

  // Tensor cores (jit/cuda/tensor_cores.cpp). The warp tiling of the result shape of a dot that
  // runs on mma.sync: WM x WN warps, each owning a WTM x WTN tile of MT x NT fragments of 16 x 8.
  // Loop nests over such a shape use the fragment mapping (V = 2, see thread_loop) so that the
  // accumulators, the loop-carried value and the epilogue are one register array.
  // On Hopper (sm_90a, num_warps % 4 == 0) the units are warpgroups of 4 warps and the tiles
  // 64 x WTN (wgmma.m64nWTNk16); warp w % 4 of a warpgroup owns rows 16 (w % 4) .. + 15 of each
  // 64-row tile, the same fragments as mma.sync's, so both instructions can fill this mapping.
  struct MmaTiling {
    int WM = 1, WN = 1;          // units (warps, or warpgroups) along M and N
    int64_t WTM = 16, WTN = 16;  // a unit's tile
    int MT = 1, NT = 2;          // its fragments: MT row tiles of row_step rows, NT column tiles of 8
    int row_step = 16;           // 16 (mma.sync), 64 (wgmma)
    bool wgmma = false;
    // C++ expressions of the unit's tile origin for thread `tid`.
    std::string m0() const {
      return wgmma ? fmt::format("((tid >> 7) / {}) * {} + ((tid >> 5) & 3) * 16", WN, WTM)
                   : fmt::format("((tid >> 5) / {}) * {}", WN, WTM);
    }
    std::string n0() const { return fmt::format("((tid >> {}) % {}) * {}", wgmma ? 7 : 5, WN, WTN); }
    bool operator==(const MmaTiling&) const = default;
  };
  std::map<Shape, MmaTiling> mma_map_;
  static constexpr int64_t kMaxMmaWords = 128;  // accumulators per thread (Triton's 128 x 256, 8 warps)
  // A `tl::range` loop that is a matmul main loop: acc = dot(load(a), load(b), acc) with pointers
  // advanced by a loop-invariant step; its operand tiles stream through num_stages shared-memory
  // buffers with cp.async (emit_mma_loop).
  struct MmaLoop {
    size_t acc = 0;  // the carried accumulator
    const ir::Op* dot = nullptr;
    const ir::Op* load_a = nullptr;
    const ir::Op* load_b = nullptr;
    std::vector<std::pair<size_t, const ir::Value*>> pointers;  // carried pointer block -> its step
    // Carried integer scalars advanced by a loop-invariant step (a block pointer's offsets):
    // init + trip * step at any trip.
    std::vector<std::pair<size_t, const ir::Value*>> counters;
  };
  std::unordered_map<const ir::Op*, MmaLoop> mma_loops_;
  int matmul_loops_ = 0;  // loops emitted by emit_mma_loop (KernelSource::matmul_loops)
  // Carried pointer blocks of an MMA loop, evaluated as init + trip * step: `at` is the init's
  // value at the element being evaluated (a hoisted register), `trip` the trip number.
  struct Affine {
    const ir::Value* step;
    std::string at, trip;
  };
  std::unordered_map<const ir::Value*, Affine> affine_;

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

  // Whether every use of v reads it at the element of v the using thread owns in the register
  // mapping of v's shape: elementwise chains evaluated in a loop nest over that shape, stores
  // through pointers of that shape, whole-block reductions, loop inits and yields.
  bool only_own_elements(const ir::Value* v);

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

  // Inline loads reached from v through ops that keep the last index (elementwise, hints,
  // broadcasts and expand_dims that leave the last dim alone), with their index.
  void collect_loads(const ir::Value* v, const Index& idx, std::vector<std::pair<const ir::Op*, Index>>& out);

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

  // ---- memory (element_memory.cpp; the store of C: tensor_cores.cpp) -------------------------------

  std::string scalar_load(const ir::Op* op);

  void emit_store(const ir::Op* op);

  // A store of a fragment-mapped value (a matmul's C): the fragments own 2 consecutive elements
  // (4-byte stores, 8 rows per warp instruction), so the value goes through shared memory - rows
  // padded by 16 bytes, conflict-free for the fragment writes - and leaves as 16-byte row chunks,
  // coalesced, as Triton's epilogue does. Needs the pointer contiguous and the mask constant
  // over the 16 bytes, and the room in shared memory.
  bool store_through_shared(const ir::Op* op);
  // Its two halves over a buffer in the layout `at` gives (row, column -> element index): the
  // fragments written in, then 16-byte row chunks out to the store's pointers (and mask).
  using BufferIndex = std::function<std::string(const std::string&, const std::string&)>;
  void write_fragments(const ir::Value* val, const std::string& buf, const BufferIndex& at);
  void store_row_chunks(const ir::Op* op, const std::string& buf, const BufferIndex& at);

  // ---- atomics (element_memory.cpp) -------------------------------------------------------------

  void emit_atomic(const ir::Op* op);

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

  // Scans (element_scan.cpp): the parallel scan of jit/cuda/scan.h over padded shared copies.
  void emit_scan(const ir::Op* op);
  // Data movement within a block (jit/cuda/block_data.cpp): counts in shared memory, gathers and
  // splits read from buffers.
  void emit_histogram(const ir::Op* op);
  void emit_gather(const ir::Op* op);
  void emit_split(const ir::Op* op);

  // ---- tensor cores (tensor_cores.cpp, tf32_tiles.cpp, tma.cpp) ---------------------------------

  // The warp tiling of a dot on tensor cores: f16 or bf16 operands (mma.sync.m16n8k16, wgmma), or
  // fp32 ones with input_precision tf32 / tf32x3 (mma.sync.m16n8k8; tf32 also wgmma, whose matmul
  // loops store both tiles K-major and rounded, tf32x3 never); on sm_90a with warpgroups also fp8
  // (f32 result) and int8 (i32 result), K a multiple of 32, through wgmma only; an f32 result otherwise, M and N multiples
  // of 16, K of 16 (8 for tf32), sm_80+, at most kMaxMmaWords accumulators per thread. The warps split M x N so that each
  // loads the fewest fragments per k step (MT ldmatrix.x4 of A, NT / 2 of B, or NT pairs of
  // 32-bit loads for tf32: the same bytes). One shape has one mapping: a dot whose tiling differs
  // from the one its result shape already has (another dot's) gets none and takes the FMA loop.
  std::optional<MmaTiling> mma_tiling(const ir::Op* dot) const;
  static bool is_tf32(const ir::Op* dot) {
    return dot->operand(0)->type.dtype == DType::f32 && (dot->attrs.str == "tf32" || dot->attrs.str == "tf32x3");
  }

  // The shared address (u32) of element (row, col) of an operand tile; ldmatrix reads 16 bytes
  // there (col a multiple of 16 bytes' elements).
  using TileAddress = std::function<std::string(const std::string& row, const std::string& col)>;

  // acc (the fragment mapping of the result) += A[M, K] * B[K, N] for every warp's tiles of `dot`
  // on mma.sync, for any tiling (a warpgroup tiling's fragments are mma.sync's: f16 dots outside
  // matmul loops on Hopper come here too). f16/bf16 (m16n8k16): per k step of 16, ldmatrix.x4
  // loads a 16 x 16 fragment of A per MT and ldmatrix.x4.trans two 16 x 8 fragments of B per
  // NT / 2, then MT x NT mma.sync. fp32 as tf32 (m16n8k8): per k
  // step of 8, ldmatrix.x4 reads a 16 x 8 fragment of A (8 rows of 16 bytes = 4 fp32 per matrix)
  // and two 32-bit loads per thread B's 8 x 8 (N-major, no ldmatrix for 32-bit transposes).
  // Operands are rounded to tf32 (cvt.rna: unbiased, the hardware would truncate); tf32x3 also
  // runs the products of the rounding rests (small * big + big * small + big * big), close to fp32.
  void emit_mma_tiles(const MmaTiling& t, int64_t K, const ir::Op* dot, const TileAddress& a_at, const TileAddress& b_at,
                      const std::string& acc);

  // The wgmma matrix descriptors of this warpgroup's A and B tiles in the stage at shared
  // addresses a0 / b0. The warpgroup index comes through a shuffle from lane 0, so the compiler
  // knows it is warp-uniform and keeps the descriptors in uniform registers (without it every trip
  // rebuilt them in per-thread registers and moved them over, R2UR, between the wgmma).
  std::pair<std::string, std::string> wgmma_descriptors(const MmaTiling& t, int64_t BK, DType in, bool b_kmajor,
                                                        const std::string& a0, const std::string& b0);

  // acc += A * B on Hopper for a warpgroup tiling: per 32 bytes of K and 64-row tile, one
  // wgmma.mma_async.m64nWTNk{16|32} reading both operands from the swizzled stage buffers through
  // matrix descriptors (A K-major; B N-major - the transposed-B form, 16-bit types only - or
  // K-major when b_kmajor), accumulators in the
  // fragment mapping; committed, then waited for until `in_flight` groups remain (the stage they
  // read stays untouched until a later trip's barrier). da / db: the descriptors of the stage read
  // (wgmma_descriptors plus the stage's offset).
  void emit_wgmma_tiles(const MmaTiling& t, int64_t BM, int64_t BN, int64_t BK, DType in, bool b_kmajor,
                        const std::string& da, const std::string& db, const std::string& acc, int in_flight);

  // A dot outside a matmul loop (or one that did not match): the operands are buffers in shared
  // memory (row-major), the accumulator a register array in the fragment mapping.
  bool emit_dot_mma_tiles(const ir::Op* op);

  // Whether check holds for v and everything its inline computation reads; check(x): 1 holds
  // (stop there), 0 fails, -1 look at x's operands. Each value is visited once (kernels share
  // subexpressions, e.g. Philox rounds: a plain recursion would be exponential).
  bool all_inputs(const ir::Value* v, const std::function<int(const ir::Value*)>& check);
  // Whether evaluating v at an element reads a register value (or a block argument).
  bool reads_registers(const ir::Value* v);

  // Scalars and inline values of a loop body computable for any trip from the induction
  // variable (unless `invariant`), the carried pointers `carried` and inline values from before
  // the loop.
  bool trip_computable(const ir::Value* v, const ir::Block* body, const std::vector<const ir::Value*>& carried,
                       bool invariant = false);
  // A value from before a loop that can be evaluated at any element anywhere: a scalar, or an
  // inline block value built from scalars (no buffer, no registers, no carried value).
  bool outer_inline(const ir::Value* v);

  std::optional<MmaLoop> match_mma_loop(const ir::Op* loop);

  // Binds the body's scalars that `roots` need for the trip whose induction variable is `iv`
  // (computed again there), and an MMA loop's counters at trip number `trip`; returns the
  // bindings to restore.
  std::unordered_map<const ir::Value*, std::string> bind_trip(const ir::Op* loop, const std::vector<const ir::Value*>& roots,
                                                             const std::string& iv, const MmaLoop* m = nullptr,
                                                             const std::string& trip = "");

  // Swizzled shared-memory layout of an R x C tile, in 16-byte chunks (RC = C / 8 of them a row
  // for 16-bit elements, C / 4 for 32-bit): rows of 128 bytes (64 columns; wider tiles are stored as C / 64 such column
  // blocks one after the other) with chunk ch of row r at ch ^ (r % 8); narrower rows of 64 (32)
  // bytes XOR with (r / 2) % 4 ((r / 4) % 2). These are the 128/64/32-byte swizzles of wgmma's
  // shared-memory operands (Swizzle<3|2|1,4,3> on the byte address, tiles 1024-byte aligned), and
  // the 8 rows one ldmatrix reads fall in 8 different 16-byte bank groups.
  static std::string tile_chunk(const std::string& row, const std::string& ch, int64_t R, int64_t rc);

  // One operand tile of an MMA loop: its load for trip `trip` into shared memory at `base`
  // (a u32 address). 16-byte cp.async per chunk when the pointer is contiguous and aligned (the
  // mask checked per chunk: all lanes on, or all off with a zero `other` = zero fill; element
  // loads otherwise), element loads and shared stores when it is not.
  struct TileLoad {
    const ir::Op* load;
    int64_t R, C;
    int epc;  // elements per 16-byte chunk
    bool vector;
    bool transposed;  // stored K-major: the tile's rows are the load's dim 1 (B's N), chunks along dim 0
    // wgmma reads the tile (the async proxy): a thread that writes it with st.shared (element loads,
    // a chunk across the mask's edge) fences after its write. cp.async writes need no fence (as in
    // Triton's fence insertion and CUTLASS's cp.async wgmma mainloops).
    bool async_reader = false;
    // fp32 operands of a tf32 wgmma: loaded into registers (load_tf32_tiles; 16-byte chunks where
    // `vector` says so) and rounded to tf32 on their way to the stage (wgmma reads shared memory as
    // it is and would truncate the low mantissa bits).
    bool round_tf32 = false;
    // The load's index of tile element (row, col).
    Index at(const std::string& row, const std::string& col) const { return transposed ? Index{col, row} : Index{row, col}; }
    std::vector<std::pair<const ir::Value*, std::string>> hoisted;  // carried pointer -> per-chunk inits
  };
  int64_t chunks_per_thread(const TileLoad& tl) const { return (tl.R * tl.C / tl.epc + nt_ - 1) / nt_; }
  // When the threads cover whole rows of chunks (NT a multiple of the chunks per row), thread
  // tid's j-th chunk is in column tid % rc of row tid / rc + j * step: the step, else 0.
  int64_t chunk_row_step(const TileLoad& tl) const {
    int64_t rc = tl.C / tl.epc;
    return nt_ % rc == 0 ? nt_ / rc : 0;
  }
  // The per-thread chunk loop of a vector tile load: fn(row, ch, j).
  void for_each_chunk(const TileLoad& tl, const std::function<void(const std::string&, const std::string&, const std::string&)>& fn);
  TileLoad plan_tile_load(const ir::Op* ld, bool transposed);
  // Tiles of TileLoad::round_tf32: a thread's elements go through registers (declared first), all
  // of its loads before its stores into the stages at `bases`, which round them (the stores'
  // memory clobbers would otherwise hold each load until the store before it; a matmul loop issues
  // the loads of a refill before the trip's wgmma and rounds and stores after its barrier, so no
  // instruction waits for the loads until then).
  // How: 16-byte chunks along K (K-contiguous memory: A, or B given as its transpose), blocks of
  // 4 x 4 transposed in registers (B K-major from N-contiguous memory), else element by element.
  enum class TF32Load { Chunks, Blocks, Elements };
  TF32Load tf32_load_mode(const TileLoad& tl);
  void each_tf32_element(const TileLoad& tl,
                         const std::function<void(const std::string& i, const std::string& row, const std::string& col)>& fn);
  void each_tf32_block(const TileLoad& tl,
                       const std::function<void(const std::string& i, const std::string& nb, const std::string& kb)>& fn);
  std::string tf32_chunk_value(const ir::Op* ld, const Index& at, int dim);
  // A matmul loop's carried pointers at the load index `idx` of trip `trip` (affine_: init at
  // idx + trip * step); the caller clears affine_ after its evals.
  void bind_carried_pointers(const ir::Op* loop, const MmaLoop& m, const Index& idx, const std::string& trip);
  // A load's value at `idx` through `ptr`: `mask ? *ptr : other` (other defaults to zero).
  std::string masked_element(const ir::Op* ld, const Index& idx, const std::string& ptr);
  // The mask of each of `lanes` consecutive lanes along `dim` from `at` - one when the axis info
  // says it is constant over them.
  std::vector<std::string> lane_masks(const ir::Value* mask, const Index& at, int dim, int lanes);
  std::vector<std::string> declare_tf32_registers(const std::vector<const TileLoad*>& tiles);
  void load_tf32_tiles(const std::vector<const TileLoad*>& tiles, const std::vector<std::string>& vals, const ir::Op* loop,
                       const MmaLoop& m, const std::string& trip);
  void store_tf32_tiles(const std::vector<const TileLoad*>& tiles, const std::vector<std::string>& vals,
                        const std::vector<std::string>& bases);
  // The tiles of one trip from raw fp32 stages at `raw_bases` (cp.async'd as raw_tf32_tile plans
  // them) into registers arranged as load_tf32_tiles arranges them (Chunks and Blocks modes only).
  void read_tf32_stage(const std::vector<const TileLoad*>& tiles, const std::vector<std::string>& vals,
                       const std::vector<std::string>& raw_bases);
  // How a tf32 tile (TileLoad::round_tf32) is copied raw into a stage for read_tf32_stage: as its
  // K-major buffer when its memory runs along K, as rows of N (a B read as Blocks) otherwise;
  // nullopt when it has no 16-byte chunks to copy.
  std::optional<TileLoad> raw_tf32_tile(const TileLoad& tl);
  // The inits of the carried pointers a vector tile load reads through, at each of the thread's
  // chunks, into registers before the loop (TileLoad::hoisted).
  void hoist_carried_pointers(TileLoad& tl, const ir::Op* loop, const MmaLoop& m);
  // A tile the bulk tensor copy engine (TMA) can fill or drain: the analysis both generators share
  // (jit/cuda/tma.h), called for a matmul loop's tile (not transposed, 16-byte chunks, read through
  // a carried pointer block or a block pointer) and for the store of C (tma.cpp).
  using TmaTile = cuda::TmaTile;
  TmaContext tma_context();
  std::optional<TmaTile> plan_tma(const TileLoad& tl, const ir::Op* loop, const MmaLoop& m);
  std::optional<TmaTile> plan_tma_store(const ir::Op* st);
  // The store that takes a planned C tile (tensor_cores.cpp): the fragments into a swizzled buffer
  // the copy reads.
  bool store_through_tma(const ir::Op* op, const TmaTile& tile);
  void emit_tile_load(const TileLoad& tl, const ir::Op* loop, const MmaLoop& m, const std::string& trip,
                      const std::string& base);
  // One 16-byte chunk of a vector tile load: where it goes, where it comes from, its lanes' masks.
  struct ChunkAccess {
    std::string row, col, dst, ptr;
    std::vector<std::string> masks;  // one when the mask is constant over the chunk
    std::string all, whole;          // every lane loads; cp.async can move the chunk (both empty unmasked)
  };
  ChunkAccess chunk_access(const TileLoad& tl, const ir::Op* loop, const MmaLoop& m, const std::string& trip,
                           const std::string& base, const std::string& row, const std::string& ch, const std::string& j);
  // A chunk across the mask's edge, element by element through st.shared.
  void emit_edge_chunk(const TileLoad& tl, const ChunkAccess& a);
  // A vector tile load in two halves, so that the addresses and masks are computed before a
  // barrier and the cp.async issued right after it (Triton's loop does the same): per-thread
  // arrays of each chunk's shared and global address, whether it is read (not past the last
  // trip, where it zero-fills a retired slot) and whether cp.async moves it whole.
  struct StagedLoad {
    std::string dst, src, load, whole;  // load: cp.async reads (else zero-fills); whole: empty unmasked
  };
  StagedLoad stage_tile_load(const TileLoad& tl, const ir::Op* loop, const MmaLoop& m, const std::string& trip,
                             const std::string& base, const std::string& live);
  void issue_staged_load(const TileLoad& tl, const StagedLoad& s, const ir::Op* loop, const MmaLoop& m,
                         const std::string& trip, const std::string& base);

  // A matmul main loop (match_mma_loop) with its operand tiles streamed through S = num_stages
  // shared-memory buffers: the tiles of trips t + 1 .. t + S - 1 are in flight (cp.async groups,
  // or TMA copies on the stages' mbarriers where plan_tma takes both tiles) while trip t runs on
  // tensor cores; one barrier per trip, two when a trip's wgmma group stays
  // in flight into the next (Triton's pipeliner, CUTLASS's multistage mainloop). After the loop
  // (and a barrier) the stages' bytes are free for later buffers. False when the buffers do not
  // fit: the loop is then emitted as any other.
  bool emit_mma_loop(const ir::Op* loop, const MmaLoop& m);

  // A dot outside a matmul loop: tensor cores (emit_dot_mma_tiles), else an FMA loop per element.
  void emit_dot(const ir::Op* op);

  // ---- control flow (element_control_flow.cpp) --------------------------------------------------

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
    bool may_write(const ir::Value* root) const {
      return unknown_written || !root || std::find(written.begin(), written.end(), root) != written.end();
    }
    // Whether a trip may load what an earlier trip stored: the trips then need a barrier between them.
    bool trips_reread_writes() const {
      if (written.empty() && !unknown_written) return false;
      if (unknown_written || unknown_read) return true;
      for (const ir::Value* w : written)
        if (std::find(read.begin(), read.end(), w) != read.end()) return true;
      return false;
    }
  };
  static BodyMemory body_memory(const ir::Block* body);

  // The loads of a loop body worth issuing one iteration ahead: in registers, at the body's top
  // level, addresses from the induction variable only, and no store or atomic in the loop that
  // may write what they read (a different kernel parameter is taken as different memory, as
  // Triton's pipeliner assumes).
  std::vector<const ir::Op*> pipelined_loads(const ir::Block* body, const BodyMemory& memory);

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
