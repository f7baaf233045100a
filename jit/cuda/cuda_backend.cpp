// The CUDA backend: IR -> CUDA C++ (codegen.cpp) -> cubin (NVRTC) -> cuModuleLoadData, launched
// on the launching thread's current stream of the device (runtime/streams.h; the default stream
// unless set). Short straight-line kernels go IR -> PTX (ptx_codegen.cpp) -> cubin (nvJitLink)
// instead, skipping NVRTC's C++ front end and NVVM. libcuda, libnvrtc and libnvJitLink are all
// opened at run time, so this file builds everywhere.
//
// The binary the disk cache stores is a small header (what the launch needs besides the cubin:
// block size, dynamic shared memory, scratch bytes per program, number of device_assert sites,
// the entry name) followed by the cubin.
#include <array>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "common/env.h"
#include "common/log.h"
#include "jit/backend.h"
#include "jit/check_failure.h"
#include "profiler/hooks.h"
#include "jit/passes/debug_checks.h"
#include "jit/cuda/codegen.h"
#include "jit/cuda/nvjitlink.h"
#include "jit/cuda/nvrtc.h"
#include "jit/cuda/ptx_codegen.h"
#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"
#include "runtime/cuda_driver.h"

namespace tritium::jit {
namespace {

namespace cu = runtime::cuda;

constexpr int32_t kHasPrint = 1;
constexpr int32_t kPersistent = 2;  // KernelSource::persistent
constexpr size_t kFlagBytes = 48;  // the assertion flag and what a failure records
constexpr char kMagic[8] = {'T', 'R', 'T', 'C', 'U', 'D', 'A', '2'};

struct BinaryHeader {
  char magic[8];
  int32_t num_threads;
  int32_t num_asserts;
  int64_t smem_bytes;
  int64_t scratch_bytes;
  int32_t entry_length;
  int32_t flags;  // kHasPrint, kPersistent
  int32_t maps_length;  // the tensor maps' recipes (KernelSource::tma_maps, one a line), after the entry
  int32_t reserved;
};
static_assert(sizeof(BinaryHeader) == 48, "the disk cache's CUDA entries (and test_kernel_cache) read this layout");

std::vector<char> pack(const cuda::KernelSource& ks, const std::vector<char>& cubin) {
  BinaryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.num_threads = ks.num_threads;
  h.num_asserts = ks.num_asserts;
  h.smem_bytes = ks.smem_bytes;
  h.scratch_bytes = ks.scratch_bytes;
  h.entry_length = static_cast<int32_t>(ks.entry.size());
  h.flags = (ks.has_print ? kHasPrint : 0) | (ks.persistent ? kPersistent : 0);
  std::string maps;
  for (const std::string& m : ks.tma_maps) maps += m + "\n";
  h.maps_length = static_cast<int32_t>(maps.size());
  std::vector<char> out(sizeof h + ks.entry.size() + maps.size() + cubin.size());
  char* at = out.data();
  std::memcpy(at, &h, sizeof h);
  std::memcpy(at += sizeof h, ks.entry.data(), ks.entry.size());
  std::memcpy(at += ks.entry.size(), maps.data(), maps.size());
  std::memcpy(at + maps.size(), cubin.data(), cubin.size());
  return out;
}

// The kernel's device_assert and debug-check sites (message, kind), in the order the code
// generator numbers them.
std::vector<std::pair<std::string, int64_t>> assert_messages(const ir::Function& f) {
  std::vector<std::pair<std::string, int64_t>> out;
  const_cast<ir::Function&>(f).walk([&](ir::Op* op) {
    if (op->kind == ir::OpKind::Assert) out.emplace_back(op->attrs.str, static_cast<int64_t>(check_kind(*op)));
  });
  return out;
}

std::vector<std::string> split_options(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string o; in >> o;) out.push_back(o);
  return out;
}

class CudaKernel : public CompiledKernel {
 public:
  CudaKernel(int device, const BinaryHeader& h, std::string entry, const std::string& maps, const std::vector<char>& binary,
             size_t offset, std::vector<std::pair<std::string, int64_t>> asserts, size_t num_params)
      : device_(device), header_(h), entry_(std::move(entry)), asserts_(std::move(asserts)), num_params_(num_params) {
    std::istringstream lines(maps);
    // (A recipe read from the disk cache is checked: a bad one is an Error, and the entry recompiled.)
    for (std::string line; std::getline(lines, line);) {
      std::optional<cuda::TensorMapRecipe> r = cuda::parse_tensor_map_recipe(line, num_params_);
      if (!r) fail("kernel {}: bad tensor map recipe '{}'", entry_, line);
      maps_.push_back(*r);
    }
    if (maps_.size() > cuda::kMaxTensorMaps) fail("kernel {}: {} tensor maps, at most {}", entry_, maps_.size(), cuda::kMaxTensorMaps);
    encoded_.resize(maps_.size());
    const cu::Driver& d = cu::driver();
    cu::ensure_context(device_);
    // cuModuleLoadData wants the image suitably aligned: copy it.
    image_.assign(binary.begin() + static_cast<std::ptrdiff_t>(offset), binary.end());
    image_.push_back('\0');  // an image that is not ELF is read as PTX text: never past the end
    std::string ctx = "kernel " + entry_;
    cu::check(d.cuModuleLoadData(&module_, image_.data()), "cuModuleLoadData", ctx);
    cu::check(d.cuModuleGetFunction(&function_, module_, entry_.c_str()), "cuModuleGetFunction", ctx);
    cu::check(d.cuFuncGetAttribute(&registers_per_thread, cu::CU_FUNC_ATTRIBUTE_NUM_REGS, function_),
              "cuFuncGetAttribute(NUM_REGS)", ctx);
    threads_per_program = header_.num_threads;
    shared_bytes = header_.smem_bytes;
    if (header_.smem_bytes > 48 * 1024) {
      const cu::DeviceProperties& p = cu::properties(device_);
      if (header_.smem_bytes > p.max_shared_memory_per_block_optin)
        fail("kernel {} needs {} bytes of shared memory; device {} allows {}", entry_, header_.smem_bytes, p.name,
             p.max_shared_memory_per_block_optin);
      cu::check(d.cuFuncSetAttribute(function_, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(header_.smem_bytes)),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", ctx);
    }
    if (header_.flags & kPersistent) {
      int per_sm = 0;
      cu::check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, function_, header_.num_threads,
                                                              static_cast<size_t>(header_.smem_bytes)),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor", ctx);
      resident_ctas_ = static_cast<int64_t>(std::max(per_sm, 1)) * cu::properties(device_).multiprocessor_count;
    }
  }
  ~CudaKernel() override {
    if (!module_) return;
    try {
      cu::ensure_context(device_);
      cu::driver().cuModuleUnload(module_);
    } catch (const Error&) {  // never throw from a destructor; the module dies with the context
    }
  }

