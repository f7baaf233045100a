// The kernel caches, on every backend: the in-memory specialisation map (no re-trace on a hit),
// the disk cache (miss, hit, corrupted, truncated, garbage and unloadable entries recompiled;
// the CPU stores object files, CUDA a small header and the cubin), TRITIUM_LOG and TRITIUM_DUMP,
// and two processes compiling the same kernel at once.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>

#include <fmt/format.h>

#include "test_support.h"

#include "common/env.h"
#include "ir/printer.h"
#include "jit/compile_observer.h"
#include "jit/compiled_kernel.h"
#include "jit/disk_cache.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
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

// Runs the kernel on the backend on fresh random data (output poisoned) and checks every element
// against a float64 reference.
void run_and_check(const tt::Backend& be, tritium::Kernel& k, float salt, int n = 1000, int stride = 1,
                   int block = 256) {
  std::mt19937 rng(n + stride);
  std::uniform_real_distribution<float> u(-1, 1);
  tt::host_vector<float> x(size_t(n) * stride + 1), y(n);
  for (auto& v : x) v = u(rng);
  for (auto& v : y) v = u(rng);
  auto dx = be.upload<float>(x);
  auto dy = be.upload<float>(y);
  auto dout = be.alloc_poisoned<float>(n);
  k[{tritium::cdiv(n, block)}](dx.ptr(), dy.ptr(), dout.ptr(), n, stride, block, be.options());
  auto out = dout.download();
  for (int i = 0; i < n; ++i) {
    double ref = double(x[size_t(i) * stride]) * salt + double(y[i]);
    BOOST_REQUIRE_MESSAGE(std::abs(out[i] - ref) <= 1e-6 * (1 + std::abs(ref)),
                          be.name << ": element " << i << ": " << out[i] << " vs " << ref);
  }
}

// The extension of the backend's disk cache entries: object files on the CPU, cubins (a small
// header, then the cubin) on CUDA.
std::string entry_extension(const tt::Backend& be) { return be.device.is_cuda() ? ".cubin" : ".o"; }

// Points the process at an empty, enabled cache directory for one backend's part of a test
// (restoring the previous settings afterwards, even when a check throws).
struct FreshCache : tt::FreshCacheDir {
  std::string extension;  // of this backend's entries
  explicit FreshCache(const tt::Backend& be) : tt::FreshCacheDir("cache-test-" + be.name), extension(entry_extension(be)) {}
  // The backend's entries.
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    if (!fs::exists(dir)) return out;
    for (auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == extension) out.push_back(e.path());
    return out;
  }
  // Every regular file (entries of any kind, temporaries, dumps).
  size_t files() const {
    size_t n = 0;
    if (!fs::exists(dir)) return n;
    for (auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
    return n;
  }
};

std::vector<char> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_kernel_cache)

BOOST_AUTO_TEST_CASE(cached_launch_does_not_retrace) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    auto k = make_saxpy(2.0f);
    int before = g_traces;
    run_and_check(be, k, 2.0f);
    BOOST_TEST(g_traces - before == 1);
    run_and_check(be, k, 2.0f);
    run_and_check(be, k, 2.0f, 777);  // n = 777 is, like 1000, neither divisible by 16 nor 1: same specialisation
    BOOST_TEST(g_traces - before == 1);
    run_and_check(be, k, 2.0f, 1024);  // divisible by 16: a new specialisation
    BOOST_TEST(g_traces - before == 2);
    run_and_check(be, k, 2.0f, 4096);
    BOOST_TEST(g_traces - before == 2);
    BOOST_TEST(k.num_specializations() == 2u);
  });
}

