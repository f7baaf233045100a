// Triton's block pointers and tensor descriptors: tl::make_block_ptr describes a tile of an N-D tensor in memory (base,
// shape, strides) at some offsets, tl::advance moves it, and tl::load / tl::store read or write the
// tile with optional bounds checks along chosen dims.
//
//   auto a = tl::make_block_ptr(a_ptr, {M, K}, {stride_am, stride_ak}, {pid_m * BM, 0}, {BM, BK}, {1, 0});
//   for (auto k : tl::range(0, tl::cdiv(K, BK))) {
//     acc = tl::dot(tl::load(a, {0, 1}), tl::load(b, {0, 1}), acc);
//     a = tl::advance(a, {0, BK});        // the offsets are carried through the loop
//   }
//
// As in Triton, offsets are i32 and strides i64 (addresses are computed in 64 bits); a bounds
// check along dim d masks the elements whose index is outside [0, shape[d]) (compared in the
// shape's own integer type, at least 32 bits: the same result as Triton's 64-bit compare). Masked loads
// read `padding_option`: "zero" (the default; Triton leaves them undefined) or "nan" (floats only).
// Loads and stores lower at trace time to a block of pointers and a mask (Triton's
// RewriteTensorPointer), so every backend runs them; `order` (the dims from fastest to slowest
// in memory) is checked but, as in Triton's generic path, changes nothing.
#pragma once
#include <string>
#include <vector>

#include "dsl/ops.h"

namespace tritium::tl {

#define TL_LOC loc_t loc = loc_t::current()

struct block_ptr {
  tensor base;                  // scalar pointer
  std::vector<tensor> shape;    // integer scalars
  std::vector<tensor> strides;  // i64 scalars
  std::vector<tensor> offsets;  // i32 scalars
  ir::Shape block_shape;
  std::vector<int> order;

  // For the CUDA backend's bulk tensor copies (TMA): "base shape0 .. stride0 .." as `pN` (kernel
  // parameter N) or `cV` (constant V) when every piece is one, else empty.
  std::string tensor_recipe;

  block_ptr() = default;
  block_ptr(const block_ptr&) = default;
  // Element by element: run-time loops carry the tensor objects alive before them, so the
  // offsets of `p = tl::advance(p, ...)` must stay the same objects.
  block_ptr& operator=(const block_ptr& o);
  int rank() const { return static_cast<int>(block_shape.size()); }
};

block_ptr make_block_ptr(const tensor& base, const std::vector<operand>& shape, const std::vector<operand>& strides,
                         const std::vector<operand>& offsets, const ir::Shape& block_shape,
                         const std::vector<int>& order, TL_LOC);
block_ptr advance(const block_ptr& p, const std::vector<operand>& offsets, TL_LOC);

// cache_modifier and eviction_policy as for a load or store of pointers (dsl/ops.h).
tensor load(const block_ptr& p, const std::vector<int>& boundary_check = {}, const std::string& padding_option = "",
            const std::string& cache_modifier = "", const std::string& eviction_policy = "", TL_LOC);
void store(const block_ptr& p, operand value, const std::vector<int>& boundary_check = {},
           const std::string& cache_modifier = "", const std::string& eviction_policy = "", TL_LOC);

// Triton's tensor descriptors (tl.make_tensor_descriptor): a tensor in memory (base, shape,
// strides; the last stride must be 1) read and written in block_shape tiles at offsets given per
// access, every dim bounds-checked, padding zero:
//
//   auto desc = tl::make_tensor_descriptor(a_ptr, {M, K}, {K, 1}, {BM, BK});
//   auto a = desc.load({pid_m * BM, k * BK});
//   out_desc.store({pid_m * BM, pid_n * BN}, c);
//
// Triton's constraints (those of Hopper's bulk tensor copies) are checked when tracing: the last
// stride is the constant 1 and a tile row holds at least 16 bytes. Lowered as block pointers.
struct tensor_descriptor {
  block_ptr tile;  // offsets 0; each access sets its own
  tensor load(const std::vector<operand>& offsets, TL_LOC) const;
  void store(const std::vector<operand>& offsets, operand value, TL_LOC) const;
};

tensor_descriptor make_tensor_descriptor(const tensor& base, const std::vector<operand>& shape,
                                         const std::vector<operand>& strides, const ir::Shape& block_shape, TL_LOC);

#undef TL_LOC

}  // namespace tritium::tl
