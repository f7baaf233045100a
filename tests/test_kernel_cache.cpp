// The kernel caches: the in-memory specialisation map (no re-trace on a hit), the disk cache
// (miss, hit, corrupted and truncated entries recompiled), and two processes compiling the same
// kernel at once.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include "common/env.h"
#include "jit/compiled_kernel.h"
#include "jit/disk_cache.h"

namespace tl = tritium::tl;
namespace fs = std::filesystem;

namespace {

// The number of times the kernel body has been traced.
std::atomic<int> g_traces{0};

tritium::Kernel make_saxpy(float salt) {
  return tritium::kernel("saxpy_cache_test", [salt](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n,
                                                    tl::i32 stride, int BLOCK) {
    ++g_traces;
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto v = tl::load(x + offs * stride, mask) * salt + tl::load(y + offs, mask);
    tl::store(out + offs, v, mask);
  });
}

// Runs the kernel on fresh random data and checks every element against a float64 reference.
void run_and_check(tritium::Kernel& k, float salt, int n = 1000, int stride = 1, int block = 256) {
  std::mt19937 rng(n + stride);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(n * stride + 1), y(n), out(n, NAN);
  for (auto& v : x) v = u(rng);
  for (auto& v : y) v = u(rng);
  k[{tritium::cdiv(n, block)}](x.data(), y.data(), out.data(), n, stride, block);
  for (int i = 0; i < n; ++i) {
    double ref = double(x[i * stride]) * salt + double(y[i]);
    BOOST_REQUIRE_MESSAGE(std::abs(out[i] - ref) <= 1e-6 * (1 + std::abs(ref)), "element " << i << ": " << out[i] << " vs " << ref);
  }
}

// Points the process at an empty cache directory for the duration of a test.
struct FreshCache {
  fs::path dir;
  FreshCache() {
    dir = fs::temp_directory_path() / ("tritium-cache-test-" + std::to_string(getpid()) + "-" + std::to_string(counter()++));
    fs::remove_all(dir);
    setenv("TRITIUM_CACHE_DIR", dir.c_str(), 1);
    setenv("TRITIUM_CACHE", "1", 1);
    tritium::reload_env_for_tests();
  }
  ~FreshCache() { fs::remove_all(dir); }
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    if (!fs::exists(dir)) return out;
    for (auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".o") out.push_back(e.path());
    return out;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_kernel_cache)

BOOST_AUTO_TEST_CASE(cached_launch_does_not_retrace) {
  FreshCache cache;
  auto k = make_saxpy(2.0f);
  int before = g_traces;
  run_and_check(k, 2.0f);
  BOOST_TEST(g_traces - before == 1);
  run_and_check(k, 2.0f);
  run_and_check(k, 2.0f, 777);  // n = 777 is, like 1000, neither divisible by 16 nor 1: same specialisation
  BOOST_TEST(g_traces - before == 1);
  run_and_check(k, 2.0f, 1024);  // divisible by 16: a new specialisation
  BOOST_TEST(g_traces - before == 2);
  run_and_check(k, 2.0f, 4096);
  BOOST_TEST(g_traces - before == 2);
  BOOST_TEST(k.num_specializations() == 2u);
}

BOOST_AUTO_TEST_CASE(specialisation_key) {
  FreshCache cache;
  auto k = make_saxpy(3.0f);
  int t0 = g_traces;
  run_and_check(k, 3.0f, 1024, 1, 256);  // stride == 1: specialised to the constant 1
  run_and_check(k, 3.0f, 1024, 3, 256);  // stride 3: another specialisation
  run_and_check(k, 3.0f, 1024, 32, 256); // stride divisible by 16: another one
  run_and_check(k, 3.0f, 1024, 3, 128);  // another meta-parameter value
  BOOST_TEST(g_traces - t0 == 4);
  BOOST_TEST(k.num_specializations() == 4u);
  // The stride-1 specialisation really folded the stride away.
  std::vector<float> x(4), y(4), out(4);
  std::string ir = k.optimized_ir(x.data(), y.data(), out.data(), 4, 1, 256);
  // Parameters print as %0..%4; stride (%4) appears in the signature only: its uses became 1.
  std::regex stride_use("%4\\b");
  auto uses = std::distance(std::sregex_iterator(ir.begin(), ir.end(), stride_use), std::sregex_iterator());
  BOOST_TEST(uses == 1, ir);
}

BOOST_AUTO_TEST_CASE(disk_miss_then_hit) {
  FreshCache cache;
  auto s0 = tritium::jit::compile_stats();
  {
    auto k = make_saxpy(5.0f);
    run_and_check(k, 5.0f);
  }
  auto s1 = tritium::jit::compile_stats();
  BOOST_TEST(s1.compiled - s0.compiled == 1u);
  BOOST_TEST(cache.entries().size() == 1u);
  {
    auto k = make_saxpy(5.0f);  // a new kernel object: traces again, loads the binary from disk
    run_and_check(k, 5.0f);
  }
  auto s2 = tritium::jit::compile_stats();
  BOOST_TEST(s2.compiled == s1.compiled);
  BOOST_TEST(s2.disk_hits - s1.disk_hits == 1u);
}

BOOST_AUTO_TEST_CASE(cache_disabled) {
  FreshCache cache;
  setenv("TRITIUM_CACHE", "0", 1);
  tritium::reload_env_for_tests();
  {
    auto k = make_saxpy(6.0f);
    run_and_check(k, 6.0f);
  }
  BOOST_TEST(cache.entries().empty());
  setenv("TRITIUM_CACHE", "1", 1);
  tritium::reload_env_for_tests();
}

// Damages the one entry of the cache with `damage`, then checks the kernel is recompiled.
void check_recompiled_after(void (*damage)(const fs::path&), float salt) {
  FreshCache cache;
  {
    auto k = make_saxpy(salt);
    run_and_check(k, salt);
  }
  auto entries = cache.entries();
  BOOST_REQUIRE(entries.size() == 1u);
  damage(entries[0]);
  auto s0 = tritium::jit::compile_stats();
  {
    auto k = make_saxpy(salt);
    run_and_check(k, salt);
  }
  auto s1 = tritium::jit::compile_stats();
  BOOST_TEST(s1.compiled - s0.compiled == 1u);  // recompiled, never executed the damaged entry
  BOOST_TEST(s1.disk_hits == s0.disk_hits);
  {
    auto k = make_saxpy(salt);  // and the rewritten entry is good again
    run_and_check(k, salt);
  }
  BOOST_TEST(tritium::jit::compile_stats().disk_hits - s1.disk_hits == 1u);
}

BOOST_AUTO_TEST_CASE(corrupted_entry_is_recompiled) {
  check_recompiled_after([](const fs::path& p) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-100, std::ios::end);
    char c;
    f.read(&c, 1);
    f.seekp(-100, std::ios::end);
    c ^= 0x5a;
    f.write(&c, 1);
  }, 7.0f);
}