BOOST_AUTO_TEST_CASE(specialisation_key) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    auto k = make_saxpy(3.0f);
    int t0 = g_traces;
    run_and_check(be, k, 3.0f, 1024, 1, 256);   // stride == 1: specialised to the constant 1
    run_and_check(be, k, 3.0f, 1024, 3, 256);   // stride 3: another specialisation
    run_and_check(be, k, 3.0f, 1024, 32, 256);  // stride divisible by 16: another one
    run_and_check(be, k, 3.0f, 1024, 3, 128);   // another meta-parameter value
    BOOST_TEST(g_traces - t0 == 4);
    BOOST_TEST(k.num_specializations() == 4u);
    // The stride-1 specialisation really folded the stride away.
    auto x = be.alloc_poisoned<float>(4), y = be.alloc_poisoned<float>(4), out = be.alloc_poisoned<float>(4);
    std::string ir = k.optimized_ir(x.ptr(), y.ptr(), out.ptr(), 4, 1, 256, be.options());
    // Parameters print as %0..%4; stride (%4) appears in the signature only: its uses became 1.
    std::regex stride_use("%4\\b");
    auto uses = std::distance(std::sregex_iterator(ir.begin(), ir.end(), stride_use), std::sregex_iterator());
    BOOST_TEST(uses == 1, ir);
  });
}

// The compile observer (tools/first_run_census.cpp's hook) sees every function compile is given,
// optimised (what the backend compiles), with its options - disk hits included - and nothing once
// it is removed.
BOOST_AUTO_TEST_CASE(compile_observer_sees_every_compile) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    std::vector<std::string> seen;
    tritium::jit::set_compile_observer([&](tritium::ir::Function& f, const tritium::Device& d,
                                           const tritium::jit::CompileOptions& o) {
      seen.push_back(fmt::format("{} {} w{}", f.name, d.str(), o.num_warps));
      seen.push_back(tritium::ir::print(f));
    });
    struct Reset {
      ~Reset() { tritium::jit::set_compile_observer({}); }
    } reset;
    auto k = make_saxpy(6.0f);
    run_and_check(be, k, 6.0f, 1000, 1, 256);
    BOOST_TEST_REQUIRE(seen.size() == 2u);
    BOOST_TEST(seen[0] == fmt::format("saxpy_cache_test {} w{}", be.device.str(), be.options().num_warps));
    auto x = be.alloc_poisoned<float>(4), y = be.alloc_poisoned<float>(4), out = be.alloc_poisoned<float>(4);
    BOOST_TEST(seen[1] == k.optimized_ir(x.ptr(), y.ptr(), out.ptr(), 1000, 1, 256, be.options()));
    run_and_check(be, k, 6.0f, 1000, 1, 256);  // the specialisation map: no compile
    BOOST_TEST(seen.size() == 2u);
    auto again = make_saxpy(6.0f);  // a disk hit still goes through compile
    run_and_check(be, again, 6.0f, 1000, 1, 256);
    BOOST_TEST(seen.size() == 4u);
    tritium::jit::set_compile_observer({});
    run_and_check(be, k, 6.0f, 1024, 1, 256);  // a new specialisation, no observer
    BOOST_TEST(seen.size() == 4u);
  });
}

BOOST_AUTO_TEST_CASE(disk_miss_then_hit) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    auto s0 = tritium::jit::compile_stats();
    {
      auto k = make_saxpy(5.0f);
      run_and_check(be, k, 5.0f);
    }
    auto s1 = tritium::jit::compile_stats();
    BOOST_TEST(s1.compiled - s0.compiled == 1u);
    BOOST_TEST(cache.entries().size() == 1u);  // one entry of this backend's kind
    BOOST_TEST(cache.files() == 1u);           // and nothing else
    {
      auto k = make_saxpy(5.0f);  // a new kernel object: traces again, loads the binary from disk
      run_and_check(be, k, 5.0f);
    }
    auto s2 = tritium::jit::compile_stats();
    BOOST_TEST(s2.compiled == s1.compiled);
    BOOST_TEST(s2.disk_hits - s1.disk_hits == 1u);
  });
}

BOOST_AUTO_TEST_CASE(cache_disabled) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    tt::ScopedEnv disabled("TRITIUM_CACHE", "0");
    auto s0 = tritium::jit::compile_stats();
    {
      auto k = make_saxpy(6.0f);
      run_and_check(be, k, 6.0f);
    }
    {
      auto k = make_saxpy(6.0f);  // nothing on disk to load: compiled again
      run_and_check(be, k, 6.0f);
    }
    auto s1 = tritium::jit::compile_stats();
    BOOST_TEST(s1.compiled - s0.compiled == 2u);
    BOOST_TEST(s1.disk_hits == s0.disk_hits);
    BOOST_TEST(cache.files() == 0u);
  });
}

