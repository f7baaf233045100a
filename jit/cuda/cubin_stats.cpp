#include "jit/cuda/cubin_stats.h"

#include <cstring>

namespace tritium::jit::cuda {

int64_t cubin_instructions(const std::vector<char>& cubin) {
  // ELF64 little-endian: the section header table's offset at 0x28, entry size / count / name
  // table index at 0x3a / 0x3c / 0x3e; a section header's name at +0, offset at +24, size at +32.
  auto u16 = [&](size_t at) { uint16_t v; std::memcpy(&v, cubin.data() + at, 2); return v; };
  auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, cubin.data() + at, 4); return v; };
  auto u64 = [&](size_t at) { uint64_t v; std::memcpy(&v, cubin.data() + at, 8); return v; };
  if (cubin.size() < 64 || std::memcmp(cubin.data(), "\x7f" "ELF", 4) != 0) return -1;
  const uint64_t shoff = u64(0x28);
  const uint16_t shentsize = u16(0x3a), shnum = u16(0x3c), shstrndx = u16(0x3e);
  auto header = [&](int i) { return shoff + static_cast<uint64_t>(i) * shentsize; };
  if (header(shnum) > cubin.size()) return -1;
  const uint64_t names = u64(header(shstrndx) + 24);
  int64_t bytes = 0;
  for (int i = 0; i < shnum; ++i) {
    const uint64_t name = names + u32(header(i));
    if (name + 6 <= cubin.size() && std::strncmp(cubin.data() + name, ".text.", 6) == 0)
      bytes += static_cast<int64_t>(u64(header(i) + 32));
  }
  return bytes / 16;
}

}  // namespace tritium::jit::cuda
