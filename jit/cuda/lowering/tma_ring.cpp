// The pipelined ring's tiles through the bulk tensor copy engine (TMA) on Hopper. Which loads the
// copy can serve is the shared analysis's decision (jit/cuda/tma.h: the element-loop generator's
// matmul loop asks the same questions); here: a ring whose every load it takes is filled by thread
// 0 alone - one mbarrier per stage armed with the stage's bytes, one copy per 128-byte column block
// of a tile (64 16-bit or 32 f32 elements) - and the consumers wait on the mbarrier instead of on their own cp.async groups. The
// ring's stages have the 128-byte swizzle a 128-byte x rows box lands in (tile_offset, convert.cpp), at
// 1024-byte boundaries.
#include "jit/cuda/lowering/lowering.h"

namespace tritium::jit::cuda::lowering {

// Whether every reader of a tile (through views) is a tf32 dot on wgmma: the copy engine may then
// round its f32 elements to tf32 on the way in (to nearest even; wgmma itself reads the top 19 bits
// of each word as they are), for nothing.
bool Lowering::only_tf32_wgmma_reads(const ir::Value* tile) const {
  bool any = false, other = false;
  std::vector<const ir::Value*> work{tile};
  while (!work.empty()) {
    const ir::Value* v = work.back();
    work.pop_back();
    f_.walk([&](ir::Op* u) {
      for (size_t i = 0; i < u->operands.size(); ++i) {
        if (u->operand(i) != v) continue;
        if (u->kind == OpKind::Permute || u->kind == OpKind::MultipleOf || u->kind == OpKind::MaxContiguous) {
          work.push_back(u->result());
        } else if (u->kind == OpKind::Dot && i < 2 && u->attrs.str == "tf32" && layout(u->result()).kind == LayoutKind::Mma &&
                   layout(u->result()).mma.version == 3) {
          any = true;
        } else {
          other = true;
        }
      }
    });
  }
  return any && !other;
}

std::optional<Lowering::TmaRing> Lowering::plan_tma_ring(const ir::Op* loop, const std::vector<Pipelined>& pipes) {
  if (cc_ < 90 || pipes.empty() || tma_maps_.size() + pipes.size() > kMaxTensorMaps) return std::nullopt;
  TmaContext ctx{f_, axis_, cc_, [this](const ir::Value* v) -> std::optional<std::string> {
                   auto it = scalars_.find(v);
                   if (it == scalars_.end()) return std::nullopt;
                   return it->second;
                 }};
  const ir::Block* body = loop->regions[0];
  TmaRing ring;
  std::vector<std::string> guards;
  for (const Pipelined& p : pipes) {
    if (!p.convert) return std::nullopt;  // a register load: cp.async's ring (emit_for)
    const Layout& t = layout(p.convert->result());
    const ir::Type& ty = p.load->result()->type;
    // A row-major tile (the contiguous dim last) in 128-byte swizzled rows: the box's layout.
    if (ty.rank() != 2 || t.order.empty() || t.order[0] != 1 || t.swizzle != 128 || t.shape != ty.shape)
      return std::nullopt;
    // A carried pointer: its value before the loop and its step (emit_for's inductions).
    const ir::Value* init = nullptr;
    const ir::Value* step = nullptr;
    const ir::Value* ptr = p.load->operand(0);
    if (auto it = inductions_.find(ptr); it != inductions_.end() && it->second.ptr && ptr->owner == body) {
      init = loop->operand(3 + (ptr->index - 1));
      step = it->second.step;
    }
    std::optional<TmaTile> tile =
        plan_tma_load(ctx, p.load, ty.shape[0], ty.shape[1], loop, init, step, only_tf32_wgmma_reads(p.convert->result()));
    if (!tile) return std::nullopt;
    guards.push_back(tile->guard);
    ring.tx_bytes += tile_bytes(t, ty.dtype);
    ring.tiles.push_back(*tile);
  }
  ring.guard = fmt::format("({})", fmt::join(guards, ") && ("));
  return ring;
}

void Lowering::begin_tma_ring(const ir::Op* loop, const std::vector<Pipelined>& pipes, TmaRing& ring, int stages,
                              const std::string& trips, const std::string& use_tma) {
  ring.first_map = static_cast<int>(tma_maps_.size());
  for (const TmaTile& t : ring.tiles) tma_maps_.push_back(t.map);
  // A pointer block's starts, read in the loop's TMA refills (no division: see tma.cpp's guard).
  for (TmaTile& t : ring.tiles)
    if (!t.row)
      for (std::string& st : t.start) st = tmp("int", fmt::format("(int)({})", st));
  open(fmt::format("if ({})", use_tma));
  open("if (tid == 0)");
  for (size_t i = 0; i < ring.tiles.size(); ++i)
    line(fmt::format("tt_prefetch_tensormap(&tt_tmap{});", ring.first_map + static_cast<int>(i)));
  for (int s = 0; s < stages; ++s) line(fmt::format("tt_mbarrier_init({} + {}, 1);", ring.bar, 8 * s));
  line("tt_fence_mbarrier_init();");
  close();
  for (int k = 0; k + 1 < stages; ++k)
    issue_tma_stage(loop, pipes, ring, fmt::format("{}", k), fmt::format("{}", k), fmt::format("{}", k),
                    fmt::format("{} < {}", k, trips));
  close();  // the caller emits the else branch (cp.async's prefill) and the barrier after both
}

void Lowering::end_tma_ring(const TmaRing& ring, int stages) {
  line("__syncthreads();  // every thread is past its last wait before the mbarriers go");
  open("if (tid == 0)");
  for (int s = 0; s < stages; ++s) line(fmt::format("tt_mbarrier_inval({} + {});", ring.bar, 8 * s));
  close();
  synced_ = true;
}

void Lowering::issue_tma_stage(const ir::Op* loop, const std::vector<Pipelined>& pipes, const TmaRing& ring,
                               const std::string& ahead, const std::string& trip, const std::string& slot,
                               const std::string& live) {
  open(fmt::format("if (tid == 0 && {})", live));
  const std::string bar = tmp("uint32_t", fmt::format("{} + ({}) * 8", ring.bar, slot));
  line(fmt::format("tt_mbarrier_expect_tx({}, {});", bar, ring.tx_bytes));
  ahead_memo_.clear();
  for (size_t i = 0; i < pipes.size(); ++i) {
    const Pipelined& p = pipes[i];
    const TmaTile& t = ring.tiles[i];
    const int64_t R = p.load->result()->type.shape[0], C = p.load->result()->type.shape[1];
    const int64_t block = 128 / dtype_bytes(p.load->result()->type.dtype);  // elements of a 128-byte column block
    // The box's origin (column, row): a pointer block's start + trip * advance; a block pointer's
    // indices at element (0, 0), which thread 0's register 0 holds in any layout.
    std::string col, row;
    if (!t.row) {
      col = tmp("int", fmt::format("{} + ({}) * {}", t.start[1], trip, t.adv[1]));
      row = tmp("int", fmt::format("{} + ({}) * {}", t.start[0], trip, t.adv[0]));
    } else {
      col = tmp("int", ahead_value(t.col, 0, ahead, loop));
      row = tmp("int", ahead_value(t.row, 0, ahead, loop));
    }
    const std::string stage = fmt::format("tt_smem_base + {} + ({}) * {}", p.offset, slot, p.stage_bytes);
    for (int64_t c = 0; c < C / block; ++c)
      line(fmt::format("tt_tma_load_2d({} + {}, &tt_tmap{}, {} + {}, {}, {});", stage, c * R * 128,
                       ring.first_map + static_cast<int>(i), col, c * block, row, bar));
  }
  ahead_memo_.clear();
  close();
}

}  // namespace tritium::jit::cuda::lowering