// Damages the one entry of the backend's cache with `damage`, then checks the kernel is
// recompiled (never loaded from the damaged entry, never a crash) and the entry rewritten.
void check_recompiled_after(void (*damage)(const fs::path&), float salt) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    {
      auto k = make_saxpy(salt);
      run_and_check(be, k, salt);
    }
    auto entries = cache.entries();
    BOOST_REQUIRE(entries.size() == 1u);
    damage(entries[0]);
    auto s0 = tritium::jit::compile_stats();
    {
      auto k = make_saxpy(salt);
      run_and_check(be, k, salt);
    }
    auto s1 = tritium::jit::compile_stats();
    BOOST_TEST(s1.compiled - s0.compiled == 1u);  // recompiled, never executed the damaged entry
    BOOST_TEST(s1.disk_hits == s0.disk_hits);
    BOOST_TEST(cache.entries().size() == 1u);
    {
      auto k = make_saxpy(salt);  // and the rewritten entry is good again
      run_and_check(be, k, salt);
    }
    auto s2 = tritium::jit::compile_stats();
    BOOST_TEST(s2.disk_hits - s1.disk_hits == 1u);
    BOOST_TEST(s2.compiled == s1.compiled);
  });
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

// An entry that passes the disk cache's checks (header, size, checksum, key) but whose payload
// the backend cannot load: the backend's error is caught and the kernel recompiled.
BOOST_AUTO_TEST_CASE(unloadable_entry_with_valid_checksum_is_recompiled) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const std::string kind = entry_extension(be).substr(1);
    // The payload's own header is kept and the rest replaced: the CPU's ELF header (64 bytes),
    // or CUDA's binary header (48 bytes: magic, launch sizes, the entry name's length at offset
    // 32, the tensor maps' at 40), the entry name and the maps, then text that is neither a cubin
    // nor valid PTX (NUL-terminated, as the driver reads a non-ELF image as a PTX string). Then
    // the whole payload is garbage.
    auto keep_header = [&](const std::vector<char>& payload) {
      size_t keep = 64;
      if (be.device.is_cuda()) {
        BOOST_REQUIRE(payload.size() >= 48u);
        BOOST_REQUIRE(std::memcmp(payload.data(), "TRTCUDA2", 8) == 0);
        int32_t entry_length, maps_length;
        std::memcpy(&entry_length, payload.data() + 32, 4);
        std::memcpy(&maps_length, payload.data() + 40, 4);
        BOOST_REQUIRE(entry_length >= 0);
        BOOST_REQUIRE(maps_length >= 0);
        keep = 48 + static_cast<size_t>(entry_length) + static_cast<size_t>(maps_length);
      } else {
        BOOST_REQUIRE(payload.size() >= 64u);
        BOOST_REQUIRE(std::memcmp(payload.data(), "\x7f" "ELF", 4) == 0);
      }
      BOOST_REQUIRE(keep < payload.size());
      std::vector<char> out(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(keep));
      const char text[] = "this is not machine code";
      out.insert(out.end(), text, text + sizeof text);  // with the NUL
      return out;
    };
    auto whole_garbage = [](const std::vector<char>&) {
      const std::string text = "not an object file, not a cubin";
      return std::vector<char>(text.begin(), text.end());
    };
    using MakePayload = std::function<std::vector<char>(const std::vector<char>&)>;
    const std::vector<std::pair<const char*, MakePayload>> variants = {{"backend header kept", keep_header},
                                                                       {"whole payload garbage", whole_garbage}};
    for (size_t v = 0; v < variants.size(); ++v) {
      BOOST_TEST_CONTEXT(variants[v].first) {
        const float salt = 14.0f + static_cast<float>(v);
        FreshCache cache(be);
        {
          auto k = make_saxpy(salt);
          run_and_check(be, k, salt);
        }
        auto entries = cache.entries();
        BOOST_REQUIRE(entries.size() == 1u);
        auto bytes = read_bytes(entries[0]);
        BOOST_REQUIRE(bytes.size() > tritium::jit::kDiskCacheHeaderSize);
        tritium::Hash128 key{get_u64(bytes.data() + 40), get_u64(bytes.data() + 48)};
        std::vector<char> payload(bytes.begin() + tritium::jit::kDiskCacheHeaderSize, bytes.end());
        tritium::jit::DiskCache disk(cache.dir);
        BOOST_REQUIRE(disk.path_for(key, kind) == entries[0]);
        disk.store(key, kind, variants[v].second(payload));
        BOOST_REQUIRE(disk.load(key, kind).has_value());  // the disk cache accepts it
        auto s0 = tritium::jit::compile_stats();
        {
          auto k = make_saxpy(salt);
          run_and_check(be, k, salt);
        }
        auto s1 = tritium::jit::compile_stats();
        BOOST_TEST(s1.compiled - s0.compiled == 1u);
        BOOST_TEST(s1.disk_hits == s0.disk_hits);
        {
          auto k = make_saxpy(salt);  // the rewritten entry loads
          run_and_check(be, k, salt);
        }
        BOOST_TEST(tritium::jit::compile_stats().disk_hits - s1.disk_hits == 1u);
      }
    }
  });
}

