#include "io/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace tritium::io {

void write_text_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("cannot write {}: {}", path, std::strerror(errno));
  size_t n = std::fwrite(text.data(), 1, text.size(), f);
  int err = n == text.size() ? 0 : errno;
  if (std::fclose(f) != 0 && !err) err = errno;
  if (err || n != text.size()) fail("cannot write {}: {}", path, std::strerror(err ? err : EIO));
}

}  // namespace tritium::io
