// The CPU backend: optimise the generated LLVM module at O3 for the host CPU, emit an object
// file (what the disk cache stores), link it into the process with ORC, and run the grid on the
// thread pool.
#include <atomic>
#include <fstream>
#include <mutex>

#include <unistd.h>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include "common/env.h"
#include "jit/backend.h"
#include "jit/cpu/codegen.h"
#include "jit/cpu/cpu_runtime.h"
#include "runtime/thread_pool.h"

namespace tritium::jit {
namespace {

using EntryFn = void (*)(const uint64_t*, int32_t, int32_t, int32_t, int64_t, int64_t, void*);

struct HostTarget {
  std::string triple, cpu, features;
  cpu::VectorRegisters regs;
};

const HostTarget& host() {
  static const HostTarget h = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    HostTarget t;
    t.triple = llvm::sys::getProcessTriple();
    t.cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> feats = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> on;
    for (auto& f : feats) on.push_back(std::string(f.second ? "+" : "-").append(f.first().str()));
    auto has = [&](const char* f) { return feats.lookup(f); };
    t.regs = has("avx512f") ? cpu::VectorRegisters{64, 32} : has("avx") ? cpu::VectorRegisters{32, 16} : cpu::VectorRegisters{16, 16};
    t.regs.bf16_dot = has("avx512f") && has("avx512bf16");
    std::sort(on.begin(), on.end());
    for (auto& f : on) {
      if (!t.features.empty()) t.features += ',';
      t.features += f;
    }
    return t;
  }();
  return h;
}

std::unique_ptr<llvm::TargetMachine> make_target_machine() {
  const HostTarget& h = host();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(h.triple, err);
  if (!target) fail("CPU backend: no LLVM target for {}: {}", h.triple, err);
  llvm::TargetOptions opts;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      h.triple, h.cpu, h.features, opts, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

void dump(const std::string& name, const std::string& suffix, const llvm::Module& m) {
  const std::string& dir = env().dump_dir;
  if (dir.empty()) return;
  std::error_code ec;
  llvm::raw_fd_ostream os(dir + "/" + name + suffix, ec);
  if (!ec) m.print(os, nullptr);
}

// One process-wide ORC instance; every kernel lives in its own JITDylib (they all export the
// same entry symbol).
class Jit {
 public:
  static Jit& get() {
    static Jit j;
    return j;
  }

  EntryFn load(const std::vector<char>& object, const std::string& name) {
    std::lock_guard lock(mutex_);
    std::string dylib = fmt::format("{}#{}", name, counter_++);
    auto jd = jit_->createJITDylib(dylib);
    if (!jd) fail("CPU backend: cannot create a JIT library for {}: {}", name, llvm::toString(jd.takeError()));
    jd->addToLinkOrder(jit_->getMainJITDylib());
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), dylib);
    if (auto e = jit_->addObjectFile(*jd, std::move(buffer)))
      fail("CPU backend: cannot load the object code of {}: {}", name, llvm::toString(std::move(e)));
    auto sym = jit_->lookup(*jd, cpu::kEntrySymbol);
    if (!sym) fail("CPU backend: kernel {} has no entry point: {}", name, llvm::toString(sym.takeError()));
    if (env().perf_map) add_to_perf_map(object, sym->getValue(), name);
    return sym->toPtr<EntryFn>();
  }