// Captures what the process writes to file descriptor `fd` while f runs.

BOOST_AUTO_TEST_CASE(log_compile_lines) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    std::string miss, hit;
    {
      tt::ScopedEnv log("TRITIUM_LOG", "compile");
      miss = tt::capture_fd(2, [&] {
        auto k = make_saxpy(12.0f);
        run_and_check(be, k, 12.0f);
      });
      hit = tt::capture_fd(2, [&] {
        auto k = make_saxpy(12.0f);
        run_and_check(be, k, 12.0f);
      });
    }
    std::regex miss_line("\\[tritium\\] compile saxpy_cache_test " + be.name +
                         " miss [0-9.]+ ms "
                         "\\(passes [0-9.]+, generate [0-9.]+, load [0-9.]+ ms\\)\n");
    std::regex hit_line("\\[tritium\\] compile saxpy_cache_test " + be.name + " hit [0-9.]+ ms\n");
    BOOST_TEST(std::regex_search(miss, miss_line), miss);
    BOOST_TEST(std::regex_search(hit, hit_line), hit);
    BOOST_TEST(!std::regex_search(miss, hit_line), miss);
    BOOST_TEST(!std::regex_search(hit, miss_line), hit);
  });
}

// TRITIUM_DUMP: the IR after every pass on every backend, then what the backend generates: the
// LLVM IR as generated and after O3 on the CPU, the PTX or the CUDA C++ source on CUDA.
BOOST_AUTO_TEST_CASE(dump_writes_ir_and_backend_code) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    fs::path dir = cache.dir / "dump";
    {
      tt::ScopedEnv dump("TRITIUM_DUMP", dir.c_str());
      auto k = make_saxpy(13.0f);
      run_and_check(be, k, 13.0f);
      if (be.device.is_cuda()) {  // saxpy is straight-line code: PTX; the CUDA C++ generator when asked
        tt::ScopedEnv cxx("TRITIUM_FAST_COMPILE", "0");
        auto k2 = make_saxpy(14.0f);
        run_and_check(be, k2, 14.0f);
      }
    }
    std::vector<std::string> names;
    for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
    auto has = [&](const std::string& suffix) {
      return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
        return n.rfind("saxpy_cache_test", 0) == 0 && n.size() >= suffix.size() &&
               n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
      });
    };
    auto read_text = [&](const std::string& name) {
      std::ifstream in(dir / name);
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    std::string listing;
    for (auto& n : names) listing += n + " ";
    BOOST_TEST(has("00-input.ir"), listing);  // the traced IR, then one file per pass that changed it
    std::string ir = read_text("saxpy_cache_test.00-input.ir");
    BOOST_TEST(ir.find("func @saxpy_cache_test") != std::string::npos, ir);
    if (be.device.is_cuda()) {
      BOOST_TEST(has(".ptx"), listing);  // the generated PTX (jit/cuda/ptx_codegen.h)
      std::string ptx = read_text("saxpy_cache_test.ptx");
      BOOST_TEST(ptx.find(".entry saxpy_cache_test(") != std::string::npos, ptx);
      BOOST_TEST(has(".cu"), listing);  // the generated CUDA C++
      std::string source = read_text("saxpy_cache_test.cu");
      BOOST_TEST(source.find("__global__") != std::string::npos, source);
      BOOST_TEST(source.find("saxpy_cache_test(") != std::string::npos, source);
    } else {
      BOOST_TEST(has(".ll"), listing);      // LLVM IR as generated
      BOOST_TEST(has(".opt.ll"), listing);  // after O3
      std::string ll = read_text("saxpy_cache_test.ll");
      BOOST_TEST(ll.find("define ") != std::string::npos, ll);
    }
  });
}

