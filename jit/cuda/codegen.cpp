// The element-loop CUDA generator's driver (class and design: jit/cuda/codegen_impl.h): the
// kernel's signature, parameters and prologue (program ids, scratch) around the body, the
// generated text's lines and scopes, the dispatch of each op to the file of its family
// (docs/cuda-backend.md, "Where an op is lowered"), and generate_cuda, which picks this generator
// (kernels without a dot) or the layout one.
#include "jit/cuda/codegen_impl.h"

#include <cerrno>
#include <functional>
#include <optional>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "common/env.h"
#include "jit/cuda/cache_hints.h"
#include "jit/cuda/device_header.h"
#include "jit/cuda/lowering/lowering.h"
#include "jit/passes/contract_fma.h"
#include "jit/passes/dce.h"

namespace tritium::jit::cuda::detail {

KernelSource Codegen::run() {
  plan_ = plan_blocks(f_, PlanOptions{.fuse_single_root = true, .fuse_store_groups = true});
  plan_registers();
  KernelSource ks;
  ks.entry = identifier(f_.name);
  ks.num_threads = nt_;
  std::string params;
  for (size_t i = 0; i < f_.params.size(); ++i) {
    const ir::Param& p = f_.params[i];
    std::string name = fmt::format("a{}_{}", i, identifier(p.name.empty() ? "arg" : p.name));
    params += fmt::format("{}{}{}", p.type.is_ptr() ? "" : "const ", ctype(p.type), p.type.is_ptr() ? " " : " ") + name + ",\n    ";
    scalars_[f_.body->args[i]] = name;
  }
  emit_block(f_.body);
  // A barrier as the kernel's last statement orders nothing (an if that wrote shared memory ends
  // in one): it only holds the CTA's warps back from exiting.
  for (const std::string last = "\n  __syncthreads();\n"; body_.ends_with(last);) body_.resize(body_.size() - last.size() + 1);
  ks.smem_bytes = smem_;
  ks.scratch_bytes = scratch_;
  ks.num_asserts = num_asserts_;
  ks.has_print = has_print_;
  std::string src = device_header();
  src += fmt::format("\n// Kernel {}: {} threads ({} warps), {} bytes of shared memory, {} bytes of scratch per program.\n",
                     f_.name, nt_, nwarps_, smem_, scratch_);
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n    {}uint8_t* tt_scratch, int* tt_assert) {{\n",
                     nt_, ks.entry, params);
  src += "  extern __shared__ __align__(1024) uint8_t tt_smem[];\n";
  src += "  const int tid = (int)threadIdx.x;\n";
  src += "  (void)tid; (void)tt_smem; (void)tt_scratch; (void)tt_assert;\n";
  if (scratch_ > 0)
    src += fmt::format(
        "  uint8_t* const tt_scratch_cta = tt_scratch + (uint64_t)(blockIdx.x + gridDim.x * (blockIdx.y + "
        "(uint64_t)gridDim.y * blockIdx.z)) * {}ull;\n",
        scratch_);
  src += decls_;
  src += "  const int32_t tt_pid0 = (int32_t)blockIdx.x, tt_pid1 = (int32_t)blockIdx.y, tt_pid2 = (int32_t)blockIdx.z;\n";
  src += "  const int32_t tt_npid0 = (int32_t)gridDim.x, tt_npid1 = (int32_t)gridDim.y, tt_npid2 = (int32_t)gridDim.z;\n";
  src += "  (void)tt_pid0; (void)tt_pid1; (void)tt_pid2; (void)tt_npid0; (void)tt_npid1; (void)tt_npid2;\n";
  src += body_;
  src += "}\n";
  ks.source = std::move(src);
  return ks;
}

void Codegen::line(const std::string& s) {
  body_ += std::string(static_cast<size_t>(indent_) * 2, ' ') + s + "\n";
  synced_ = false;
}

void Codegen::open(const std::string& s) {
  line(s + " {");
  ++indent_;
  memo_.emplace_back();
}

void Codegen::close() {
  --indent_;
  line("}");
  memo_.pop_back();
}

const std::string* Codegen::memo_find(const std::string& key) const {
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it)
    if (auto f = it->find(key); f != it->end()) return &f->second;
  return nullptr;
}

std::string Codegen::tmp(const std::string& type, const std::string& expr) {
  std::string n = fresh("t");
  line(fmt::format("{} const {} = {};", type, n, expr));  // east const: pointers stay writable
  return n;
}

void Codegen::emit_block(const ir::Block* block) {
  const auto& ops = block->ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto* group = ops[i]->kind == OpKind::Store ? plan_.store_group(ops[i]) : nullptr;
    if (!group) {
      emit_op(ops[i]);
      continue;
    }
    // A store group: the pure ops between its stores (no memory, no control flow: the block plan
    // groups only across those) go first, then the stores in one loop nest.
    size_t last = i;
    while (ops[last] != group->back()) ++last;
    for (size_t j = i + 1; j < last; ++j)
      if (ops[j]->kind != OpKind::Store) emit_op(ops[j]);
    emit_stores(*group);
    i = last;
  }
}

