#include "jit/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"

namespace tritium::jit {
namespace {

constexpr char kMagic[8] = {'T', 'R', 'T', 'M', 'C', 'A', 'C', 'H'};
// Seeded so a checksum is never mistaken for a key computed from the same bytes.
constexpr uint64_t kChecksumSeed = 0x7472746D63686B31ULL;  // "trtmchk1"

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void warn_once(const std::string& message) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) log_line(fmt::format("{} (the kernel cache continues without it)", message));
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads up to n bytes; fewer only at end of file. -1 on error.
ssize_t read_full(int fd, char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

// Unique among processes (pid), threads (thread id) and reuse of both (random bits).
std::string temp_name(const std::string& final_name) {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<uint64_t>(::getpid()) << 32) ^
                                   std::hash<std::thread::id>{}(std::this_thread::get_id())};
  return fmt::format(".tmp.{}.{}.{:x}.{:016x}", final_name, static_cast<long>(::getpid()),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()), rng());
}

// Removes a bad entry, unless another process has renamed a fresh one into its place since
// we opened it (same device and inode means it is still the file we judged).
void remove_if_unchanged(const std::filesystem::path& path, int fd) {
  struct stat opened {}, current {};
  if (::fstat(fd, &opened) != 0 || ::stat(path.c_str(), &current) != 0) return;
  if (opened.st_dev == current.st_dev && opened.st_ino == current.st_ino) ::unlink(path.c_str());
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

DiskCache::DiskCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

DiskCache* DiskCache::global() {
  const Env& e = env();
  if (!e.cache_enabled) return nullptr;
  // One cache per directory, kept for the life of the process so pointers handed out stay
  // valid when tests point TRITIUM_CACHE_DIR somewhere else.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DiskCache>> caches;
  std::lock_guard lock(mutex);
  auto& slot = caches[e.cache_dir];
  if (!slot) slot = std::make_unique<DiskCache>(e.cache_dir);
  return slot.get();
}

std::filesystem::path DiskCache::path_for(const Hash128& key, std::string_view kind) const {
  bool valid = !kind.empty() && kind.size() <= 16;
  for (char c : kind)
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  if (!valid) fail("DiskCache: invalid entry kind '{}' (expected a short file extension like \"o\")", kind);
  std::string hex = key.hex();
  return dir_ / hex.substr(0, 2) / fmt::format("{}.{}", hex, kind);
}

std::optional<std::vector<char>> DiskCache::load(const Hash128& key, std::string_view kind) {
  std::filesystem::path path = path_for(key, kind);
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return std::nullopt;  // a miss (or unreadable: treated the same)

  auto reject = [&]() -> std::optional<std::vector<char>> {
    remove_if_unchanged(path, file.fd);
    return std::nullopt;
  };

  char header[kDiskCacheHeaderSize];
  if (read_full(file.fd, header, sizeof header) != static_cast<ssize_t>(sizeof header)) return reject();
  if (std::memcmp(header, kMagic, sizeof kMagic) != 0) return reject();
  if (get_u32(header + 8) != kDiskCacheFormatVersion) return reject();
  Hash128 echoed{get_u64(header + 40), get_u64(header + 48)};
  if (!(echoed == key)) return reject();

  uint64_t size = get_u64(header + 16);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return std::nullopt;
  // The file must hold exactly the header and the payload: catches truncation before we
  // allocate a size read from a possibly corrupt header.
  if (static_cast<uint64_t>(st.st_size) != kDiskCacheHeaderSize + size) return reject();

  std::vector<char> payload(size);
  if (read_full(file.fd, payload.data(), payload.size()) != static_cast<ssize_t>(payload.size())) return reject();
  Hash128 checksum = hash_bytes(payload.data(), payload.size(), kChecksumSeed);
  if (!(checksum == Hash128{get_u64(header + 24), get_u64(header + 32)})) return reject();
  return payload;
}

void DiskCache::store(const Hash128& key, std::string_view kind, std::span<const char> payload) {
  std::filesystem::path path = path_for(key, kind);
  std::filesystem::path shard = path.parent_path();
  std::error_code ec;
  std::filesystem::create_directories(shard, ec);
  if (ec) {
    warn_once(fmt::format("cannot create cache directory {}: {}", shard.string(), ec.message()));
    return;
  }

  char header[kDiskCacheHeaderSize] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  put_u32(header + 8, kDiskCacheFormatVersion);
  put_u32(header + 12, 0);
  put_u64(header + 16, payload.size());
  Hash128 checksum = hash_bytes(payload.data(), payload.size(), kChecksumSeed);
  put_u64(header + 24, checksum.lo);
  put_u64(header + 32, checksum.hi);
  put_u64(header + 40, key.lo);
  put_u64(header + 48, key.hi);

  std::filesystem::path temp = shard / temp_name(path.filename().string());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    warn_once(fmt::format("cannot write cache entry {}: {}", temp.string(), std::strerror(errno)));
    return;
  }
  int err = 0;
  errno = 0;
  if (!write_all(fd, header, sizeof header) || !write_all(fd, payload.data(), payload.size())) err = errno ? errno : EIO;
  // No fsync: after a crash a torn entry fails its checksum and is recompiled.
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0) {
    if (::rename(temp.c_str(), path.c_str()) == 0) return;
    err = errno;
  }
  ::unlink(temp.c_str());
  warn_once(fmt::format("cannot write cache entry {}: {}", path.string(), std::strerror(err)));
}

}  // namespace tritium::jit
