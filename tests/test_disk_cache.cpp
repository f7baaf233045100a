#include "test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/env.h"
#include "common/error.h"
#include "common/hash.h"
#include "jit/disk_cache.h"

namespace tt = tritium::test;
namespace fs = std::filesystem;
using tritium::Hash128;
using tritium::jit::DiskCache;

namespace {

// A fresh directory per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tritium-disk-cache-test-XXXXXX").string();
    BOOST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};


std::vector<char> bytes_of(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

std::vector<char> pattern_payload(size_t size, unsigned salt) {
  std::vector<char> p(size);
  for (size_t i = 0; i < size; ++i) p[i] = static_cast<char>((i * 131 + salt) & 0xFF);
  return p;
}

std::vector<char> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

size_t count_temp_files(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().rfind(".tmp", 0) == 0) ++n;
  return n;
}

const Hash128 kKey = tritium::hash_bytes("some kernel IR", 14);
const Hash128 kOtherKey = tritium::hash_bytes("another kernel IR", 17);

}  // namespace

BOOST_AUTO_TEST_SUITE(test_disk_cache)

BOOST_AUTO_TEST_CASE(store_then_load_round_trips) {
  TempDir dir;
  DiskCache cache(dir.path);
  std::vector<char> payload = pattern_payload(100000, 3);
  cache.store(kKey, "o", payload);
  auto loaded = cache.load(kKey, "o");
  BOOST_REQUIRE(loaded.has_value());
  BOOST_TEST(*loaded == payload);
  // Kinds are separate entries; an empty payload is a valid entry.
  cache.store(kKey, "cubin", {});
  auto empty = cache.load(kKey, "cubin");
  BOOST_REQUIRE(empty.has_value());
  BOOST_TEST(empty->empty());
  BOOST_TEST(*cache.load(kKey, "o") == payload);
  // A later store replaces the entry.
  cache.store(kKey, "o", bytes_of("second"));
  BOOST_TEST(*cache.load(kKey, "o") == bytes_of("second"));
  BOOST_TEST(count_temp_files(dir.path) == 0u);
}

BOOST_AUTO_TEST_CASE(missing_entry_is_a_miss) {
  TempDir dir;
  DiskCache cache(dir.path / "not-created-yet");
  BOOST_TEST(!cache.load(kKey, "o").has_value());
  cache.store(kOtherKey, "o", bytes_of("x"));
  BOOST_TEST(!cache.load(kKey, "o").has_value());
  BOOST_TEST(!cache.load(kOtherKey, "cubin").has_value());
}

BOOST_AUTO_TEST_CASE(entries_are_sharded_by_the_first_two_hex_chars) {
  TempDir dir;
  DiskCache cache(dir.path);
  std::string hex = kKey.hex();
  BOOST_TEST(cache.path_for(kKey, "o") == dir.path / hex.substr(0, 2) / (hex + ".o"));
  cache.store(kKey, "o", bytes_of("abc"));
  BOOST_TEST(fs::is_regular_file(cache.path_for(kKey, "o")));
  auto bytes = read_file(cache.path_for(kKey, "o"));
  BOOST_REQUIRE(bytes.size() == tritium::jit::kDiskCacheHeaderSize + 3);
  BOOST_TEST(std::string(bytes.data(), 8) == "TRTMCACH");
  BOOST_CHECK_THROW(cache.path_for(kKey, "../evil"), tritium::Error);
  BOOST_CHECK_THROW(cache.path_for(kKey, ""), tritium::Error);
}

