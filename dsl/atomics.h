// Triton's `sem` argument of the atomics: tl::atomic_add(ptr, val, mask, "relaxed"). Overloads of
// dsl/ops.h's atomics (which are acq_rel, Triton's default) with the memory order as a fourth
// argument; a separate header so that adding it did not touch dsl/ops.h, which nearly every file
// includes.
//   "acq_rel"  the program's earlier accesses are released before the atomic and what it observed
//              is acquired after it (a fence on each side on the GPU): locks, flags, counters
//              read by other programs;
//   "acquire", "release"  one of the two fences;
//   "relaxed"  no ordering of the program's other accesses (PyTorch's atomicAdd): scatters,
//              histograms, reductions whose result is read after the kernel.
// Another string is a trace error. The CPU backend ignores it. The IR keeps it as the atomic's
// attrs.str ("" for acq_rel), printed as `sem=...` (so it is part of the kernel's cache key).
#pragma once
#include <optional>
#include <string>

#include "dsl/ops.h"

namespace tritium::tl {

tensor atomic_add(const tensor& pointer, operand val, std::optional<operand> mask, const std::string& sem, loc_t loc = loc_t::current());
tensor atomic_max(const tensor& pointer, operand val, std::optional<operand> mask, const std::string& sem, loc_t loc = loc_t::current());
tensor atomic_min(const tensor& pointer, operand val, std::optional<operand> mask, const std::string& sem, loc_t loc = loc_t::current());
tensor atomic_and(const tensor& pointer, operand val, std::optional<operand> mask, const std::string& sem, loc_t loc = loc_t::current());
tensor atomic_or(const tensor& pointer, operand val, std::optional<operand> mask, const std::string& sem, loc_t loc = loc_t::current());
tensor atomic_xor(const tensor& pointer, operand val, std::optional<operand> mask, const std::string& sem, loc_t loc = loc_t::current());
tensor atomic_xchg(const tensor& pointer, operand val, std::optional<operand> mask, const std::string& sem, loc_t loc = loc_t::current());
tensor atomic_cas(const tensor& pointer, operand cmp, operand val, const std::string& sem, loc_t loc = loc_t::current());

}  // namespace tritium::tl