  void launch(const uint64_t* args, const LaunchGrid& grid) override {
    const cu::Driver& d = cu::driver();
    cu::ensure_context(device_);
    cu::CUstream stream = cu::current_stream(device_);  // the launching thread's (runtime/streams.h)
    // Every parameter is at most 8 bytes and little-endian in its 64-bit slot: a pointer to the
    // slot is a pointer to the parameter (i32 in the low 4 bytes, f32 bits in the low half, ...).
    // Kernels have at most 64 run-time parameters (dsl/kernel.cpp), plus scratch and flag here,
    // then the tensor maps.
    // (A persistent kernel takes the program grid after them, and runs on at most the resident CTAs.)
    std::array<void*, 3 * 64 + 5 + cuda::kMaxTensorMaps> params;  // debug mode: 2 hidden per pointer
    for (size_t i = 0; i < num_params_; ++i) params[i] = const_cast<uint64_t*>(args + i);
    const bool persistent = header_.flags & kPersistent;
    const int64_t ctas = persistent ? std::min<int64_t>(grid.total(), resident_ctas_) : grid.total();
    cu::CUdeviceptr scratch = 0, flag = 0;
    if (header_.scratch_bytes > 0)
      scratch = cu::allocate(static_cast<size_t>(header_.scratch_bytes) * static_cast<size_t>(ctas), device_, stream);
    if (header_.num_asserts > 0) {
      flag = cu::allocate(kFlagBytes, device_, stream);
      cu::memset_d8(flag, 0, kFlagBytes, device_, stream);
    }
    params[num_params_] = &scratch;
    params[num_params_ + 1] = &flag;
    size_t next = num_params_ + 2;
    int32_t grid_params[3] = {static_cast<int32_t>(grid.x), static_cast<int32_t>(grid.y), static_cast<int32_t>(grid.z)};
    if (persistent)
      for (int32_t& g : grid_params) params[next++] = &g;
    std::array<TensorMap, cuda::kMaxTensorMaps> tensor_maps;
    if (!maps_.empty()) {
      std::lock_guard<std::mutex> lock(encoded_mutex_);
      for (size_t i = 0; i < maps_.size(); ++i) {
        tensor_maps[i] = encoded(i, args);
        params[next++] = &tensor_maps[i];
      }
    }
    const unsigned gx = persistent ? static_cast<unsigned>(ctas) : static_cast<unsigned>(grid.x);
    const unsigned gy = persistent ? 1u : static_cast<unsigned>(grid.y), gz = persistent ? 1u : static_cast<unsigned>(grid.z);
    const profiler::detail::GpuTiming timed = profiler::detail::gpu_timing_begin(device_, stream);
    cu::CUresult r = d.cuLaunchKernel(function_, gx, gy, gz, static_cast<unsigned>(header_.num_threads), 1, 1,
                                      static_cast<unsigned>(header_.smem_bytes), stream, params.data(), nullptr);
    if (r == cu::CUDA_SUCCESS) profiler::detail::gpu_timing_end(timed, device_, stream);
    // The allocator reuses a freed block only for later work on the same stream.
    if (scratch) cu::free(scratch);
    if (r != cu::CUDA_SUCCESS) {
      if (flag) cu::free(flag);
      cu::check(r, "cuLaunchKernel", "kernel " + name);
    }
    // device_print output reaches stdout when the host synchronises: before launch returns.
    if (header_.flags & kHasPrint) cu::check(d.cuStreamSynchronize(stream), "cuStreamSynchronize", "kernel " + name);
    if (flag) {
      // (device_header.cpp's tt_assert_fail: id + 1, program; then lane and payload, 64 bits each.)
      int64_t state[kFlagBytes / 8] = {};
      cu::copy_d2h(state, flag, sizeof state, device_, stream);  // waits for the kernel
      cu::free(flag);
      int32_t head[4];
      std::memcpy(head, state, sizeof head);
      if (head[0] > 0) {
        size_t id = static_cast<size_t>(head[0] - 1);
        CheckFailure c;
        if (id < asserts_.size()) c.message = asserts_[id].first, c.kind = asserts_[id].second;
        else c.message = "?";
        c.program = {head[1], head[2], head[3]};
        c.lane = state[2];
        c.payload = {state[3], state[4], state[5]};
        fail("{}", describe(c, name));
      }
    }
  }

