// Axis-info analysis (after Triton's lib/Analysis/AxisInfo.cpp): for every integer or pointer
// value, per dimension, how long its runs of consecutive values are, what power of two divides
// their first elements, and how long its runs of equal values are. It decides the vector width
// and alignment of loads and stores.
//
// Meaning, per dim d of a value (a scalar counts as one dim of size 1), with every other index
// fixed: split the dim into aligned chunks of contiguity[d] elements (chunk k = indices
// [k*c, (k+1)*c)); inside a chunk the values go up by 1. The first value of every such chunk is a
// multiple of divisibility[d] (a power of two; in the value's own units: integers in units,
// pointers in bytes, contiguity of pointers in elements). Aligned chunks of constancy[d] elements
// hold equal values. Integer arithmetic is assumed not to wrap and integer division / remainder
// to see non-negative dividends, as Triton assumes. Floats get contiguity 1 and divisibility 1.
//
// stride[d] is a likelihood, not a proof: the step between neighbours along d that holds for most
// of them (pointers in bytes, integers in units; kNoStride when not known). A remainder by a
// run-time value keeps its dividend's step (it wraps now and then), a quotient by one has step 0
// (it steps now and then), so `ptr + stride * (i % W)` along i steps by `stride` bytes though its
// contiguity is 1. It orders a load's lanes where contiguity cannot (assign_layouts' coalesced),
// never the width or alignment of an access.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace tritium::jit {

struct AxisInfo {
  std::vector<int64_t> contiguity;    // one entry per dimension (one for scalars)
  std::vector<int64_t> divisibility;
  std::vector<int64_t> constancy;
  std::vector<int64_t> stride;        // see above; kNoStride: unknown
  std::optional<int64_t> constant;    // known value of every element, integers and pointers only

  // The divisor assumed for the value 0 (every power of two divides it).
  static constexpr int64_t kMaxDivisor = int64_t{1} << 62;
  static constexpr int64_t kNoStride = INT64_MIN;

  static AxisInfo unknown(size_t dims);  // contiguity, divisibility and constancy 1, stride unknown
  size_t dims() const { return contiguity.size(); }
  bool operator==(const AxisInfo&) const = default;
  // "{contiguity=[1024], divisibility=[16], constancy=[1]}" (", constant=3" when known).
  std::string str() const;
};

class AxisInfoMap {
 public:
  // Throws tritium::Error for a value the analysis never saw.
  const AxisInfo& get(const ir::Value* v) const;
  bool contains(const ir::Value* v) const { return infos_.count(v) > 0; }
  void set(const ir::Value* v, AxisInfo info) { infos_[v] = std::move(info); }

 private:
  std::unordered_map<const ir::Value*, AxisInfo> infos_;
};

// Analyses every value of `f`, nested regions included.
AxisInfoMap analyze_axis_info(ir::Function& f);

// Elements one vector access of a load, store or atomic `op` may move: the power of two that
// divides the pointer's contiguity along the last dim, is covered by its alignment, fits in
// max_bytes and, when masked, over which the mask is constant. 1 for scalar accesses.
int64_t vector_width(const AxisInfoMap& info, const ir::Op& op, int64_t max_bytes = 64);

}  // namespace tritium::jit
