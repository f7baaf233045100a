// The optimisation pipeline run on every traced kernel before code generation.
#pragma once
#include <string>

#include "ir/ir.h"

namespace tritium::jit {

// Verifies `f`, runs fold_constants, CSE and DCE until none changes anything (bounded), and
// verifies again. With a non-empty dump_dir (created if needed), writes the IR before the passes
// and after every pass that changed it to "<dump_dir>/<function name>.<NN>-<pass>.ir", NN counting from 00.
void run_passes(ir::Function& f, const std::string& dump_dir);

}  // namespace tritium::jit
