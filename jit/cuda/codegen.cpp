// The element-loop CUDA generator's driver (class and design: jit/cuda/codegen_impl.h): the
// kernel's signature, parameters and prologue (program ids, scratch, the persistent programs'
// walk) around the body, the generated text's lines and scopes, the dispatch of each op to the
// file of its family (docs/cuda-backend.md, "Where an op is lowered"), and generate_cuda, which
// picks this generator or the layout one.
#include "jit/cuda/codegen_impl.h"

#include <cerrno>
#include <functional>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "common/env.h"
#include "jit/cuda/cache_hints.h"
#include "jit/cuda/device_header.h"
#include "jit/cuda/lowering/lowering.h"

namespace tritium::jit::cuda::detail {

KernelSource Codegen::run() {
  plan_ = plan_blocks(f_, PlanOptions{.fuse_single_root = true});
  plan_registers();
  // Persistent programs need Hopper's asynchronous store, a candidate for it - the kernel's last
  // memory access a masked store of a 2-D block at the top level (nothing later may touch what the
  // copy writes while it drains) - and programs that never wait on each other: no atomics (a lock
  // spun on by a later program of the same CTA would never open).
  may_persist_ = cc_ >= 90;
  f_.walk([&](ir::Op* op) {
    if (op->kind == OpKind::Load || op->kind == OpKind::Store || is_atomic(op->kind)) last_memory_op_ = op;
    if (is_atomic(op->kind)) may_persist_ = false;
  });
  const ir::Op* last = last_memory_op_;
  may_persist_ = may_persist_ && last && last->kind == OpKind::Store && last->parent == f_.body &&
                 last->operands.size() == 3 && last->operand(0)->type.rank() == 2;
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
  smem_ = std::max(smem_, smem_peak_);
  ks.smem_bytes = smem_;
  ks.scratch_bytes = scratch_;
  ks.num_asserts = num_asserts_;
  ks.has_print = has_print_;
  std::string src = device_header();
  src += fmt::format("\n// Kernel {}: {} threads ({} warps), {} bytes of shared memory, {} bytes of scratch per program.\n",
                     f_.name, nt_, nwarps_, smem_, scratch_);
  ks.tma_maps = tma_maps_;
  std::string maps;
  if (!tma_maps_.empty()) src += "struct __align__(64) tt_tmap_t { unsigned long long v[16]; };  // a CUtensorMap\n";
  for (size_t i = 0; i < tma_maps_.size(); ++i) maps += fmt::format(", const __grid_constant__ tt_tmap_t tt_tmap{}", i);
  ks.persistent = persistent_;
  ks.matmul_loops = matmul_loops_;
  // A persistent kernel takes the program grid as parameters; its CTAs (as many as are resident,
  // a 1-D grid) walk over the programs, x fastest, as the hardware would hand them out.
  const char* grid = persistent_ ? ", const int32_t tt_grid0, const int32_t tt_grid1, const int32_t tt_grid2" : "";
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n    {}uint8_t* tt_scratch, int* tt_assert{}{}) {{\n",
                     nt_, ks.entry, params, grid, maps);
  src += "  extern __shared__ __align__(1024) uint8_t tt_smem[];\n";
  src += "  const int tid = (int)threadIdx.x;\n";
  src += "  (void)tid; (void)tt_smem; (void)tt_scratch; (void)tt_assert;\n";
  if (scratch_ > 0)
    src += fmt::format(
        "  uint8_t* const tt_scratch_cta = tt_scratch + (uint64_t)(blockIdx.x + gridDim.x * (blockIdx.y + "
        "(uint64_t)gridDim.y * blockIdx.z)) * {}ull;\n",
        scratch_);
  src += decls_;
  // C's deferred copy (store_through_tma): issued by thread 0 where the next program's TMA loop
  // has asked for its first tiles, by that program's epilogue otherwise, and after the last.
  if (persistent_ || flush_calls_) {
    src += "  int tt_store_col = 0, tt_store_row = 0;\n  bool tt_store_pending = false;\n";
    src += "  (void)tt_store_col; (void)tt_store_row; (void)tt_store_pending;\n";
    src += "  auto tt_flush_store = [&]() {\n";
    if (persistent_)
      src += "    if (tid == 0 && tt_store_pending) {\n" + store_flush_ +
             "      tt_bulk_commit();\n      tt_store_pending = false;\n    }\n";
    src += "  };\n";
  }
  if (persistent_) {
    src += "  const int64_t tt_programs = (int64_t)tt_grid0 * tt_grid1 * tt_grid2;\n";
    src += "  for (int64_t tt_program = blockIdx.x; tt_program < tt_programs; tt_program += gridDim.x) {\n";
    src += "  const int32_t tt_pid0 = (int32_t)(tt_program % tt_grid0), tt_pid1 = (int32_t)(tt_program / tt_grid0 % tt_grid1),\n";
    src += "                tt_pid2 = (int32_t)(tt_program / ((int64_t)tt_grid0 * tt_grid1));\n";
    src += "  const int32_t tt_npid0 = tt_grid0, tt_npid1 = tt_grid1, tt_npid2 = tt_grid2;\n";
  } else {
    src += "  const int32_t tt_pid0 = (int32_t)blockIdx.x, tt_pid1 = (int32_t)blockIdx.y, tt_pid2 = (int32_t)blockIdx.z;\n";
    src += "  const int32_t tt_npid0 = (int32_t)gridDim.x, tt_npid1 = (int32_t)gridDim.y, tt_npid2 = (int32_t)gridDim.z;\n";
  }
  src += "  (void)tt_pid0; (void)tt_pid1; (void)tt_pid2; (void)tt_npid0; (void)tt_npid1; (void)tt_npid2;\n";
  src += body_;
  if (persistent_) {
    src += "  __syncthreads();  // the next program reuses the shared buffers\n";
    src += "  }\n";
    src += "  tt_flush_store();\n";
    src += "  if (tid == 0) tt_bulk_wait_all();  // the last copies are done before the CTA's shared memory goes\n";
  }
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
  for (const ir::Op* op : block->ops) emit_op(op);
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
    case OpKind::Dot: return emit_dot(op);
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
    } else if (plan_.materialized(r)) {
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
KernelSource generate_cuda(ir::Function& f, const AxisInfoMap& axis, const CompileOptions& opts,
                           int64_t smem_budget, int compute_capability) {
  f.renumber();
  const std::string& mode = env().cuda_codegen;
  if (mode == "layouts") return generate_cuda_layouts(f, opts, smem_budget, compute_capability, env().dump_dir);
  int dots = 0;
  f.walk([&](ir::Op* op) { dots += op->kind == OpKind::Dot; });
  // Every dot kernel goes through layouts. The matmul-loop matcher (TRITIUM_CUDA_CODEGEN=legacy,
  // kept for comparison until it is deleted) took the op library's matmul with a transposed
  // operand too, and ran the GPT's Linear layers on the H100 ~10 x slower than layouts did
  // (stop 40: 1.1 ms against 82 us a matmul call, bf16).
  if (mode == "legacy" || dots == 0) return detail::Codegen(f, axis, opts, smem_budget, compute_capability).run();
  return generate_cuda_layouts(f, opts, smem_budget, compute_capability, env().dump_dir);
}

}  // namespace tritium::jit::cuda