BOOST_AUTO_TEST_CASE(truncated_entry_is_a_miss) {
  TempDir dir;
  DiskCache cache(dir.path);
  std::vector<char> payload = pattern_payload(1000, 1);
  fs::path path = cache.path_for(kKey, "o");
  const size_t header = tritium::jit::kDiskCacheHeaderSize;
  for (size_t size : {size_t{0}, size_t{7}, header - 1, header, header + 999}) {
    cache.store(kKey, "o", payload);
    fs::resize_file(path, size);
    BOOST_TEST(!cache.load(kKey, "o").has_value(), "truncated to " << size);
    BOOST_TEST(!fs::exists(path), "a bad entry is removed");
  }
  // Trailing garbage is as bad as a missing tail.
  cache.store(kKey, "o", payload);
  auto bytes = read_file(path);
  bytes.push_back('!');
  write_file(path, bytes);
  BOOST_TEST(!cache.load(kKey, "o").has_value());
}

BOOST_AUTO_TEST_CASE(flipped_payload_byte_is_a_miss) {
  TempDir dir;
  DiskCache cache(dir.path);
  std::vector<char> payload = pattern_payload(4096, 2);
  fs::path path = cache.path_for(kKey, "o");
  for (size_t at : {size_t{0}, size_t{2048}, size_t{4095}}) {
    cache.store(kKey, "o", payload);
    auto bytes = read_file(path);
    bytes[tritium::jit::kDiskCacheHeaderSize + at] ^= 0x10;
    write_file(path, bytes);
    BOOST_TEST(!cache.load(kKey, "o").has_value(), "flipped payload byte " << at);
  }
  // Recompile-and-store heals the entry.
  cache.store(kKey, "o", payload);
  BOOST_TEST(*cache.load(kKey, "o") == payload);
}

BOOST_AUTO_TEST_CASE(bad_header_is_a_miss) {
  TempDir dir;
  DiskCache cache(dir.path);
  std::vector<char> payload = pattern_payload(64, 9);
  fs::path path = cache.path_for(kKey, "o");
  // magic, version, size, checksum and key-echo bytes each matter
  for (size_t at : {size_t{0}, size_t{8}, size_t{16}, size_t{24}, size_t{40}, size_t{55}}) {
    cache.store(kKey, "o", payload);
    auto bytes = read_file(path);
    bytes[at] ^= 0x01;
    write_file(path, bytes);
    BOOST_TEST(!cache.load(kKey, "o").has_value(), "flipped header byte " << at);
  }
}

BOOST_AUTO_TEST_CASE(wrong_version_is_a_miss) {
  TempDir dir;
  DiskCache cache(dir.path);
  fs::path path = cache.path_for(kKey, "o");
  cache.store(kKey, "o", bytes_of("payload"));
  auto bytes = read_file(path);
  uint32_t next_version = tritium::jit::kDiskCacheFormatVersion + 1;
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<char>((next_version >> (8 * i)) & 0xFF);
  write_file(path, bytes);
  BOOST_TEST(!cache.load(kKey, "o").has_value());
}

BOOST_AUTO_TEST_CASE(entry_under_the_wrong_key_is_a_miss) {
  TempDir dir;
  DiskCache cache(dir.path);
  cache.store(kKey, "o", bytes_of("payload of kKey"));
  fs::path foreign = cache.path_for(kOtherKey, "o");
  fs::create_directories(foreign.parent_path());
  fs::copy_file(cache.path_for(kKey, "o"), foreign);
  BOOST_TEST(!cache.load(kOtherKey, "o").has_value());
  BOOST_TEST(cache.load(kKey, "o").has_value());
}

BOOST_AUTO_TEST_CASE(unwritable_directory_is_not_fatal) {
  DiskCache cache("/dev/null/tritium-cache");  // a path below a file: creating it always fails
  BOOST_CHECK_NO_THROW(cache.store(kKey, "o", bytes_of("x")));
  BOOST_CHECK_NO_THROW(cache.store(kKey, "o", bytes_of("x")));  // warned once, then quiet
  BOOST_TEST(!cache.load(kKey, "o").has_value());
}

