// IR -> CUDA C++ for the CUDA backend. One program is one CTA of num_warps * 32 threads; block
// values are fused into thread-distributed loop nests or materialised in shared memory (or a
// per-CTA slice of a global scratch buffer). docs/cuda-backend.md describes the scheme.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "jit/compiled_kernel.h"
#include "jit/passes/axis_info.h"

namespace tritium::jit::cuda {

// What the generated kernel needs at launch, besides its parameters.
struct KernelSource {
  std::string source;           // the .cu text (device header included)
  std::string entry;            // the __global__ function's name
  int num_threads = 128;        // block size: num_warps * 32
  int64_t smem_bytes = 0;       // dynamic shared memory
  int64_t scratch_bytes = 0;    // global scratch per program (CTA); 0: none
  int num_asserts = 0;          // device_assert sites (the host checks the flag only when > 0)
  bool has_print = false;       // device_print: the host waits for the kernel so the output is flushed
  // Persistent programs: the kernel takes the grid (tt_grid0..2, ints after tt_assert) and is
  // launched with as many CTAs as are resident (at most one per program), which walk over them.
  // The launcher supports it; no generator sets it since the matmul-loop matcher went (stop 41).
  bool persistent = false;
  // Tensor maps the kernel takes after tt_assert (`const __grid_constant__ tt_tmap_t tt_tmapI`),
  // one per tile load copied with TMA, each "BASE SHAPE0 SHAPE1 STRIDE0 STRIDE1 ESIZE DTYPE BOX0
  // BOX1": the first five RecipeValues (below), then the element bytes, the CUtensorMapDataType
  // and the box (elements of the contiguous dim, rows).
  std::vector<std::string> tma_maps;
};
inline constexpr size_t kMaxTensorMaps = 8;  // a kernel's tensor maps, at most

// A base, shape or stride of a tensor map's recipe: kernel parameter N read as 64 bits ("pN"), as
// a signed ("iN") or unsigned ("uN") 32-bit integer, the constant V ("cV"), or integer arithmetic
// over those exactly as the kernel computes it ("OP.T(a,b)": add, sub or mul wrapping around in T =
// i32, u32, i64 or u64; "cvt.T(a)": a converted to T; no spaces), so that a tensor whose shape or
// stride the kernel computes from its parameters - tutorial 06's Z * H * N_CTX rows,
// "mul.i32(mul.i32(i2,i3),i8)" - can have a map the launcher encodes.
struct RecipeValue {
  char kind;      // 'p', 'i', 'u', 'c', or 'e' (an expression)
  int64_t value;  // the parameter's index, or the constant (an expression: 0)
  char op = 0;    // an expression's '+', '-', '*' or 'x' (cvt)
  DType type = DType::invalid;        // an expression's result type
  std::vector<RecipeValue> operands;  // an expression's
  bool param() const { return kind == 'p' || kind == 'i' || kind == 'u'; }
  bool expr() const { return kind == 'e'; }
};
// An expression's nesting and length, at most (a longer recipe is refused, not evaluated).
inline constexpr int kMaxRecipeDepth = 8;
inline constexpr size_t kMaxRecipeChars = 512;
// The token back (parse_recipe_value(recipe_string(v)) is v).
std::string recipe_string(const RecipeValue& v);
std::optional<RecipeValue> parse_recipe_value(const std::string& token);
// Its value for a launch's arguments (one little-endian 64-bit slot a parameter); an expression's
// as the kernel computes it (its type's wrap-around, then sign- or zero-extended to 64 bits).
int64_t recipe_value(const RecipeValue& v, const uint64_t* args);
// One KernelSource::tma_maps entry, read back: nothing when a field is missing or malformed, a
// parameter index is not below num_params, stride1 is not the constant 1 (the launcher encodes
// the last dim as contiguous) or the element size is not positive.
struct TensorMapRecipe {
  std::array<RecipeValue, 5> values;  // base, shape0, shape1, stride0, stride1
  int esize = 2, dtype = 0;           // element bytes, CUtensorMapDataType
  uint32_t box[2] = {0, 0};           // elements of the contiguous dim, rows
};
std::optional<TensorMapRecipe> parse_tensor_map_recipe(const std::string& line, size_t num_params);
// Whether a 2-D tensor of this shape and row stride (in elements of `esize` bytes) can have a
// tensor map: the launcher encodes one only then (else it passes zeros), and the kernel's guard
// (tma.cpp, tensor_map_usable_expr) tests the same before it takes the TMA loop.
bool tensor_map_usable(int64_t shape0, int64_t shape1, int64_t stride0, int esize);

// The generated kernel's signature is
//   extern "C" __global__ void <entry>(params..., unsigned char* tt_scratch, int* tt_assert[, tensor maps])
// launched over grid (x, y, z) with num_threads threads and smem_bytes of dynamic shared memory.
// Materialised block values take shared memory up to `smem_budget` bytes per CTA (the backend
// passes the device's opt-in limit less a margin for the small reduction buffers), then the
// global scratch. The layout generator counts every byte it allocates, so it may take
// `layouts_smem_budget` (the opt-in limit itself; 0: smem_budget).
inline constexpr int64_t kSharedMemoryBudget = 96 * 1024;  // without a device (tests, tools)
// Both generators first contract a * b + c into fma (jit/passes/contract_fma.h) as every CUDA
// launch does, so a test or tool that generates without a launch checks the code a launch runs
// (two crashes hid behind tests that skipped it: stop 42's, stop 45's).
// compute_capability (e.g. 90) decides which tensor-core instructions `dot` may use. Which generator
// lowers `f` (TRITIUM_CUDA_CODEGEN): kernels with a dot, or with a reshape that moves elements
// between dims (reshape_moves_elements: tl::sort, tl::topk), always the layout generator; the others
// the element-loop one by default, the layout one under "layouts". Throws tritium::Error for any
// other value of the variable (check_codegen_mode).
KernelSource generate_cuda(ir::Function& f, const AxisInfoMap& axis, const CompileOptions& opts,
                           int64_t smem_budget = kSharedMemoryBudget, int compute_capability = 90,
                           int64_t layouts_smem_budget = 0);
// The CUDA backend's fp contraction and the dead-code elimination after it; whether `f` changed
// (then its axis facts must be analysed again). Contracting twice changes nothing.
bool contract_for_cuda(ir::Function& f);
// Throws tritium::Error unless `mode` (TRITIUM_CUDA_CODEGEN, lower-cased) is empty or "layouts":
// "legacy" (the matmul-loop matcher, removed) and unknown values are refused, not ignored.
void check_codegen_mode(const std::string& mode);
// Whether a reshape op changes the dims its elements lie along (not only adding or dropping dims
// of size 1): a buffer copy in the element-loop generator, a relabelling of bits in the layouts.
bool reshape_moves_elements(const ir::Op& reshape);

// IR -> CUDA C++ through layouts: runs the layout pass on `f` (which it changes: conversions and
// clones), writes `<kernel>.layouts.ir` into dump_dir when given, and lowers it.
KernelSource generate_cuda_layouts(ir::Function& f, const CompileOptions& opts, int64_t smem_budget = kSharedMemoryBudget,
                                   int compute_capability = 90, const std::string& dump_dir = "");

}  // namespace tritium::jit::cuda
