// NVRTC compile time under several option sets, interleaved in one process (so that load from
// other work on the machine hits every set alike). Needs no GPU. Build and run:
//   g++ -O2 -std=c++17 scripts/nvrtc_options.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64
//       -lnvrtc -Wl,-rpath,/usr/local/cuda/lib64 -o /tmp/nvrtc_options   (one line)
//   TRITIUM_DUMP=/tmp/src build/tests/tritium-tests --run_test=test_cuda_codegen   # sources
//   CUDA_CACHE_DISABLE=1 /tmp/nvrtc_options 15 /tmp/out   (all on one line)
//       "base::--gpu-architecture=sm_90a -std=c++17 -default-device -minimal --time=/tmp/out/base.csv"
//       "min::--gpu-architecture=sm_90a -std=c++17 -default-device -minimal --Ofast-compile=min"
//       -- /tmp/src/add.cu /tmp/src/softmax.cu
// A set is LABEL::OPTIONS; "%N" in an option becomes a counter (one --fdevice-time-trace file per
// compile); HDR=PATH:NAME passes PATH as an include named NAME (to try --pch). Prints the median ms
// per (set, file) and the median ratio to the first set; writes the first timed compile of each
// as OUTDIR/LABEL.FILE.cubin (.ptx for compute_XX or -dlto) to disassemble with nvdisasm -c.
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Set {
  std::string label, header, header_name;
  std::vector<std::string> options;
  bool text = false;  // PTX or LTO IR instead of a cubin
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s REPS OUTDIR LABEL::OPTIONS... -- FILE.cu...\n", argv[0]);
    return 2;
  }
  const int reps = std::atoi(argv[1]);
  const std::string outdir = argv[2];
  std::vector<Set> sets;
  int i = 3;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) {
    Set s;
    std::string a = argv[i];
    size_t p = a.find("::");
    s.label = a.substr(0, p);
    std::istringstream in(a.substr(p + 2));
    for (std::string o; in >> o;) {
      if (o.rfind("HDR=", 0) == 0) {
        size_t q = o.find(':');
        s.header = slurp(o.substr(4, q - 4));
        s.header_name = o.substr(q + 1);
      } else {
        s.options.push_back(o);
        if (o.find("compute_") != std::string::npos || o == "-dlto") s.text = true;
      }
    }
    sets.push_back(std::move(s));
  }
  std::vector<std::string> sources, names;
  for (++i; i < argc; ++i) {
    sources.push_back(slurp(argv[i]));
    std::string n = argv[i];
    names.push_back(n.substr(n.rfind('/') + 1));
  }
  int counter = 0;
  auto compile = [&](const Set& s, size_t f, bool save) {
    std::vector<std::string> opts;
    for (std::string o : s.options) {
      if (size_t q = o.find("%N"); q != std::string::npos) o.replace(q, 2, std::to_string(counter));
      opts.push_back(o);
    }
    ++counter;
    std::vector<const char*> argv_;
    for (const auto& o : opts) argv_.push_back(o.c_str());
    const char* hs = s.header.c_str();
    const char* hn = s.header_name.c_str();
    auto t0 = std::chrono::steady_clock::now();
    nvrtcProgram prog;
    nvrtcCreateProgram(&prog, sources[f].c_str(), names[f].c_str(), s.header.empty() ? 0 : 1, &hs, &hn);
    nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv_.size()), argv_.data());
    std::vector<char> out;
    size_t size = 0;
    if (r == NVRTC_SUCCESS) {
      if (!s.text) {
        nvrtcGetCUBINSize(prog, &size);
        out.resize(size);
        nvrtcGetCUBIN(prog, out.data());
      } else if (nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS) {
        out.resize(size);
        nvrtcGetPTX(prog, out.data());
      } else {
        nvrtcGetLTOIRSize(prog, &size);
        out.resize(size);
        nvrtcGetLTOIR(prog, out.data());
      }
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r != NVRTC_SUCCESS) {
      size_t n = 0;
      nvrtcGetProgramLogSize(prog, &n);
      std::string log(n, '\0');
      nvrtcGetProgramLog(prog, log.data());
      std::fprintf(stderr, "[%s] %s: %s\n%s\n", s.label.c_str(), names[f].c_str(), nvrtcGetErrorString(r), log.c_str());
      std::exit(1);
    }
    if (save)
      std::ofstream(outdir + "/" + s.label + "." + names[f] + (s.text ? ".ptx" : ".cubin"), std::ios::binary)
          .write(out.data(), static_cast<std::streamsize>(out.size()));
    nvrtcDestroyProgram(&prog);
    return ms;
  };
  for (const Set& s : sets) compile(s, 0, false);  // the first compile of a process loads NVRTC's builtins
  const size_t S = sets.size(), F = sources.size();
  std::vector<std::vector<std::vector<double>>> t(S, std::vector<std::vector<double>>(F));
  for (int r = 0; r < reps; ++r)
    for (size_t f = 0; f < F; ++f)
      for (size_t k = 0; k < S; ++k) {
        size_t s = (k + static_cast<size_t>(r)) % S;  // rotate the order of the sets
        t[s][f].push_back(compile(sets[s], f, r == 0));
      }
  std::printf("%-14s", "set");
  for (const auto& n : names) std::printf(" %14s", n.c_str());
  std::printf(" %10s\n", "ratio/1st");
  for (size_t s = 0; s < S; ++s) {
    std::printf("%-14s", sets[s].label.c_str());
    std::vector<double> ratios;
    for (size_t f = 0; f < F; ++f) {
      std::printf(" %14.2f", median(t[s][f]));
      for (int r = 0; r < reps; ++r) ratios.push_back(t[s][f][static_cast<size_t>(r)] / t[0][f][static_cast<size_t>(r)]);
    }
    std::printf(" %10.3f\n", median(ratios));
  }
  return 0;
}
