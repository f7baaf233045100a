#include "common/shared_library.h"

#include <cstdlib>

#include <fmt/format.h>

namespace tritium {

SharedLibrary open_shared_library(const std::string& what, const char* env, const std::vector<std::string>& defaults,
                                  const std::function<bool(void*)>& bind) {
  std::vector<std::string> candidates = defaults;
  if (const char* e = std::getenv(env); e && *e) candidates = {e};
  SharedLibrary lib;
  std::string tried;
  for (const std::string& c : candidates) {
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = dlerror();
      tried += fmt::format("\n  {}: {}", c, err ? err : "not found");
      continue;
    }
    if (!bind(h)) {
      tried += fmt::format("\n  {}: missing {} entry points", c, what);
      dlclose(h);
      continue;
    }
    lib.handle = h;
    lib.path = c;
    return lib;
  }
  lib.reason = fmt::format("{} could not be opened (set {} to its path); tried:{}", what, env, tried);
  return lib;
}

std::vector<std::string> cuda_toolkit_library_paths(const std::string& base) {
  std::vector<std::string> paths;
  for (const char* dir : {"", "/usr/local/cuda/lib64/"})
    for (const char* suffix : {".so.13", ".so.12", ".so"}) paths.push_back(dir + base + suffix);
  return paths;
}

}  // namespace tritium
