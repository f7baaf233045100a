// The layout-based CUDA code generator (docs/cuda-backend.md, "Layouts"): IR whose block values
// carry layouts (jit/passes/assign_layouts) -> CUDA C++, one op in one layout at a time, as
// Triton's per-op conversion patterns lower TritonGPU IR. Private to jit/cuda.
//
// Every block value is a per-thread register array `T v[n]` holding the thread's elements of its
// layout (register r = the element the layout's register bits r name), an expression equal in every
// element (splats and constants), or a tile in shared memory (dot operands, stages). Elementwise ops
// and views work register by register and move nothing; reductions combine in the thread, then
// across the lanes with shuffles, then across warps through shared memory; convert_layout ops are
// the only other data movement (a register permutation when the threads' parts agree, else a trip
// through shared memory). A dot runs on wgmma (Hopper) or mma.sync from its accumulator's registers,
// its A operand from registers or a tile, B from a tile. In a `tl::range` loop, loads that become
// tiles and whose addresses advance by a loop-invariant step are issued num_stages - 1 trips ahead
// with cp.async into a ring of tiles - on Hopper by the bulk tensor copy engine (TMA) where the
// shared analysis (jit/cuda/tma.h) proves each tile a box of a tensor.
//
// Files, by op family: lowering.cpp (kernel, scalars, op dispatch, shared memory), values.cpp
// (constants, aranges, views, elementwise), memory.cpp (loads, stores, atomics), reduce.cpp
// (reductions), scan.cpp (scans, through jit/cuda/scan.cpp), convert.cpp (layout conversions,
// tiles), dot.cpp (tensor cores and the FMA dot), control_flow.cpp (loops, branches, pipelining),
// tma_ring.cpp (the ring's tiles through TMA), data_movement.cpp (join, split, gather, histogram),
// debug.cpp (print, assert).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jit/cuda/codegen.h"
#include "jit/cuda/scalar_expr.h"
#include "jit/cuda/tma.h"
#include "jit/passes/assign_layouts.h"

namespace tritium::jit::cuda::lowering {

// A block value in the generated code.
struct Val {
  enum class Kind { Regs, Uniform, Tile } kind = Kind::Regs;
  std::string name;  // Regs: the array; Uniform: the expression; Tile: its u32 shared address
  const Layout* layout = nullptr;  // the value's layout (the LayoutMap's)
  // Element r of a register or uniform value.
  std::string at(int r) const { return kind == Kind::Uniform ? name : fmt::format("{}[{}]", name, r); }
  // Element `idx` (an int expression: a register loop's counter) of a register or uniform value.
  std::string at(const std::string& idx) const { return kind == Kind::Uniform ? name : fmt::format("{}[{}]", name, idx); }
};

// Register arrays are filled by `#pragma unroll` loops wherever the register -> element map is
// regular, so the source stays small and NVRTC unrolls them itself (docs/cuda-backend.md, "Register
// loops"). Every layout's map from a register index to an element coordinate, and every register
// permutation between two layouts, is linear in the index's bits: f(r) = f(0) + the sum of
// f(2^i) over r's set bits. This is f as an int expression of `var` (runs of bits that move
// together as one shift and mask), or nothing when f is not of that form.
std::optional<std::string> bit_linear_expr(const std::function<int64_t(int)>& f, int n, const std::string& var);

class Lowering {
 public:
  Lowering(ir::Function& f, const LayoutMap& layouts, const AxisInfoMap& axis, const CompileOptions& opts,
           int64_t smem_budget, int cc)
      : f_(f), layouts_(layouts), axis_(axis), nwarps_(std::max(1, opts.num_warps)), nt_(nwarps_ * 32),
        num_stages_(opts.num_stages), cc_(cc), smem_budget_(smem_budget) {}

  KernelSource run();
  // Stages of a loop's ring are counted against the budget with nothing kept back for the body's
  // reduction partials (see body_margin_): the caller lowers again without this when the kernel
  // then needs more than the budget (over_budget()).
  void count_body_exactly() { body_margin_ = 0; }
  bool over_budget() const { return smem_peak_ > smem_budget_; }