 private:
  Jit() {
    host();
    auto j = llvm::orc::LLJITBuilder().create();
    if (!j) fail("CPU backend: cannot start the LLVM JIT: {}", llvm::toString(j.takeError()));
    jit_ = std::move(*j);
    auto& main = jit_->getMainJITDylib();
    // Kernels call libm (expf, tanhf, ...) and a few functions of ours.
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
    if (!gen) fail("CPU backend: cannot search the process for symbols: {}", llvm::toString(gen.takeError()));
    main.addGenerator(std::move(*gen));
    llvm::orc::SymbolMap symbols;
    auto& es = jit_->getExecutionSession();
    symbols[es.intern(cpu::kPrintSymbol)] = {llvm::orc::ExecutorAddr::fromPtr(&cpu::tritium_cpu_print),
                                             llvm::JITSymbolFlags::Exported};
    symbols[es.intern(cpu::kAssertSymbol)] = {llvm::orc::ExecutorAddr::fromPtr(&cpu::tritium_cpu_assert_fail),
                                              llvm::JITSymbolFlags::Exported};
    if (auto e = main.define(llvm::orc::absoluteSymbols(std::move(symbols))))
      fail("CPU backend: cannot define runtime symbols: {}", llvm::toString(std::move(e)));
  }
  // perf's map of JIT code: one line "START SIZE NAME" (hex) per kernel in /tmp/perf-<pid>.map;
  // the size is the entry function's, from the object's symbol table (the kernel's body is
  // inlined into it).
  static void add_to_perf_map(const std::vector<char>& object, uint64_t address, const std::string& name) {
    uint64_t size = 0;
    auto obj = llvm::object::ObjectFile::createObjectFile(
        llvm::MemoryBufferRef(llvm::StringRef(object.data(), object.size()), name));
    if (!obj) {
      llvm::consumeError(obj.takeError());
      return;
    }
    for (const llvm::object::SymbolRef& s : (*obj)->symbols()) {
      auto n = s.getName();
      if (!n) {
        llvm::consumeError(n.takeError());
        continue;
      }
      if (*n == cpu::kEntrySymbol) size = llvm::object::ELFSymbolRef(s).getSize();
    }
    if (size == 0) return;
    std::ofstream(fmt::format("/tmp/perf-{}.map", ::getpid()), std::ios::app)
        << fmt::format("{:x} {:x} tritium:{}\n", address, size, name);
  }

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::mutex mutex_;
  uint64_t counter_ = 0;
};

class CpuKernel : public CompiledKernel {
 public:
  explicit CpuKernel(EntryFn fn) : fn_(fn) {}

  void launch(const uint64_t* args, const LaunchGrid& grid) override {
    cpu::LaunchState state;
    int64_t total = grid.total();
    auto nx = static_cast<int32_t>(grid.x), ny = static_cast<int32_t>(grid.y), nz = static_cast<int32_t>(grid.z);
    runtime::ThreadPool& pool = runtime::ThreadPool::global();
    if (total == 1 || pool.size() == 1) {
      fn_(args, nx, ny, nz, 0, total, &state);
    } else {
      struct Job {
        EntryFn fn;
        const uint64_t* args;
        int32_t nx, ny, nz;
        cpu::LaunchState* state;
      } job{fn_, args, nx, ny, nz, &state};
      pool.parallel_for(total, [](void* ctx, int64_t begin, int64_t end) {
        auto* j = static_cast<Job*>(ctx);
        j->fn(j->args, j->nx, j->ny, j->nz, begin, end, j->state);
      }, &job);
    }
    state.rethrow(name);
  }

 private:
  EntryFn fn_;
};

class CpuBackend : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  std::string binary_kind() const override { return "o"; }
  std::string target_id() const override {
    const HostTarget& h = host();
    return fmt::format("{};{};{};llvm-{}", h.triple, h.cpu, h.features, LLVM_VERSION_STRING);
  }

  std::vector<char> generate(ir::Function& f, const AxisInfoMap& axis, const CompileOptions&) override {
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = cpu::lower_to_llvm(f, axis, ctx, host().regs);
    auto tm = make_target_machine();
    m->setDataLayout(tm->createDataLayout());
    m->setTargetTriple(host().triple);
    dump(f.name, ".ll", *m);

    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    llvm::PassBuilder pb(tm.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*m, mam);
    dump(f.name, ".opt.ll", *m);

    llvm::SmallVector<char, 0> out;
    llvm::raw_svector_ostream os(out);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      fail("CPU backend: LLVM cannot emit object code for {}", host().triple);
    pm.run(*m);
    return std::vector<char>(out.begin(), out.end());
  }

  std::shared_ptr<CompiledKernel> load(const std::vector<char>& binary, const ir::Function& f) override {
    return std::make_shared<CpuKernel>(Jit::get().load(binary, f.name));
  }
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend b;
  return b;
}

}  // namespace tritium::jit
