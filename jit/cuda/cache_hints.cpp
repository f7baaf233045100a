#include "jit/cuda/cache_hints.h"

#include "ir/cache_hints.h"

namespace tritium::jit::cuda {

std::string ptx_cache_qualifier(const ir::Op& op) {
  ir::CacheHints h = ir::cache_hints(op);
  if (h.cache != ir::CacheModifier::none) return ir::cache_modifier_name(h.cache);
  if (h.eviction == ir::EvictionPolicy::evict_first) return ".L1::evict_first";
  if (h.eviction == ir::EvictionPolicy::evict_last) return ".L1::evict_last";
  return "";
}

std::string cache_hint_suffix(const ir::Op& op) {
  ir::CacheHints h = ir::cache_hints(op);
  if (h.cache != ir::CacheModifier::none) return std::string("_") + (ir::cache_modifier_name(h.cache) + 1);
  if (h.eviction == ir::EvictionPolicy::evict_first) return "_ef";
  if (h.eviction == ir::EvictionPolicy::evict_last) return "_el";
  return "";
}

}  // namespace tritium::jit::cuda