 private:
  // A tensor map's encoding for one launch (recipe: codegen.h): a 2-D row-major tensor, 128-byte
  // swizzle (the matmul stages' layout), zero outside it.
  struct alignas(64) TensorMap {
    uint64_t words[16];
  };

  // Map i for these arguments: encoded again only when its base, shape or stride changed since
  // the last launch (a training step launches the same matrices again and again).
  const TensorMap& encoded(size_t i, const uint64_t* args) {
    const cuda::TensorMapRecipe& r = maps_[i];
    std::array<int64_t, 4> key;
    for (size_t k = 0; k < key.size(); ++k) key[k] = cuda::recipe_value(r.values[k], args);
    Encoded& e = encoded_[i];
    if (!e.valid || e.key != key) {
      encode(r, key, e.map);
      e.key = key, e.valid = true;
    }
    return e.map;
  }

  // key: base, shape0, shape1, stride0 (stride1 is 1). A tensor no map can describe (an empty
  // dim, a row stride that is negative or not 16-byte aligned) gets zeros: the kernel's guard
  // tests the same and takes its cp.async loop instead.
  void encode(const cuda::TensorMapRecipe& r, const std::array<int64_t, 4>& key, TensorMap& out) const {
    const int64_t shape0 = key[1], shape1 = key[2], stride0 = key[3];
    if (!cuda::tensor_map_usable(shape0, shape1, stride0, r.esize)) {
      out = TensorMap{};
      return;
    }
    uint64_t dims[2] = {static_cast<uint64_t>(shape1), static_cast<uint64_t>(shape0)};
    uint64_t strides[1] = {static_cast<uint64_t>(stride0) * static_cast<uint64_t>(r.esize)};
    uint32_t unit[2] = {1, 1};
    // (The code generator took this path only for a 16-byte aligned base and row stride.)
    cu::CUresult e = cu::driver().cuTensorMapEncodeTiled(&out, r.dtype, 2, reinterpret_cast<void*>(key[0]), dims, strides,
                                                         r.box, unit, /*interleave none*/ 0, /*swizzle 128 B*/ 3,
                                                         /*L2 promotion 128 B*/ 2, /*zero fill*/ 0);
    if (e != cu::CUDA_SUCCESS)
      cu::check(e, "cuTensorMapEncodeTiled",
                fmt::format("kernel {} (a tensor of {} x {} elements, row stride {})", name, shape0, shape1, stride0));
  }

