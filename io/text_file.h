// Writing a whole text file, with an error that says why it could not be written.
#pragma once
#include <string>

namespace tritium::io {

// Writes text to path (truncating); throws tritium::Error naming the path and strerror's reason.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace tritium::io
