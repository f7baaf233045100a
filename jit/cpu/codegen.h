// IR -> LLVM IR for the CPU. A program instance is one iteration of the entry function's loop
// over program ids; block values are fused into loop nests (explicitly vectorised, masked
// loads/stores through LLVM's masked intrinsics) or kept in stack buffers where they are reused.
// docs/cpu-backend.md describes the scheme.
#pragma once
#include <memory>

#include "ir/ir.h"
#include "jit/passes/axis_info.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace tritium::jit::cpu {

// Every CPU kernel object exports this symbol:
//   void tritium_kernel(const uint64_t* args, i32 nx, i32 ny, i32 nz, i64 begin, i64 end, void* launch)
// running the programs with linear ids [begin, end) of an nx*ny*nz grid (x fastest).
inline constexpr const char* kEntrySymbol = "tritium_kernel";

// Functions the generated code calls back into (defined in cpu_runtime.cpp).
inline constexpr const char* kPrintSymbol = "tritium_cpu_print";
inline constexpr const char* kAssertSymbol = "tritium_cpu_assert_fail";

// The host's vector register file: the dot micro-tile is sized to fit it.
struct VectorRegisters {
  int bytes = 64;  // of one register (AVX-512)
  int count = 32;
  // AVX512_BF16's VDPBF16PS (bf16 pairs multiplied and summed into f32 lanes): bf16 dots take two
  // k-steps an instruction instead of widening each operand to f32 for an FMA.
  bool bf16_dot = false;
};

std::unique_ptr<llvm::Module> lower_to_llvm(ir::Function& f, const AxisInfoMap& axis, llvm::LLVMContext& ctx,
                                            const VectorRegisters& regs = {});

}  // namespace tritium::jit::cpu
