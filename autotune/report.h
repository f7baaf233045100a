// The report of an autotuning sweep: every (shape, config) measurement, summarised as a text table,
// saved as CSV and JSON, and drawn as an SVG line plot in the manner of triton.testing.perf_report.
// A ProgressBar shows how far a sweep has got on stderr.
//
// Rows have one of three states, read from SweepRow::status:
//   "ok"                      ms is the median time;
//   "early-stopped..."        ms is a lower bound on the time (benchmarking stopped once the config
//                             was clearly slower than the best so far), so its throughput is an
//                             upper bound; it never counts as the best config of its shape;
//   anything else             (e.g. "failed: out of shared memory") the config failed; ms is NaN.
// A row whose ms is NaN, infinite or <= 0 counts as failed whatever its status says.
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace tritium::sweep {

// One measurement of one config on one shape.
struct SweepRow {
  std::string shape;       // e.g. "M=1024 N=1024 K=1024"
  double x = 0;            // the shape's position on the plot's x axis (e.g. the size N)
  std::string config;      // e.g. "BLOCK_M=64 BLOCK_N=64 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=3"
  std::string family;      // the plot line this row belongs to (usually == config); empty: config
  double ms = 0;           // median time in milliseconds; NaN when the config failed
  std::string status;      // "ok", "early-stopped" or "failed: <reason>" (see the top of this file)
  double work = 0;         // FLOPs (for TFLOP/s) or bytes (for GB/s) of this shape
  bool is_default = false; // the kernel's default config (speed-ups are reported against it)
};

struct SweepReport {
  std::string kernel;   // "matmul f32"
  std::string device;   // "cuda:0 (NVIDIA H100 80GB HBM3)" or "cpu (2 threads)"
  std::string metric;   // "TFLOP/s", "GFLOP/s", "GB/s" or "TB/s" (throughput = work / time)
  std::string x_label;  // "N" (plot x axis)
  double seconds = 0;   // wall time of the sweep
  std::vector<SweepRow> rows;
};

// How a row's status reads (see the top of this file).
enum class RowState { ok, early_stopped, failed };
RowState row_state(const SweepRow& row);

// The throughput of a row in report.metric: TFLOP/s = work / ms / 1e9, GFLOP/s and GB/s =
// work / ms / 1e6, TB/s = work / ms / 1e9. NaN for a failed row. Throws tritium::Error for a
// metric it does not know.
double metric_value(const SweepReport& report, const SweepRow& row);

// What format_table prints for one shape. Speed-ups are NaN where they cannot be given.
struct ShapeSummary {
  std::string shape;
  double x = 0;
  int best = -1;                  // index into report.rows of the fastest "ok" row; -1: none
  double best_ms = 0, best_value = 0;          // its time and throughput (NaN without best)
  double speedup_vs_worst = 0;    // slowest measured (ok or early-stopped) time / best time
  bool worst_is_lower_bound = false;           // an early-stopped row exists: the true worst is slower
  double speedup_vs_default = 0;  // default config's time / best time; NaN: default failed or absent
  bool default_is_lower_bound = false;         // the default config was early-stopped
  int ok = 0, early_stopped = 0, failed = 0;   // rows of this shape in each state
};
// One summary per shape, in order of the shape's first appearance in report.rows.
std::vector<ShapeSummary> summarize(const SweepReport& report);

// Per shape: best config, its time, its throughput, speed-up over the worst measured config and
// over the default config ("-" when the default failed or is absent; ">=" marks a lower bound),
// and the number of configs ok / early-stopped / failed. Plain fixed-width text, ending in '\n'.
std::string format_table(const SweepReport& report);

// CSV (RFC 4180): a header line "shape,x,config,family,status,ms,work,throughput,unit,is_default",
// then one line per row; fields holding a comma, quote or line break are quoted, quotes doubled.
// A failed row's ms and throughput are empty.
std::string to_csv(const SweepReport& report);
void write_csv(const SweepReport& report, const std::string& path);

// JSON: {"kernel", "device", "metric", "x_label", "seconds", "rows": [{"shape", "x", "config",
// "family", "status", "ms", "work", "throughput", "is_default"}, ...]}; NaN and infinities are null.
std::string to_json(const SweepReport& report);
void write_json(const SweepReport& report, const std::string& path);

// Whether the plot's x axis is log2: every x is > 0 and the largest is more than 8 times the
// smallest (all rows count, failed ones too, so every shape of the sweep has a place on the axis).
bool use_log2_x(const SweepReport& report);

// A self-contained SVG 1.1 line plot: x = row.x, y = throughput, one polyline and legend entry per
// family that has at least one ok or early-stopped point (failed points are skipped; several rows
// of a family at one x draw the highest value). Early-stopped points are hollow markers (their
// throughput is an upper bound); the default config's line is drawn thicker and marked in the
// legend. The legend stands to the right of the plot (in several columns when long); lines take
// colours, dash patterns and marker shapes in turn, so 40 families stay distinguishable. Each
// marker carries a <title> tooltip with the shape, config and value.
std::string to_svg(const SweepReport& report);
void write_svg(const SweepReport& report, const std::string& path);

// Writes text to path (truncating); throws tritium::Error naming the path and strerror's reason.
void write_text_file(const std::string& path, const std::string& text);

// A progress bar on stderr: "[#####...............] 37/128 <label> <note>". When stderr is a
// terminal the line is redrawn in place with '\r' (at most every 50 ms, and always at the end);
// otherwise a line is printed each time another tenth of `total` is done, so logs stay short.
// tick() may be called from several threads. finish() prints the final line with the elapsed time
// and a newline; the destructor calls it when it was not called.
class ProgressBar {
 public:
  ProgressBar(int total, std::string label);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();

  void tick(const std::string& note = "");
  void finish();
  int done() const { return done_.load(); }

 private:
  std::string line(int done, const std::string& note) const;
  void draw(const std::string& text, bool newline);  // with mutex_ held

  int total_;
  std::string label_;
  bool tty_;
  std::atomic<int> done_{0};
  std::mutex mutex_;
  bool finished_ = false;
  int last_tenth_ = 0;                 // non-terminal: tenths already printed
  size_t last_width_ = 0;              // terminal: length of the line on screen
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace tritium::sweep
