// What a compiled cubin says about its kernel without a GPU or cuobjdump: its SASS instruction
// count and its registers (the tests' and tools' size checks of generated code).
#pragma once
#include <cstdint>
#include <vector>

namespace tritium::jit::cuda {

// The SASS instructions of the kernels in `cubin` (an ELF file): the bytes of its .text sections
// over 16, the size of one instruction from Volta on; -1 when `cubin` is not an ELF file.
int64_t cubin_instructions(const std::vector<char>& cubin);

// The registers ptxas gave the kernel of `cubin`: the EIATTR_REGCOUNT attribute (0x2f, a symbol
// index and the count) of its .nv.info sections (the largest, for several kernels); -1 when there is none.
int cubin_registers(const std::vector<char>& cubin);

}  // namespace tritium::jit::cuda
