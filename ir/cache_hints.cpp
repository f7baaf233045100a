#include "ir/cache_hints.h"

namespace tritium::ir {

std::optional<CacheModifier> parse_load_cache_modifier(const std::string& s) {
  if (s.empty()) return CacheModifier::none;
  if (s == ".ca") return CacheModifier::ca;
  if (s == ".cg") return CacheModifier::cg;
  if (s == ".cv") return CacheModifier::cv;
  return std::nullopt;
}

std::optional<CacheModifier> parse_store_cache_modifier(const std::string& s) {
  if (s.empty()) return CacheModifier::none;
  if (s == ".wb") return CacheModifier::wb;
  if (s == ".cg") return CacheModifier::cg;
  if (s == ".cs") return CacheModifier::cs;
  if (s == ".wt") return CacheModifier::wt;
  return std::nullopt;
}

std::optional<EvictionPolicy> parse_eviction_policy(const std::string& s) {
  if (s.empty()) return EvictionPolicy::normal;
  if (s == "evict_first") return EvictionPolicy::evict_first;
  if (s == "evict_last") return EvictionPolicy::evict_last;
  return std::nullopt;
}

const char* cache_modifier_name(CacheModifier c) {
  switch (c) {
    case CacheModifier::ca: return ".ca";
    case CacheModifier::cg: return ".cg";
    case CacheModifier::cv: return ".cv";
    case CacheModifier::wb: return ".wb";
    case CacheModifier::cs: return ".cs";
    case CacheModifier::wt: return ".wt";
    default: return "";
  }
}

const char* eviction_policy_name(EvictionPolicy e) {
  switch (e) {
    case EvictionPolicy::evict_first: return "evict_first";
    case EvictionPolicy::evict_last: return "evict_last";
    default: return "";
  }
}

namespace {
// Where the hints start in attrs.ints: after a Load's {has_mask, has_other}.
size_t hints_at(const Op& op) { return op.kind == OpKind::Load ? 2 : 0; }
}  // namespace

CacheHints cache_hints(const Op& op) {
  if (op.kind != OpKind::Load && op.kind != OpKind::Store) return {};
  const auto& f = op.attrs.ints;
  size_t at = hints_at(op);
  if (f.size() < at + 2) return {};
  return {static_cast<CacheModifier>(f[at]), static_cast<EvictionPolicy>(f[at + 1])};
}

void set_cache_hints(Op& op, CacheHints h) {
  auto& f = op.attrs.ints;
  size_t at = hints_at(op);
  if (!h.any()) {
    if (f.size() > at) f.resize(at);
    return;
  }
  if (op.kind == OpKind::Load && f.size() < 2)
    f = {op.operands.size() >= 2, op.operands.size() >= 3};
  f.resize(at + 2);
  f[at] = static_cast<int64_t>(h.cache);
  f[at + 1] = static_cast<int64_t>(h.eviction);
}

}  // namespace tritium::ir
