// Triton's cache_modifier and eviction_policy of a load or store: hints the CUDA backend turns into
// PTX cache operators (ld.global.cg, st.global.cs, ...) and L1 eviction priorities
// (.L1::evict_first / .L1::evict_last); the CPU backend ignores them. They live in the op's
// attrs.ints (a Load: {has_mask, has_other, cache, eviction}; a Store: {cache, eviction}), absent
// when both are the default, so ops without hints print and hash as before.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ir/ir.h"

namespace tritium::ir {

enum class CacheModifier : int64_t { none = 0, ca, cg, cv, wb, cs, wt };
enum class EvictionPolicy : int64_t { normal = 0, evict_first, evict_last };

struct CacheHints {
  CacheModifier cache = CacheModifier::none;
  EvictionPolicy eviction = EvictionPolicy::normal;
  bool any() const { return cache != CacheModifier::none || eviction != EvictionPolicy::normal; }
  bool operator==(const CacheHints&) const = default;
};

// Triton's spellings: loads take "", ".ca", ".cg", ".cv"; stores "", ".wb", ".cg", ".cs", ".wt";
// both take eviction policies "", "evict_first", "evict_last". Nothing for another string.
std::optional<CacheModifier> parse_load_cache_modifier(const std::string& s);
std::optional<CacheModifier> parse_store_cache_modifier(const std::string& s);
std::optional<EvictionPolicy> parse_eviction_policy(const std::string& s);
const char* cache_modifier_name(CacheModifier c);   // ".cg"; "" for none
const char* eviction_policy_name(EvictionPolicy e);  // "evict_first"; "" for normal

// The hints of a Load or Store (defaults for any other op), and setting them.
CacheHints cache_hints(const Op& op);
void set_cache_hints(Op& op, CacheHints h);

}  // namespace tritium::ir
