// Optional shared libraries opened at run time (dlopen), so that nothing links them at build time:
// NVRTC and nvJitLink. The first candidate path that opens and has every entry point wins; when
// none does, the reason lists each path tried and why.
#pragma once
#include <dlfcn.h>

#include <functional>
#include <string>
#include <vector>

namespace tritium {

struct SharedLibrary {
  void* handle = nullptr;  // nullptr: no candidate could be used
  std::string path;
  std::string reason;  // why none could be used
};

// `what` names the library in the reason ("libnvrtc"). When the environment variable `env` is set,
// it is the only path tried; otherwise `defaults`, in order. `bind` looks the entry points up in an
// opened handle and says whether it found them all.
SharedLibrary open_shared_library(const std::string& what, const char* env, const std::vector<std::string>& defaults,
                                  const std::function<bool(void*)>& bind);

// A CUDA toolkit library's usual places: `base`.so.13, .so.12 and .so on the loader's path, then
// the same three in /usr/local/cuda/lib64 (base: "libnvrtc").
std::vector<std::string> cuda_toolkit_library_paths(const std::string& base);

// Looks `name` up in `handle` into the function pointer `fn`; false when it is missing.
template <class F> bool bind_symbol(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

}  // namespace tritium
