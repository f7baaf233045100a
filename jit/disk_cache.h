// Compiled artefacts (object files, cubins) on disk, keyed by a content hash.
//
// Layout: <dir>/<first 2 hex chars of key>/<32 hex chars>.<kind>. Each entry is a fixed
// little-endian header followed by the payload:
//   offset  0  char[8]  magic "TRTMCACH"
//   offset  8  u32      format version (kDiskCacheFormatVersion)
//   offset 12  u32      reserved, zero
//   offset 16  u64      payload size in bytes
//   offset 24  u64[2]   payload checksum (hash_bytes of the payload: lo, hi)
//   offset 40  u64[2]   key echo (lo, hi)
//   offset 56           payload
// Entries are written to a unique temporary file and renamed into place, so readers see a
// whole entry or none, and concurrent writers of one key (threads or processes) all succeed.
// Anything that fails a check is treated as a miss (and removed): the caller recompiles, it
// never runs bytes it cannot vouch for.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/hash.h"

namespace tritium::jit {

inline constexpr uint32_t kDiskCacheFormatVersion = 1;
inline constexpr size_t kDiskCacheHeaderSize = 56;

class DiskCache {
 public:
  explicit DiskCache(std::filesystem::path dir);

  // The process-wide cache at env().cache_dir; nullptr when TRITIUM_CACHE disables it.
  static DiskCache* global();

  // The payload stored under (key, kind), or nullopt on a miss or an entry that fails a check.
  std::optional<std::vector<char>> load(const Hash128& key, std::string_view kind);
  // Best effort: a failure to write is reported once on stderr and otherwise ignored.
  void store(const Hash128& key, std::string_view kind, std::span<const char> payload);

  // kind is a file extension ("o", "cubin"): letters, digits, '_' or '-'; else tritium::Error.
  std::filesystem::path path_for(const Hash128& key, std::string_view kind) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace tritium::jit