void Codegen::emit_op(const ir::Op* op) {
  switch (op->kind) {
    case OpKind::Yield: return;
    case OpKind::For: return emit_for(op);
    case OpKind::If: return emit_if(op);
    case OpKind::While: return emit_while(op);
    case OpKind::Store: return emit_store(op);
    case OpKind::Reduce: return emit_reduce(op);
    case OpKind::Scan: return emit_scan(op);
    case OpKind::Dot:  // generate_cuda routes every dot kernel to the layout generator
      fail("internal error: kernel {} has a dot; only the layout generator lowers dots", f_.name);
    case OpKind::Print: return emit_print(op);
    case OpKind::Assert: return emit_assert(op);
    case OpKind::DebugBarrier: return line("__syncthreads();");
    case OpKind::Histogram: return emit_histogram(op);
    case OpKind::Gather: return emit_gather(op);
    case OpKind::Split: return emit_split(op);
    default: break;
  }
  if (is_atomic(op->kind)) return emit_atomic(op);
  const ir::Value* r = op->result();
  if (r->type.is_block()) {
    if (prefetched_.count(op)) {
      regs_[r] = prefetched_.at(op);  // loaded one iteration ahead (emit_for)
    } else if (reg_planned_.count(r)) {
      std::string array = declare_registers(r->type);
      fill_registers(array, r, op);
      regs_[r] = array;
    } else if (plan_.materialized(r) && !from_row_results(r)) {
      std::string buf = alloc_buffer(r->type);
      materialize_into(r, buf, op);
      buffers_[r] = buf;
    }
    return;
  }
  scalars_[r] = tmp(ctype(r->type), emit_scalar(op));
}

}  // namespace tritium::jit::cuda::detail

namespace tritium::jit::cuda {
bool reshape_moves_elements(const ir::Op& reshape) {
  // Dims of size 1 carry no elements: [N] -> [N, 1] keeps every element's place in its dim.
  auto squeezed = [](const ir::Shape& s) {
    ir::Shape r;
    for (int64_t d : s)
      if (d != 1) r.push_back(d);
    return r;
  };
  return squeezed(reshape.operand(0)->type.shape) != squeezed(reshape.result()->type.shape);
}

bool contract_for_cuda(ir::Function& f) {
  if (!contract_multiply_add(f)) return false;
  eliminate_dead_code(f);
  return true;
}

KernelSource generate_cuda(ir::Function& f, const AxisInfoMap& analysed, const CompileOptions& opts,
                           int64_t smem_budget, int compute_capability, int64_t layouts_smem_budget) {
  std::optional<AxisInfoMap> contracted;
  if (contract_for_cuda(f)) contracted = analyze_axis_info(f);
  const AxisInfoMap& axis = contracted ? *contracted : analysed;
  f.renumber();
  const std::string& mode = env().cuda_codegen;
  check_codegen_mode(mode);
  bool has_dot = false, moves_dims = false;
  f.walk([&](ir::Op* op) {
    has_dot = has_dot || op->kind == OpKind::Dot;
    moves_dims = moves_dims || (op->kind == OpKind::Reshape && reshape_moves_elements(*op));
  });
  // Every dot kernel goes through layouts; the element-loop generator has no dot lowering. So does
  // every kernel with a reshape that moves elements between dims (tl::sort's [2, .., 2] views):
  // the element-loop generator materialises each side of such a reshape in a buffer (a 4096-wide
  // tl::sort: 156 buffers, 1.7 MB of global scratch a program), the layouts relabel bits.
  if (mode.empty() && !has_dot && !moves_dims)
    return detail::Codegen(f, axis, opts, smem_budget, compute_capability).run();
  // Layouts map a CTA's threads with power-of-two bit maps (Triton refuses other num_warps too);
  // without this check 3 warps failed deep in the layout pass with an internal error.
  if (opts.num_warps <= 0 || (opts.num_warps & (opts.num_warps - 1)) != 0)
    fail("num_warps = {}: kernel {} goes through the layout generator ({}), which needs a power of two "
         "(as Triton's num_warps)",
         opts.num_warps, f.name,
         has_dot ? "it has a dot" : moves_dims ? "it reshapes across dims" : "TRITIUM_CUDA_CODEGEN=layouts");
  return generate_cuda_layouts(f, opts, layouts_smem_budget > 0 ? layouts_smem_budget : smem_budget, compute_capability,
                               env().dump_dir);
}

void check_codegen_mode(const std::string& mode) {
  // The matmul-loop matcher that `legacy` selected was deleted at stop 41 (issue 27): a value that
  // no longer means anything is refused rather than silently ignored, so a benchmark script that
  // still sets it does not measure something other than it says.
  if (mode == "legacy")
    fail("TRITIUM_CUDA_CODEGEN=legacy: the element-loop generator's matmul-loop matcher was removed "
         "(issue 27); every kernel with a dot goes through layouts. Unset the variable, or set it to "
         "'layouts' to send the dot-free kernels through layouts too");
  if (!mode.empty() && mode != "layouts")
    fail("TRITIUM_CUDA_CODEGEN={}: unknown value; expected 'layouts' (every kernel through the layout "
         "generator) or nothing (kernels with a dot through layouts, the others through the "
         "element-loop generator)",
         mode);
}

}  // namespace tritium::jit::cuda