 private:
  ir::Function& f_;
  const LayoutMap& layouts_;
  const AxisInfoMap& axis_;
  int nwarps_, nt_, num_stages_, cc_;
  int64_t smem_budget_;
  // Bytes a ring leaves free for what its loop body allocates besides its layout conversions'
  // tiles (reduction partials), which are not known before the body is lowered.
  int64_t body_margin_ = 8 * 1024;

  // ---- output (lowering.cpp) -------------------------------------------------------------------
  std::string body_, decls_;
  int indent_ = 1, counter_ = 0;
  void line(const std::string& s);
  void open(const std::string& s);
  void close();
  std::string fresh(const char* prefix) { return fmt::format("{}{}", prefix, counter_++); }
  std::string tmp(const std::string& type, const std::string& expr);

  // ---- values ------------------------------------------------------------------------------------
  std::unordered_map<const ir::Value*, std::string> scalars_;
  std::unordered_map<const ir::Value*, Val> vals_;
  std::string scalar(const ir::Value* v);
  const Val& val(const ir::Value* v);
  const Layout& layout(const ir::Value* v) const { return layouts_.of(v); }
  bool wide_address(const ir::Op* op) const;  // addptr as tt_addptr (values.cpp)
  // A register array for `v` (declared here), filled by fn(r) -> element r's expression.
  Val& define_regs(const ir::Value* v, const std::function<std::string(int)>& fn);
  // The same, as one `#pragma unroll` loop over `tt_r` when loop_fn("tt_r") gives the element
  // expression of the counter (a regular map); element by element when it gives nothing.
  Val& define_regs(const ir::Value* v, const std::function<std::string(int)>& fn,
                   const std::function<std::optional<std::string>(const std::string&)>& loop_fn);
  // The array `in` read through a register map (map[r] the register of `in` that register r takes):
  // in[expr(tt_r)] when the map is regular.
  Val& define_mapped_regs(const ir::Value* v, const Val& in, const std::vector<int>& map);
  Val& declare_regs(const ir::Value* v);  // declared, not filled
  void set_uniform(const ir::Value* v, const std::string& expr);
  // The thread's part of layout l's coordinate along `dim` (an int expression hoisted to the kernel
  // top), and the element coordinate of register r.
  std::string thread_coord(const Layout& l, int dim);
  std::string coord(const Layout& l, int r, int dim);
  // The coordinate of register `var` (an int expression) along `dim`: nothing when the layout's
  // map is not regular (every layout's is; see bit_linear_expr).
  std::optional<std::string> coord_expr(const Layout& l, const std::string& var, int dim);
  std::unordered_map<std::string, std::string> thread_coords_;
  // Whether this thread holds the first copy of its elements (side effects are done by it alone).
  std::string owner(const Layout& l);

  // ---- ops (values.cpp) -----------------------------------------------------------------------
  std::string constant_of(const ir::Op* op);
  void emit_source(const ir::Op* op);       // constant, splat, arange
  void emit_view(const ir::Op* op);         // broadcast, expand_dims, permute, reshape, hints
  // For each register of a view's result, the operand register holding its element.
  std::vector<int> view_regs(const ir::Op* op);
  void emit_elementwise(const ir::Op* op);
  std::string emit_scalar(const ir::Op* op);  // a scalar op's expression
  // An elementwise op's expression from its operands' (scalar_expr's elementwise, except 32-bit
  // divisions by a divisor with magic numbers: fastdiv_).
  std::string element_op(const ir::Op* op, const std::vector<std::string>& xs);
  // 32-bit divisors a loop does not change (scalars from before it, not constants) -> the tt_fastdiv
  // made before the loop (plan_fast_division), while the loop is emitted.
  std::map<std::pair<const ir::Value*, bool>, std::string> fastdiv_;  // (divisor, signed)
  std::vector<std::pair<const ir::Value*, bool>> plan_fast_division(const ir::Op* loop);