  struct Encoded {
    std::array<int64_t, 4> key{};
    TensorMap map{};
    bool valid = false;
  };

  int device_;
  std::vector<cuda::TensorMapRecipe> maps_;
  std::vector<Encoded> encoded_;  // per map, its last encoding (under encoded_mutex_: launches may race)
  std::mutex encoded_mutex_;
  BinaryHeader header_;
  std::string entry_;
  std::vector<std::pair<std::string, int64_t>> asserts_;
  size_t num_params_;
  int64_t resident_ctas_ = 0;  // a persistent kernel's CTAs: as many as the device holds at once
  std::vector<char> image_;
  cu::CUmodule module_ = nullptr;
  cu::CUfunction function_ = nullptr;
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {}

  const char* name() const override { return "cuda"; }
  std::string binary_kind() const override { return "cubin"; }

  // "sm_90a" on Hopper (wgmma, setmaxnreg), "sm_XY" elsewhere.
  std::string arch() const {
    const cu::DeviceProperties& p = cu::properties(device_);
    return p.cc_major == 9 && p.cc_minor == 0 ? "sm_90a" : p.arch();
  }
  std::string target_id() const override {
    return fmt::format("{};binary-2;nvrtc-{};driver-{};smem-{};fast-compile-{};codegen-{};options {}", arch(),
                       cuda::nvrtc_version(), cu::driver().driver_version,
                       cu::properties(device_).max_shared_memory_per_block_optin, fast_compile_id(), env().cuda_codegen,
                       env().nvrtc_options);
  }

