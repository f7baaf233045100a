#include "jit/cuda/cubin_stats.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace tritium::jit::cuda {

namespace {

template <class T> T read(const std::vector<char>& b, uint64_t at) {
  T v{};
  if (at + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// Calls f(name, offset, size) for each section of an ELF64 little-endian file (the section header
// table's offset at 0x28, entry size / count / name-table index at 0x3a / 0x3c / 0x3e; a header's
// name at +0, offset at +24, size at +32). False when `elf` is not such a file.
bool for_each_section(const std::vector<char>& elf, const std::function<void(const char*, uint64_t, uint64_t)>& f) {
  if (elf.size() < 64 || std::memcmp(elf.data(), "\x7f" "ELF", 4) != 0) return false;
  const uint64_t shoff = read<uint64_t>(elf, 0x28);
  const uint16_t shentsize = read<uint16_t>(elf, 0x3a), shnum = read<uint16_t>(elf, 0x3c), shstrndx = read<uint16_t>(elf, 0x3e);
  auto header = [&](int i) { return shoff + static_cast<uint64_t>(i) * shentsize; };
  if (header(shnum) > elf.size()) return false;
  const uint64_t names = read<uint64_t>(elf, header(shstrndx) + 24);
  for (int i = 0; i < shnum; ++i) {
    const uint64_t name = names + read<uint32_t>(elf, header(i));
    if (name >= elf.size() || !std::memchr(elf.data() + name, 0, elf.size() - name)) continue;
    f(elf.data() + name, read<uint64_t>(elf, header(i) + 24), read<uint64_t>(elf, header(i) + 32));
  }
  return true;
}

}  // namespace

int64_t cubin_instructions(const std::vector<char>& cubin) {
  int64_t bytes = 0;
  bool elf = for_each_section(cubin, [&](const char* name, uint64_t, uint64_t size) {
    if (std::strncmp(name, ".text.", 6) == 0) bytes += static_cast<int64_t>(size);
  });
  return elf ? bytes / 16 : -1;
}

int64_t cubin_opcode_count(const std::vector<char>& cubin, uint32_t opcode) {
  int64_t n = 0;
  bool elf = for_each_section(cubin, [&](const char* name, uint64_t begin, uint64_t size) {
    if (std::strncmp(name, ".text.", 6) != 0) return;
    const uint64_t end = std::min<uint64_t>(begin + size, cubin.size());
    for (uint64_t at = begin; at + 16 <= end; at += 16) n += (read<uint64_t>(cubin, at) & 0xfffu) == opcode;
  });
  return elf ? n : -1;
}

int cubin_registers(const std::vector<char>& cubin) {
  int regs = -1;
  for_each_section(cubin, [&](const char* name, uint64_t begin, uint64_t size) {
    if (std::strncmp(name, ".nv.info", 8) != 0) return;
    const uint64_t end = std::min<uint64_t>(begin + size, cubin.size());
    for (uint64_t at = begin; at + 4 <= end;) {  // attributes: format, id, then a value by format
      const auto format = static_cast<uint8_t>(cubin[at]), attribute = static_cast<uint8_t>(cubin[at + 1]);
      if (format == 4) {  // a sized value: u16 size, then the bytes
        if (attribute == 0x2f) regs = std::max(regs, static_cast<int>(read<uint32_t>(cubin, at + 8)));
        at += 4 + read<uint16_t>(cubin, at + 2);
      } else {
        at += format == 1 ? 2 : 4;
      }
    }
  });
  return regs;
}

}  // namespace tritium::jit::cuda