  // ---- memory (memory.cpp) --------------------------------------------------------------------
  bool global_dirty_ = false;
  std::vector<const ir::Value*> dirty_roots_;
  bool dirty_unknown_ = false;
  static const ir::Value* pointer_root(const ir::Value* v);
  struct LoopWrites {
    std::vector<const ir::Value*> roots;  // the parameters a loop's stores and atomics go through
    bool unknown = false;                 // one goes through a pointer no parameter roots
  };
  static LoopWrites loop_writes(const ir::Block* body);
  void mark_global_write(const ir::Value* ptr);
  bool may_read_written(const ir::Value* ptr) const;
  void sync_before_read(const ir::Value* ptr);
  // Elements one access moves along the layout's contiguous registers: the axis info's proof that
  // the pointer is contiguous and aligned over them, 16 bytes at most.
  int vector_width(const ir::Op* op, const Layout& l);
  // Whether the axis info proves `mask` constant over runs of `n` elements along `dim`.
  bool mask_constant(const ir::Value* mask, int dim, int n) const;
  void emit_load(const ir::Op* op);
  void emit_store(const ir::Op* op);
  void emit_atomic(const ir::Op* op);
  std::string scalar_load(const ir::Op* op);

  // ---- shared memory (lowering.cpp) -------------------------------------------------------------
  // Blocks of the dynamic shared memory by offset; a tile lives from its allocation until free().
  int64_t smem_top_ = 0, smem_peak_ = 0;
  std::vector<std::pair<int64_t, int64_t>> smem_live_;  // (offset, bytes), in allocation order
  int64_t alloc_smem(int64_t bytes, int64_t align = 16);
  void free_smem(int64_t offset);
  // Tiles written from registers (emit_convert), by offset: a block frees one after the last op
  // that reads it (or a view of it), not at its end, as Triton's shared-memory allocation reuses a
  // buffer past its liveness: attention's backward holds K and V for its dK/dV loops only, and its
  // dQ loop's tiles then take their bytes (208 KB -> 145 KB, leaving the L1 its spills go to).
  std::unordered_map<int64_t, std::string> tile_allocs_;
  // Bytes freed that way since the last barrier: threads (or wgmma groups in flight) may still read
  // them, so an allocation over them waits for the groups and the barrier first.
  std::vector<std::pair<int64_t, int64_t>> dead_smem_;
  void release_dead_tiles(size_t live, const std::unordered_map<const ir::Value*, size_t>& last_use, size_t i);
  void fence_dead_smem();
  bool synced_ = true;
  void sync();                        // __syncthreads() unless nothing happened since the last
  void touched() { synced_ = false; }  // shared or global memory was written or read

  // ---- layout conversions and tiles (convert.cpp) -----------------------------------------------
  void emit_convert(const ir::Op* op);
  // Register r of `to`'s value from the registers of `from` in the same thread, when they agree.
  std::optional<std::vector<int>> same_thread_map(const Layout& from, const Layout& to) const;
  // Element (coords) of a tile of layout s, as a byte offset expression from the tile's base.
  std::string tile_offset(const Layout& s, DType d, const std::vector<std::string>& coords) const;
  int64_t tile_bytes(const Layout& s, DType d) const;
  // A conversion through shared memory writes 16-bit elements with stmatrix (sm_90) when the
  // source's registers and lanes are mma fragments along the last dim: the matrices an instruction
  // stores (4, 2 or 1), or nothing. `stmatrix_rows` is where lane l's row starts, as a layout whose
  // register r is the r-th instruction.
  std::optional<int> stmatrix_count(const Layout& from, DType d, const Val& in) const;
  Layout stmatrix_rows(const Layout& from, int x) const;
  // Writes a register value into a tile at base (u32 shared address), 16-byte chunks where the
  // value's registers run along the tile's contiguous dim.
  void store_tile(const Val& v, const Layout& from, DType d, const std::string& base, const Layout& tile,
                  bool async_reader, bool round_tf32);
  // Reads a tile into registers of layout `to`.
  void load_tile(const std::string& base, const Layout& tile, DType d, const Val& out, const Layout& to);

  // ---- reductions (reduce.cpp) and scans (scan.cpp) --------------------------------------------
  std::vector<std::string> combine(const ir::Block* region, const std::vector<std::string>& lhs,
                                   const std::vector<std::string>& rhs);
  void emit_reduce(const ir::Op* op);
  void emit_scan(const ir::Op* op);

  // ---- data movement (data_movement.cpp): tl::join, tl::split, tl::gather, tl::histogram ---------
  void emit_join(const ir::Op* op);
  void emit_split(const ir::Op* op);
  void emit_gather(const ir::Op* op);
  void emit_histogram(const ir::Op* op);
  // Whether every source element an index element may name lies in the index element's warp, in
  // a lane found from the index alone (Triton's isWarpLocal): the warps hold no bit of the axis, and
  // the lanes and warps of both layouts hold the same bits off the axis.
  bool warp_local_gather(const Layout& src, const Layout& index, int axis) const;

