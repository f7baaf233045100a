// One-line diagnostics on stderr. Each line is written with a single write(2), so lines from
// concurrent threads (and processes sharing the terminal) never interleave.
#pragma once
#include <string_view>

namespace tritium {

// Writes all of `text` to stderr with write(2) (a short write is finished off), unbuffered.
void write_stderr(std::string_view text);

// Writes "[tritium] <message>\n" to stderr, unconditionally.
void log_line(std::string_view message);

// "[tritium] compile add cpu hit 0.41 ms" when TRITIUM_LOG contains "compile"; else nothing.
// `detail` is appended (a miss's phases).
void log_compile_event(std::string_view kernel, std::string_view backend, bool hit, double ms,
                       std::string_view detail = {});

}  // namespace tritium
