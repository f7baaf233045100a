#include "jit/passes/pipeline.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "jit/passes/combine_dot_add.h"
#include "jit/passes/cse.h"
#include "jit/passes/dce.h"
#include "jit/passes/fold_constants.h"
#include "jit/passes/fuse_nested_loops.h"
#include "jit/passes/reassociate_addptr.h"

namespace tritium::jit {
namespace {

class Dumper {
 public:
  Dumper(ir::Function& f, const std::string& dir) : f_(f), dir_(dir) {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw Error(fmt::format("cannot create IR dump directory '{}': {}", dir_, ec.message()));
  }

  void operator()(const char* pass) {
    if (dir_.empty()) return;
    auto path = std::filesystem::path(dir_) / fmt::format("{}.{:02}-{}.ir", f_.name, next_++, pass);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << ir::print(f_);
    if (!out) throw Error(fmt::format("cannot write IR dump '{}'", path.string()));
  }

 private:
  ir::Function& f_;
  std::string dir_;
  int next_ = 0;
};

}  // namespace

void run_passes(ir::Function& f, const std::string& dump_dir) {
  Dumper dump(f, dump_dir);
  ir::verify(f);
  dump("input");
  // Once, first: the rounds below simplify the fused loop's index arithmetic with the rest.
  if (fuse_nested_loops(f)) dump("fuse_nested_loops");
  // Each round can only shrink or simplify the IR; the bound guards against a pass pair that
  // keeps undoing each other.
  constexpr int kMaxRounds = 8;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = false;
    if (fold_constants(f)) changed = true, dump("fold_constants");
    if (reassociate_pointer_chains(f)) changed = true, dump("reassociate_addptr");
    if (eliminate_common_subexpressions(f)) changed = true, dump("cse");
    if (eliminate_dead_code(f)) changed = true, dump("dce");
    if (combine_dot_add(f)) changed = true, dump("combine_dot_add");
    if (!changed) break;
  }
  ir::verify(f);
}

}  // namespace tritium::jit