  // ---- dot (dot.cpp) ------------------------------------------------------------------------------
  // wgmma groups issued and not yet waited for, and the accumulator registers they write.
  struct PendingMma {
    std::string acc;
    int groups = 0;
    bool previous_trip = false;  // a loop's deferred dot of the trip before (seeded at the body's top)
    int64_t regs = 0;            // the accumulator's registers a thread (tied to the wait: wait_mma)
    bool integer = false;        // s32 accumulators ("r"), else f32 ("f")
  };
  std::vector<PendingMma> pending_mma_;
  void wait_mma(int keep = 0);                 // wgmma.wait_group keep; drops what completed
  void wait_mma_for(const std::string& acc);   // before anything reads these registers
  void emit_dot(const ir::Op* op);
  // zero_acc: the accumulator starts at zero and is not in the registers yet; the first k-step's
  // instructions then write it (scale-d 0, Triton's useD = false) instead of adding to zeros.
  // use_acc: a run-time flag (a dot's fourth operand), the first k-step's scale-d; empty: always.
  void emit_wgmma(const ir::Op* op, const Val& a, const Val& b, const std::string& acc, bool zero_acc = false,
                  const std::string& use_acc = "");
  void emit_mma_sync(const ir::Op* op, const Val& a, const Val& b, const std::string& acc);
  void emit_fma_dot(const ir::Op* op, const Val& a, const Val& b, const std::string& acc);
  // Dots of a loop whose wgmma group runs on into the next trip (emit_for decides: the result is
  // carried, its accumulator updated in place, its tiles stages or from before the loop): nothing
  // waits for them when issued; the next trip's first wait retires them, then a barrier, then
  // `retire_hook_` (the loop's refill of the stages they read).
  std::unordered_set<const ir::Op*> deferred_dots_;
  std::unordered_set<std::string> deferred_accs_;  // their carried accumulators' arrays
  bool deferred_acc(const std::string& acc) const { return deferred_accs_.count(acc) > 0; }
  std::function<void()> retire_hook_;
  std::unordered_map<const ir::Value*, int> uses_;  // operand uses of every value (filled by run)
  int sharing(const std::string& array) const;       // values whose register array is `array`
  // Whether `op` may write its result over operand `v`'s registers: v has no other use, is made in
  // op's own block (or is that block's carried argument), so every run of op sees a fresh v, and no
  // other value shares its array.
  bool reusable(const ir::Value* v, const ir::Op* op);