BOOST_AUTO_TEST_CASE(truncated_entry_is_recompiled) {
  check_recompiled_after([](const fs::path& p) { fs::resize_file(p, fs::file_size(p) / 2); }, 8.0f);
}

BOOST_AUTO_TEST_CASE(garbage_entry_is_recompiled) {
  check_recompiled_after([](const fs::path& p) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << "not an object file";
  }, 9.0f);
}

// Captures what the process writes to file descriptor `fd` while f runs.
template <class F> std::string capture_fd(int fd, F&& f) {
  fflush(nullptr);
  char path[] = "/tmp/tritium-capture-XXXXXX";
  int tmp = mkstemp(path);
  int saved = dup(fd);
  dup2(tmp, fd);
  try {
    f();
  } catch (...) {
    dup2(saved, fd);
    throw;
  }
  fflush(nullptr);
  dup2(saved, fd);
  close(saved);
  close(tmp);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(path);
  return text;
}

BOOST_AUTO_TEST_CASE(log_compile_lines) {
  FreshCache cache;
  setenv("TRITIUM_LOG", "compile", 1);
  tritium::reload_env_for_tests();
  std::string miss = capture_fd(2, [] {
    auto k = make_saxpy(12.0f);
    run_and_check(k, 12.0f);
  });
  std::string hit = capture_fd(2, [] {
    auto k = make_saxpy(12.0f);
    run_and_check(k, 12.0f);
  });
  unsetenv("TRITIUM_LOG");
  tritium::reload_env_for_tests();
  std::regex miss_line(
      "\\[tritium\\] compile saxpy_cache_test cpu miss [0-9.]+ ms "
      "\\(passes [0-9.]+, generate [0-9.]+, load [0-9.]+ ms\\)\n");
  std::regex hit_line("\\[tritium\\] compile saxpy_cache_test cpu hit [0-9.]+ ms\n");
  BOOST_TEST(std::regex_search(miss, miss_line), miss);
  BOOST_TEST(std::regex_search(hit, hit_line), hit);
}

BOOST_AUTO_TEST_CASE(dump_writes_ir_and_llvm) {
  FreshCache cache;
  fs::path dir = cache.dir / "dump";
  setenv("TRITIUM_DUMP", dir.c_str(), 1);
  tritium::reload_env_for_tests();
  auto k = make_saxpy(13.0f);
  run_and_check(k, 13.0f);
  unsetenv("TRITIUM_DUMP");
  tritium::reload_env_for_tests();
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  auto has = [&](const std::string& suffix) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return n.rfind("saxpy_cache_test", 0) == 0 && n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
  };
  BOOST_TEST(has("00-input.ir"));  // the traced IR, then one file per pass that changed it
  BOOST_TEST(has(".ll"));          // LLVM IR as generated
  BOOST_TEST(has(".opt.ll"));      // after O3
  std::ifstream in(dir / "saxpy_cache_test.00-input.ir");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(text.find("func @saxpy_cache_test") != std::string::npos, text);
}

// Run only when named explicitly: the child side of two_processes_compile_at_once.
BOOST_AUTO_TEST_CASE(child_compile, *boost::unit_test::disabled()) {
  auto k = make_saxpy(11.0f);
  run_and_check(k, 11.0f);
}

BOOST_AUTO_TEST_CASE(two_processes_compile_at_once) {
  FreshCache cache;
  std::string self = fs::read_symlink("/proc/self/exe");
  pid_t children[2];
  for (pid_t& c : children) {
    c = fork();
    BOOST_REQUIRE(c >= 0);
    if (c == 0) {
      execl(self.c_str(), self.c_str(), "--run_test=test_kernel_cache/child_compile", "--log_level=nothing",
            "--report_level=no", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  for (pid_t c : children) {
    int status = 0;
    BOOST_REQUIRE(waitpid(c, &status, 0) == c);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "child exit status " << status);
  }
  BOOST_TEST(cache.entries().size() == 1u);  // one entry, no temporary files left behind
  size_t files = 0;
  for (auto& e : fs::recursive_directory_iterator(cache.dir)) files += e.is_regular_file();
  BOOST_TEST(files == 1u);
  auto s0 = tritium::jit::compile_stats();
  auto k = make_saxpy(11.0f);
  run_and_check(k, 11.0f);
  BOOST_TEST(tritium::jit::compile_stats().disk_hits - s0.disk_hits == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
