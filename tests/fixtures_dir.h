// Where the committed test fixtures (tests/fixtures/) are: $TRITIUM_FIXTURES_DIR if set (a binary
// carried to another machine, as scripts/gpu_check.sh --portable runs it), else the source tree's
// folder compiled in by tests/CMakeLists.txt. A missing folder is an error naming both, never a
// silent skip.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/error.h"

namespace tritium::test {

inline std::filesystem::path fixtures_dir() {
  const char* env = std::getenv("TRITIUM_FIXTURES_DIR");
#ifdef TRITIUM_TEST_FIXTURES_DIR
  std::string built_in = TRITIUM_TEST_FIXTURES_DIR;
#else
  std::string built_in;
#endif
  std::filesystem::path dir = env && *env ? std::filesystem::path(env) : std::filesystem::path(built_in);
  if (dir.empty() || !std::filesystem::is_directory(dir))
    fail("test fixtures: folder '{}' not found (set TRITIUM_FIXTURES_DIR to the source tree's tests/fixtures)",
         dir.string());
  return dir;
}

}  // namespace tritium::test