BOOST_AUTO_TEST_CASE(global_follows_the_environment) {
  TempDir dir;
  tt::ScopedEnv cache_dir("TRITIUM_CACHE_DIR", dir.path.c_str());
  {
    tt::ScopedEnv disabled("TRITIUM_CACHE", "0");
    BOOST_TEST(!tritium::env().cache_enabled);
    BOOST_TEST(DiskCache::global() == nullptr);
  }
  tt::ScopedEnv enabled("TRITIUM_CACHE", nullptr);
  BOOST_TEST(tritium::env().cache_enabled);
  DiskCache* cache = DiskCache::global();
  BOOST_REQUIRE(cache != nullptr);
  BOOST_TEST(cache->dir() == dir.path);
  BOOST_TEST(DiskCache::global() == cache);
  cache->store(kKey, "o", bytes_of("global"));
  BOOST_TEST(*DiskCache(dir.path).load(kKey, "o") == bytes_of("global"));
}

BOOST_AUTO_TEST_CASE(env_defaults_and_lists) {
  tt::ScopedEnv no_dir("TRITIUM_CACHE_DIR", nullptr);
  {
    tt::ScopedEnv home("HOME", "/home/someone");
    BOOST_TEST(tritium::env().cache_dir == "/home/someone/.cache/tritium");
  }
  {
    tt::ScopedEnv home("HOME", nullptr);
    BOOST_TEST(tritium::env().cache_dir == "/tmp/tritium-cache-" + std::to_string(::getuid()));
  }
  {
    tt::ScopedEnv log("TRITIUM_LOG", "passes, compile");
    BOOST_TEST(tritium::env().log_compile);
  }
  {
    tt::ScopedEnv log("TRITIUM_LOG", "compiler");
    BOOST_TEST(!tritium::env().log_compile);
  }
  {
    tt::ScopedEnv dump("TRITIUM_DUMP", "/tmp/dumps");
    BOOST_TEST(tritium::env().dump_dir == "/tmp/dumps");
  }
}