  std::vector<char> generate(ir::Function& f, const AxisInfoMap& analysed, const CompileOptions& opts) override {
    // Contraction is the IR's decision (jit/passes/contract_fma.h); the generators then emit
    // exactly the fmas it made, so both round alike. generate_cuda contracts too (tests and tools
    // call it without a launch); the PTX generator takes the IR as it is. New values need their
    // axis facts.
    std::optional<AxisInfoMap> contracted;
    if (cuda::contract_for_cuda(f)) contracted = analyze_axis_info(f);
    const AxisInfoMap& axis = contracted ? *contracted : analysed;
    cuda::check_codegen_mode(env().cuda_codegen);  // before the PTX path, which would not look
    // Straight-line kernels of the PTX generator's subset skip NVRTC (any size: ptxas optimises
    // them fully); the rest of the short ones get NVRTC's fast level.
    if (env().fast_compile && direct_ptx() && env().cuda_codegen != "layouts") {
      std::string declined;
      if (auto ks = cuda::generate_ptx(f, axis, opts, arch(), &declined)) {
        if (const std::string& dir = env().dump_dir; !dir.empty()) std::ofstream(dir + "/" + f.name + ".ptx") << ks->source;
        return pack(*ks, cuda::ptx_to_cubin(ks->source, ks->entry, arch()));
      }
      if (env().log_compile) log_line(fmt::format("compile {}: through NVRTC, not PTX: {}", f.name, declined));
    }
    // Buffers may use the device's opt-in shared memory (227 KB on H100) less 8 KB for the
    // reduction partials and flags the element-loop generator allocates after them; the layout
    // generator counts every byte and takes the whole opt-in limit.
    const int64_t optin = cu::properties(device_).max_shared_memory_per_block_optin;
    const int64_t budget = optin > 16 * 1024 ? optin - 8 * 1024 : cuda::kSharedMemoryBudget;
    cuda::KernelSource ks = cuda::generate_cuda(f, axis, opts, budget, cu::properties(device_).compute_capability(),
                                                optin > 16 * 1024 ? optin : 0);
    if (const std::string& dir = env().dump_dir; !dir.empty()) std::ofstream(dir + "/" + f.name + ".cu") << ks.source;
    std::vector<std::string> options = {"--fmad=false"};  // no contraction but the IR's fmas
    if (env().fast_compile && cuda::compiles_fast(f)) options.push_back(cuda::kFastCompileOption);
    for (std::string& o : split_options(env().nvrtc_options)) options.push_back(std::move(o));
    std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch(), options);
    return pack(ks, cubin);
  }

  std::shared_ptr<CompiledKernel> load(const std::vector<char>& binary, const ir::Function& f) override {
    BinaryHeader h{};
    if (binary.size() < sizeof h) fail("CUDA backend: the binary of kernel {} is truncated", f.name);
    std::memcpy(&h, binary.data(), sizeof h);
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.entry_length < 0 ||
        sizeof h + static_cast<size_t>(h.entry_length) > binary.size())
      fail("CUDA backend: the binary of kernel {} is not a Tritium cubin", f.name);
    if (h.maps_length < 0 || sizeof h + static_cast<size_t>(h.entry_length) + static_cast<size_t>(h.maps_length) > binary.size())
      fail("CUDA backend: the binary of kernel {} is not a Tritium cubin", f.name);
    std::string entry(binary.data() + sizeof h, static_cast<size_t>(h.entry_length));
    std::string maps(binary.data() + sizeof h + entry.size(), static_cast<size_t>(h.maps_length));
    return std::make_shared<CudaKernel>(device_, h, entry, maps, binary, sizeof h + entry.size() + maps.size(),
                                        assert_messages(f), f.params.size());
  }

 private:
  int device_;

  // Straight to PTX for fast-compiling kernels, unless NVRTC options were asked for (they would
  // not apply) or nvJitLink is missing.
  static bool direct_ptx() { return env().nvrtc_options.empty() && cuda::nvjitlink_available(); }
  static std::string fast_compile_id() {
    if (!env().fast_compile) return "off";
    return direct_ptx() ? fmt::format("ptx-nvjitlink-{}+{}", cuda::nvjitlink_version(), cuda::kFastCompileOption)
                        : cuda::kFastCompileOption;
  }
};

}  // namespace

Backend& cuda_backend(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, std::unique_ptr<CudaBackend>> backends;
  std::lock_guard lock(mutex);
  auto& b = backends[device];
  if (!b) b = std::make_unique<CudaBackend>(device);
  return *b;
}

}  // namespace tritium::jit