// The child side of two_processes_compile_at_once, which names it and passes the backend in
// TRITIUM_TEST_CHILD_BACKEND (an environment variable: Boost versions differ in what they leave of
// the command line after "--"). Disabled, but newer Boost runs disabled cases of a suite named
// with --run_test: without the variable it does nothing.
BOOST_AUTO_TEST_CASE(child_compile, *boost::unit_test::disabled()) {
  const char* env_name = std::getenv("TRITIUM_TEST_CHILD_BACKEND");
  if (!env_name || !*env_name) {
    BOOST_TEST_MESSAGE("child_compile: not a child of two_processes_compile_at_once, nothing to do");
    return;
  }
  std::string name = env_name;
  const auto& all = tt::all_backends();
  auto it = std::find_if(all.begin(), all.end(), [&](const tt::Backend& b) { return b.name == name; });
  BOOST_REQUIRE_MESSAGE(it != all.end(), "unknown backend " << name);
  tritium::DefaultDeviceGuard on_backend(it->device);
  auto k = make_saxpy(11.0f);
  run_and_check(*it, k, 11.0f);
}

BOOST_AUTO_TEST_CASE(two_processes_compile_at_once) {
  tt::for_each_backend([&](const tt::Backend& be) {
    FreshCache cache(be);
    std::string self = fs::read_symlink("/proc/self/exe");

    pid_t children[2];
    for (pid_t& c : children) {
      c = fork();
      BOOST_REQUIRE(c >= 0);
      if (c == 0) {
        ::setenv("TRITIUM_TEST_CHILD_BACKEND", be.name.c_str(), 1);
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
    BOOST_TEST(cache.entries().size() == 1u);  // one entry of this backend's kind,
    BOOST_TEST(cache.files() == 1u);           // no temporary files left behind
    auto s0 = tritium::jit::compile_stats();
    auto k = make_saxpy(11.0f);
    run_and_check(be, k, 11.0f);
    auto s1 = tritium::jit::compile_stats();
    BOOST_TEST(s1.disk_hits - s0.disk_hits == 1u);
    BOOST_TEST(s1.compiled == s0.compiled);
  });
}

// TRITIUM_PERF_MAP=1: each kernel the CPU backend loads gets a line "START SIZE tritium:NAME"
// (hex) in /tmp/perf-<pid>.map, so perf names the JIT code; the kernel still runs right.
BOOST_AUTO_TEST_CASE(perf_map_names_cpu_kernels, *tt::needs_cpu_backend()) {
  static tritium::Kernel k = tritium::kernel("perf_map_probe", [](tl::ptr<float> x, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(x + i, tl::load(x + i, i < n, 0) * 2 + 1, i < n);
  });
  tt::FreshCacheDir cache("perfmap");
  tt::ScopedEnv on("TRITIUM_PERF_MAP", "1");
  const std::string map = fmt::format("/tmp/perf-{}.map", ::getpid());
  tt::host_vector<float> x(37, 3.0f);
  k[{1}](x.data(), 37, 64, tritium::Options{.device = tritium::Device::cpu()});
  for (float v : x) BOOST_TEST(v == 7.0f);
  std::ifstream in(map);
  BOOST_TEST_REQUIRE(in.good(), "no " << map);
  std::string line, found;
  while (std::getline(in, line))
    if (line.size() > 23 && line.substr(line.size() - 23) == " tritium:perf_map_probe") found = line;
  BOOST_TEST_REQUIRE(!found.empty(), "no line for the kernel in " << map);
  std::smatch m;
  BOOST_TEST_REQUIRE(std::regex_match(found, m, std::regex("([0-9a-f]+) ([0-9a-f]+) tritium:perf_map_probe")), found);
  BOOST_TEST(std::stoull(m[1].str(), nullptr, 16) != 0u);
  BOOST_TEST(std::stoull(m[2].str(), nullptr, 16) > 0u);
}

BOOST_AUTO_TEST_SUITE_END()