BOOST_AUTO_TEST_CASE(threads_storing_one_key_leave_one_valid_entry) {
  TempDir dir;
  DiskCache cache(dir.path);
  std::vector<char> payload = pattern_payload(1 << 20, 5);
  std::vector<std::thread> threads;
  std::atomic<int> bad_loads{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        cache.store(kKey, "o", payload);
        auto loaded = cache.load(kKey, "o");
        if (!loaded || *loaded != payload) ++bad_loads;
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(bad_loads.load() == 0);
  BOOST_TEST(*cache.load(kKey, "o") == payload);
  BOOST_TEST(count_temp_files(dir.path) == 0u);
}

BOOST_AUTO_TEST_CASE(processes_storing_one_key_leave_one_valid_entry) {
  TempDir dir;
  std::vector<char> payload = pattern_payload(4 << 20, 7);  // large, so the writes overlap
  int start[2];
  BOOST_REQUIRE(::pipe(start) == 0);
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: wait for the start signal (the pipe closing), then store and check repeatedly.
      // _exit, not exit: the child must not run the parent's atexit handlers or test runner.
      ::close(start[1]);
      char c0;
      while (::read(start[0], &c0, 1) > 0) {}
      DiskCache cache(dir.path);
      int status = 0;
      for (int i = 0; i < 20; ++i) {
        cache.store(kKey, "o", payload);
        auto loaded = cache.load(kKey, "o");
        if (!loaded || *loaded != payload) status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);  // both children start now
  for (pid_t pid : children) {
    int status = 0;
    BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
  }
  auto loaded = DiskCache(dir.path).load(kKey, "o");
  BOOST_REQUIRE(loaded.has_value());
  BOOST_TEST(*loaded == payload);
  BOOST_TEST(count_temp_files(dir.path) == 0u);
}

// Writers of different bytes under one key (two builds of a kernel racing, a record rewritten
// with other lines): every load returns one writer's whole payload, never a mix of two and never
// a miss once an entry exists; sizes differ too, so a torn read would also have the wrong length.
BOOST_AUTO_TEST_CASE(threads_storing_different_bytes_for_one_key) {
  TempDir dir;
  DiskCache cache(dir.path);
  constexpr int kThreads = 6;
  std::vector<std::vector<char>> payloads;
  for (int t = 0; t < kThreads; ++t) payloads.push_back(pattern_payload((1 << 19) + 4096 * t, 11 + t));
  std::vector<std::thread> threads;
  std::atomic<int> misses{0}, foreign{0};
  auto one_of_them = [&](const std::vector<char>& got) {
    for (const auto& p : payloads)
      if (got == p) return true;
    return false;
  };
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        cache.store(kKey, "o", payloads[t]);
        auto loaded = cache.load(kKey, "o");
        if (!loaded) ++misses;
        else if (!one_of_them(*loaded)) ++foreign;
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(misses.load() == 0);
  BOOST_TEST(foreign.load() == 0, foreign.load() << " loads returned bytes that no writer wrote whole");
  auto last = cache.load(kKey, "o");
  BOOST_TEST_REQUIRE(last.has_value());
  BOOST_TEST(one_of_them(*last));
  BOOST_TEST(count_temp_files(dir.path) == 0u);
}

BOOST_AUTO_TEST_CASE(processes_storing_different_bytes_for_one_key) {
  TempDir dir;
  const std::vector<char> a = pattern_payload(4 << 20, 21), b = pattern_payload((4 << 20) + 512, 22);
  int start[2];
  BOOST_REQUIRE(::pipe(start) == 0);
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {  // as processes_storing_one_key_leave_one_valid_entry, each child its own bytes
      ::close(start[1]);
      char c0;
      while (::read(start[0], &c0, 1) > 0) {}
      DiskCache cache(dir.path);
      int status = 0;
      for (int i = 0; i < 20; ++i) {
        cache.store(kKey, "o", c == 0 ? a : b);
        auto loaded = cache.load(kKey, "o");
        if (!loaded || (*loaded != a && *loaded != b)) status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (pid_t pid : children) {
    int status = 0;
    BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0, "a child loaded a miss or a mix of the two writers' bytes");
  }
  auto loaded = DiskCache(dir.path).load(kKey, "o");
  BOOST_REQUIRE(loaded.has_value());
  BOOST_TEST((*loaded == a || *loaded == b));
  BOOST_TEST(count_temp_files(dir.path) == 0u);
}

// What a torn write of two writers would leave: one entry's header with another's payload (same
// size, so only the checksum can tell). It must be a miss, and removed.
BOOST_AUTO_TEST_CASE(mixed_entry_of_two_writers_is_a_miss) {
  TempDir dir;
  DiskCache cache(dir.path);
  const std::vector<char> a = pattern_payload(10000, 31), b = pattern_payload(10000, 32);
  cache.store(kKey, "o", a);
  std::vector<char> entry_a = read_file(cache.path_for(kKey, "o"));
  cache.store(kKey, "o", b);
  std::vector<char> entry_b = read_file(cache.path_for(kKey, "o"));
  BOOST_TEST_REQUIRE(entry_a.size() == entry_b.size());
  for (size_t split : {size_t(tritium::jit::kDiskCacheHeaderSize), entry_a.size() / 2, entry_a.size() - 1}) {
    std::vector<char> mixed(entry_a.begin(), entry_a.begin() + static_cast<std::ptrdiff_t>(split));
    mixed.insert(mixed.end(), entry_b.begin() + static_cast<std::ptrdiff_t>(split), entry_b.end());
    write_file(cache.path_for(kKey, "o"), mixed);
    BOOST_TEST(!cache.load(kKey, "o").has_value(), "a mix split at byte " << split << " was accepted");
    BOOST_TEST(!fs::exists(cache.path_for(kKey, "o")));
  }
}

BOOST_AUTO_TEST_SUITE_END()
