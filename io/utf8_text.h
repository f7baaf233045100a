// Widths of UTF-8 text in code points, for the plain-text tables and the SVG legends that size
// columns from their labels (autotune/report.cpp, io/svg_line_plot.cpp).
#pragma once
#include <cstddef>
#include <string>

namespace tritium::io {

// Number of UTF-8 code points.
inline size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// At most `max` code points, with "…" when cut.
inline std::string utf8_shorten(const std::string& s, size_t max) {
  if (utf8_length(s) <= max) return s;
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == max - 1) break;
  }
  return s.substr(0, i) + "\u2026";
}

}  // namespace tritium::io
