// Training scalars (loss, learning rate, tokens/s, memory, ...) logged one JSON line per step:
//   {"step": 120, "loss": 0.4213, "lr": 0.001, "tokens_per_s": 51234.5, "memory": 8123456}
// and drawn at the end as an SVG with one line plot per scalar against the step (the plots of
// tritium-tune's sweeps, io/svg_line_plot.h), stacked in one file. Each line is flushed when it is
// written, so a run that dies keeps what it logged; non-finite values are written as null (JSON
// has no NaN) and left out of the plots.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace tritium::profiler {

struct ScalarRecord {
  int64_t step = 0;
  std::vector<std::pair<std::string, double>> values;  // in the order logged
};

class ScalarLog {
 public:
  // Opens (truncates) the JSON-lines file; an error names the path and the reason.
  explicit ScalarLog(const std::string& path);
  ~ScalarLog();
  ScalarLog(const ScalarLog&) = delete;
  ScalarLog& operator=(const ScalarLog&) = delete;

  // One line. A name must be non-empty and not "step" (an error names it).
  void log(int64_t step, std::vector<std::pair<std::string, double>> values);

  const std::vector<ScalarRecord>& records() const { return records_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<ScalarRecord> records_;
};

// Reads a JSON-lines scalar log back (blank lines skipped; null values read as NaN). An error
// names the file, the line and what is wrong (not an object, no integer "step", a value that is
// not a number or null).
std::vector<ScalarRecord> read_scalar_log(const std::string& path);

// One stacked SVG with a plot per scalar name (in order of first appearance), x = step.
std::string scalar_plots_svg(const std::vector<ScalarRecord>& records, const std::string& title);
void write_scalar_plots(const std::vector<ScalarRecord>& records, const std::string& title, const std::string& path);

}  // namespace tritium::profiler
