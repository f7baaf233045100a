// What TRITIUM_DEBUG changes in a kernel's IR (docs/debug-mode.md). In debug mode every load, store
// and atomic whose pointer comes from a pointer parameter is checked against that argument's
// allocation, signed and unsigned 32-bit index arithmetic feeding a pointer offset is checked for
// wrap-around, and tl::device_assert stays. Outside debug mode device_asserts are removed (as
// Triton compiles them out without TRITON_DEBUG), and nothing else changes.
#pragma once
#include <cstdint>

#include "ir/ir.h"

namespace tritium::jit {

// attrs.ints[0] of an Assert says what it checks (a user's tl::device_assert has no ints) and how
// its payload operands (after the condition, one i64 value per lane each) are read on failure.
enum class CheckKind : int64_t {
  user = 0,      // tl::device_assert; no payload
  access = 1,    // payload: address, allocation begin, allocation end; ints[1]: bytes accessed
  overflow = 2,  // payload: the exact (64-bit) result of the wrapped 32-bit operation
};
CheckKind check_kind(const ir::Op& assert_op);

// Debug mode: appends two hidden i64 parameters per pointer parameter, in parameter order (the
// first and one-past-the-last byte of the argument's allocation; the launcher passes 0 and
// INT64_MAX for a raw pointer, which disables its checks), then inserts the checks. An access
// whose pointer cannot be traced to one parameter is not checked. A failing lane of a load, store
// or masked atomic is masked off, so the bad access never happens and the launch can report it.
void add_debug_checks(ir::Function& f);

// Normal mode: removes the user's device_asserts; true if there were any.
bool remove_device_asserts(ir::Function& f);

}  // namespace tritium::jit
