// How the CUDA generators spell a load's or store's cache hints (ir/cache_hints.h). PTX has one
// form with a cache operator (ld.global.cg) and another with eviction priorities
// (ld.global.L1::evict_first): where a kernel gives both, the cache modifier wins.
#pragma once
#include <string>

#include "ir/ir.h"

namespace tritium::jit::cuda {

// ".ca", ".cg", ".cv", ".wb", ".cs", ".wt", ".L1::evict_first", ".L1::evict_last", or "".
std::string ptx_cache_qualifier(const ir::Op& op);
// The device header's helper suffix for the same qualifier ("_cg", "_ef", ...; "" without hints):
// tt_ld_pred_cg<BYTES>, tt_st_pred_cg<BYTES>, tt_ld_cg(p), tt_st_cg(p, v) (device_header.cpp).
std::string cache_hint_suffix(const ir::Op& op);

}  // namespace tritium::jit::cuda