  // ---- control flow (control_flow.cpp) -----------------------------------------------------------
  void emit_for(const ir::Op* op);
  void emit_if(const ir::Op* op);
  void emit_while(const ir::Op* op);
  // Loads of a loop body that go to shared-memory tiles num_stages - 1 trips ahead (cp.async).
  struct Pipelined {
    const ir::Op* load;     // the load
    const ir::Op* convert;  // its only use: the convert to a tile; null: a register load (below)
    int64_t offset = 0;     // the ring's first stage
    int64_t stage_bytes = 0;
  };
  std::vector<Pipelined> pipelinable(const ir::Op* loop);
  // Register loads of a ring's loop (attention's m and delta, a dot's scales) that cp.async can copy:
  // stages of the ring too, each a plain row-major array its trip reads into the load's layout
  // (Triton's pipeliner stages every load of the loop in shared memory), rather than a register
  // array a trip ahead - whose registers stay live across the trip: at the register limit ptxas
  // spills them right after their LDG, and the STL waits for the load's data.
  std::vector<Pipelined> ring_register_loads(const ir::Op* loop, const std::vector<Pipelined>& tiles);
  // Byte offset in a stage of the element at `coords`: the tile's layout, or row-major for a register load.
  std::string stage_offset(const Pipelined& p, const std::vector<std::string>& coords);
  void emit_ring_register_load(const ir::Op* op, const std::string& slot);
  // On Hopper, when a wgmma reads the ring: a proxy fence after the cp.async wait of a trip (none
  // when no stage of `pipes` is a cp.async copy: element stages are fenced by their writers).
  void fence_cp_async_for_wgmma(const std::vector<Pipelined>& pipes);
  bool wgmma_in_kernel();
  // Carried values advanced by a loop-invariant step each trip (pointers, offsets): evaluated as
  // `value + k * step` for trip t + k while issuing loads ahead.
  struct Induction {
    const ir::Value* step;
    bool ptr;
  };
  std::unordered_map<const ir::Value*, Induction> inductions_;
  // Inductions only the pipelined loads read (emit_for): not carried; trip t's value is
  // init + t * step, `trip` the loop's trip counter ("0" in the prefill).
  struct Uncarried {
    const ir::Value* init;
    std::string trip;
  };
  std::unordered_map<const ir::Value*, Uncarried> uncarried_;
  // emit_for's analysis, shared with defer_address_defs: the carried values advanced by a
  // loop-invariant step (inductions_), the body's ops only the pipelined loads read (which the
  // stages recompute), and the carried inductions only those ops read (uncarried).
  void find_inductions(const ir::Op* loop);
  std::unordered_set<const ir::Op*> skipped_ops(const ir::Op* loop, const std::vector<Pipelined>& pipes);
  std::vector<size_t> address_only_inductions(const ir::Op* loop, const std::unordered_set<const ir::Op*>& skip);
  // On Hopper, the pure ops before a pipelined loop whose values only its uncarried inductions'
  // initial values need (tutorial 03's pointer blocks, their `% M` indices) are emitted by the
  // loop where the ring's fallback fills it - inside the cp.async branch when the ring may be
  // filled by TMA - so a TMA-filled program never computes them and issues its first copies
  // sooner. deferred_defs_: such op -> its loop (emit_op skips it).
  std::unordered_map<const ir::Op*, const ir::Op*> deferred_defs_;
  void defer_address_defs(const ir::Block* block);
  void emit_deferred_defs(const ir::Op* loop);
  // While set, tmp() and declare_regs() put their declarations here (at predecl_indent_) and
  // emit assignments: values made inside a branch and read after it.
  std::string* predecl_ = nullptr;
  int predecl_indent_ = 0;
  // Issues the copies of every stage of `pipes` for the trip `ahead` trips after the current one
  // into slot `slot` (an int expression), predicated by `live`: the cp.async stages one by one,
  // then the element stages together - all their loads, then all their stores, then one proxy
  // fence on Hopper.
  void issue_stages(const ir::Op* loop, const std::vector<Pipelined>& pipes, const std::string& ahead,
                    const std::string& slot, const std::string& live);
  // How a stage is copied: cp.async chunks of `vector` elements (`async`), or element by element
  // through registers; `owner` says which threads hold the load's elements ("true": each its own).
  struct StagePlan {
    int vector = 1;
    bool async = false;
    std::string owner;
  };
  StagePlan stage_plan(const Pipelined& p);
  // The element copies of `p` (not async): its loads are emitted, its stores appended to `stores`.
  void load_element_stage(const ir::Op* loop, const Pipelined& p, const std::string& ahead, const std::string& slot,
                          std::vector<std::string>& stores);
  void issue_async_stage(const ir::Op* loop, const Pipelined& p, const StagePlan& plan, const std::string& ahead,
                         const std::string& slot, const std::string& live);
  // The value of `v` (a pure function of the loop's induction variable, inductions and values
  // from before the loop) `ahead` trips later: register r's expression.
  std::string ahead_value(const ir::Value* v, int r, const std::string& ahead, const ir::Op* loop);
  // Quotient caching: in a pipelined loop whose trip reaches its addresses through iv / d (d fixed by
  // the loop: a fused loop nest's outer index), the refill's values that depend on the trip only
  // through that quotient (the tile's rows and masks) are kept in registers across trips and made
  // again only when the quotient of the trip being refilled changes - once per outer trip of a
  // fused nest, where recomputing them every trip cost 2.5x the unfused loop's instructions.
  struct QuotientCache {
    const ir::Value* root = nullptr;              // the scalar iv / d
    std::unordered_set<const ir::Value*> values;  // depend on the trip through `root` only
    struct Entry {
      const ir::Value* v;
      int r;
      std::string name, type;
    };
    std::vector<Entry> entries;  // asked for by the refill: registers declared before the loop
    std::map<std::pair<const ir::Value*, int>, std::string> names;
    std::string valid, q;  // whether the registers hold the values of quotient q
  };
  std::optional<QuotientCache> quotient_cache(const ir::Op* loop);
  QuotientCache* qcache_ = nullptr;  // while the refill is emitted
  std::unordered_map<std::string, std::string> ahead_memo_;
  std::unordered_map<const ir::Op*, std::string> stage_slot_;  // pipelined converts (register loads) -> current slot base
  bool ahead_computable(const ir::Value* v, const ir::Op* loop, int depth = 0) const;

