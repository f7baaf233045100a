// What a compiled cubin says about its kernel without a GPU or cuobjdump: its SASS instruction
// count and its registers (the tests' and tools' size checks of generated code).
#pragma once
#include <cstdint>
#include <vector>

namespace tritium::jit::cuda {

// The SASS instructions of the kernels in `cubin` (an ELF file): the bytes of its .text sections
// over 16, the size of one instruction from Volta on; -1 when `cubin` is not an ELF file.
int64_t cubin_instructions(const std::vector<char>& cubin);

// How many SASS instructions of `cubin`'s kernels have opcode `opcode`: the low 12 bits of each
// 16-byte instruction (Volta to Hopper encode the opcode there, the predicate above it), e.g.
// kSassF2F; -1 when `cubin` is not an ELF file. One opcode covers all of an instruction's variants
// (F2F.BF16.F32 and F2F.F16.F32 alike).
int64_t cubin_opcode_count(const std::vector<char>& cubin, uint32_t opcode);
// F2F, a float-to-float conversion (cvt.rn.bf16.f32, cvt.rn.f16.f32): it issues on the conversion
// unit, at 16 results a clock an SM on sm_80 / sm_90 - an eighth of FMUL's rate.
inline constexpr uint32_t kSassF2F = 0x304;

// The registers ptxas gave the kernel of `cubin`: the EIATTR_REGCOUNT attribute (0x2f, a symbol
// index and the count) of its .nv.info sections (the largest, for several kernels); -1 when there is none.
int cubin_registers(const std::vector<char>& cubin);

}  // namespace tritium::jit::cuda
