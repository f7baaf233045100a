// Which pointer parameters a kernel addresses through 32-bit offsets that run-time arithmetic
// computes (pid * BLOCK + arange, row * stride, ...): such offsets wrap past 2^31 - 1, so the
// launch refuses a tensor argument whose elements reach beyond that (docs/language.md,
// "64-bit offsets").
#pragma once
#include <vector>

#include "ir/ir.h"

namespace tritium::jit {

// By index in f.params: the location of the first pointer arithmetic that adds a 32-bit offset
// computed from run-time values to a pointer derived from that parameter; an unknown location
// (known() false) where there is none. Offsets that are constants or aranges only, 64-bit
// offsets and 32-bit values used as they are (a program id, a loaded index, an argument) are not
// counted: they cannot wrap.
std::vector<SourceLoc> narrow_offsets(ir::Function& f);

}  // namespace tritium::jit