  // Loads of a pipelined loop's body that are not tiles (fused_moe's per-trip block scales): issued
  // one trip ahead into a register array (`array`, filled before the loop for the first trip); the
  // trip reads its copy and asks for the next trip's (`trip` + 1 < `trips`).
  struct RegisterAhead {
    const ir::Op* loop = nullptr;
    std::string array, trip, trips;
  };
  std::unordered_map<const ir::Op*, RegisterAhead> register_ahead_;
  std::vector<const ir::Op*> register_prefetchable(const ir::Op* loop, const std::vector<Pipelined>& pipes);
  // The load's registers for the trip `ahead` trips after the current one into `array`, when `live`.
  void issue_register_load(const ir::Op* loop, const ir::Op* load, const std::string& ahead, const std::string& array,
                           const std::string& live);
  void emit_register_ahead_load(const ir::Op* op);

  // ---- the ring's tiles through TMA (tma_ring.cpp) ----------------------------------------------
  // On Hopper, a loop's pipelined loads whose every tile the shared analysis (jit/cuda/tma.h) can
  // name as a box of a tensor are filled by the bulk tensor copy engine: thread 0 arms a stage's
  // mbarrier with the stage's bytes and issues the copies, the consumers wait on the mbarrier.
  // emit_for emits one loop whose waits and refills take that way where the plans' guards hold
  // (a bool uniform in the CTA) and cp.async's otherwise.
  std::vector<std::string> tma_maps_;  // KernelSource::tma_maps (at most kMaxTensorMaps)
  struct TmaRing {
    std::vector<TmaTile> tiles;  // one per pipelined load, in order
    std::string guard;           // every tile's guard
    int64_t tx_bytes = 0;        // the bytes the copies of one stage deliver
    int first_map = 0;           // tiles[i]'s map is tt_tmap{first_map + i}
    std::string bar;             // the stages' mbarriers (u32 shared address; 8 bytes a stage)
  };
  std::optional<TmaRing> plan_tma_ring(const ir::Op* loop, const std::vector<Pipelined>& pipes);
  // Whether only tf32 dots on wgmma read a tile (through views): its copies may round it to tf32.
  bool only_tf32_wgmma_reads(const ir::Value* tile) const;
  // Whether nothing but dots' A / B operands read a value (through layout conversions, transposes).
  bool only_dot_operand_reads(const ir::Value* v) const;
  // The stage of the trip `ahead` trips after the current one (trip number `trip`, counting from
  // the loop's first) into slot `slot`, when `live`: thread 0 arms the slot's mbarrier and issues
  // one copy per 128-byte column block of each tile.
  void issue_tma_stage(const ir::Op* loop, const std::vector<Pipelined>& pipes, const TmaRing& ring,
                       const std::string& ahead, const std::string& trip, const std::string& slot, const std::string& live);
  // Before the loop, as `if (use_tma) {...}` (the caller adds the else branch and the barrier
  // that publishes the mbarriers): thread 0 initialises the mbarriers and asks for the first S - 1
  // stages. After it (under the guard): they are invalidated.
  void begin_tma_ring(const ir::Op* loop, const std::vector<Pipelined>& pipes, TmaRing& ring, int stages,
                      const std::string& trips, const std::string& use_tma);
  void end_tma_ring(const TmaRing& ring, int stages);

  // ---- debugging (debug.cpp) --------------------------------------------------------------------
  int num_asserts_ = 0;
  bool has_print_ = false;
  void emit_print(const ir::Op* op);
  void emit_assert(const ir::Op* op);

  // ---- dispatch (lowering.cpp) ------------------------------------------------------------------
  void emit_block(const ir::Block* block);
  void emit_op(const ir::Op* op);
};

}  // namespace tritium::jit::cuda::lowering

