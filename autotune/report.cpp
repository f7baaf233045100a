#include "autotune/report.h"

#include "common/log.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "common/error.h"
#include "io/svg_line_plot.h"
#include "io/text_file.h"
#include "io/utf8_text.h"

namespace tritium::sweep {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// "1.23", "45.6", "789", "0.00123": three significant digits without an exponent for usual sizes.
std::string sig3(double v) {
  if (!std::isfinite(v)) return "-";
  double a = std::fabs(v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

// Milliseconds with four significant digits.
std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "-";
  if (ms >= 1000) return fmt::format("{:.0f}", ms);
  return fmt::format("{:.4g}", ms);
}

std::string speedup_text(double s, bool lower_bound) {
  if (!std::isfinite(s)) return "-";
  return fmt::format("{}{:.2f}x", lower_bound ? ">=" : "", s);
}

// Shortest round-trip text of a finite double; `null_text` for NaN and infinities.
std::string number(double v, const char* null_text) {
  if (!std::isfinite(v)) return null_text;
  return fmt::format("{}", v);
}

const std::string& family_of(const SweepRow& r) { return r.family.empty() ? r.config : r.family; }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + '"';
}

}  // namespace

RowState row_state(const SweepRow& row) {
  if (!std::isfinite(row.ms) || row.ms <= 0) return RowState::failed;
  if (row.status == "ok") return RowState::ok;
  if (starts_with(row.status, "early-stopped") || starts_with(row.status, "early stopped"))
    return RowState::early_stopped;
  return RowState::failed;
}

double metric_value(const SweepReport& report, const SweepRow& row) {
  double scale;
  if (report.metric == "TFLOP/s" || report.metric == "TB/s") scale = 1e9;
  else if (report.metric == "GFLOP/s" || report.metric == "GB/s") scale = 1e6;
  else fail("autotune report: unknown metric '{}' (TFLOP/s, GFLOP/s, GB/s or TB/s)", report.metric);
  if (row_state(row) == RowState::failed) return kNaN;
  return row.work / row.ms / scale;
}

// ---------------------------------------------------------------------------------------------
// Summary table
// ---------------------------------------------------------------------------------------------

std::vector<ShapeSummary> summarize(const SweepReport& report) {
  std::vector<ShapeSummary> out;
  std::map<std::string, size_t> index;
  std::vector<double> worst_ms;
  std::vector<int> default_row;
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const SweepRow& r = report.rows[i];
    auto [it, inserted] = index.emplace(r.shape, out.size());
    if (inserted) {
      ShapeSummary s;
      s.shape = r.shape;
      s.x = r.x;
      s.best_ms = s.best_value = s.speedup_vs_worst = s.speedup_vs_default = kNaN;
      out.push_back(s);
      worst_ms.push_back(kNaN);
      default_row.push_back(-1);
    }
    size_t k = it->second;
    ShapeSummary& s = out[k];
    RowState st = row_state(r);
    if (st == RowState::failed) {
      ++s.failed;
    } else {
      if (st == RowState::ok) {
        ++s.ok;
        if (s.best < 0 || r.ms < s.best_ms) {
          s.best = static_cast<int>(i);
          s.best_ms = r.ms;
        }
      } else {
        ++s.early_stopped;
      }
      if (!(r.ms <= worst_ms[k])) worst_ms[k] = r.ms;  // also replaces NaN
    }
    if (r.is_default && default_row[k] < 0) default_row[k] = static_cast<int>(i);
  }
  for (size_t k = 0; k < out.size(); ++k) {
    ShapeSummary& s = out[k];
    if (s.best < 0) continue;
    s.best_value = metric_value(report, report.rows[s.best]);
    s.speedup_vs_worst = worst_ms[k] / s.best_ms;
    // An early-stopped row's real time is longer than its recorded one: the worst may be slower.
    s.worst_is_lower_bound = s.early_stopped > 0;
    if (default_row[k] >= 0) {
      const SweepRow& d = report.rows[default_row[k]];
      RowState st = row_state(d);
      if (st != RowState::failed) {
        s.speedup_vs_default = d.ms / s.best_ms;
        s.default_is_lower_bound = st == RowState::early_stopped;
      }
    }
  }
  return out;
}

std::string format_table(const SweepReport& report) {
  std::vector<ShapeSummary> summary = summarize(report);
  size_t configs = 0;
  {
    std::map<std::string, int> seen;
    for (const SweepRow& r : report.rows) seen[r.config];
    configs = seen.size();
  }
  std::string out = fmt::format("{} on {}: {} shape{} x {} config{}, {} measurement{} in {:.1f} s\n", report.kernel,
                                report.device, summary.size(), summary.size() == 1 ? "" : "s", configs,
                                configs == 1 ? "" : "s", report.rows.size(), report.rows.size() == 1 ? "" : "s",
                                report.seconds);
  // Columns: text left-aligned, numbers right-aligned.
  std::vector<std::string> header = {"shape", "best config", "ms",     report.metric, "vs worst",
                                     "vs default", "ok",    "early", "failed"};
  std::vector<bool> right = {false, false, true, true, true, true, true, true, true};
  std::vector<std::vector<std::string>> cells;
  bool any_bound = false;
  for (const ShapeSummary& s : summary) {
    bool has = s.best >= 0;
    any_bound = any_bound || (has && (s.worst_is_lower_bound || s.default_is_lower_bound));
    cells.push_back({s.shape, has ? report.rows[s.best].config : std::string("(no config ran)"),
                     has ? ms_text(s.best_ms) : "-", has ? sig3(s.best_value) : "-",
                     speedup_text(s.speedup_vs_worst, s.worst_is_lower_bound),
                     speedup_text(s.speedup_vs_default, s.default_is_lower_bound), std::to_string(s.ok),
                     std::to_string(s.early_stopped), std::to_string(s.failed)});
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = io::utf8_length(header[c]);
    for (auto& row : cells) width[c] = std::max(width[c], io::utf8_length(row[c]));
  }
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) line += "  ";
      std::string pad(width[c] - io::utf8_length(row[c]), ' ');
      line += right[c] ? pad + row[c] : row[c] + (c + 1 < row.size() ? pad : "");
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  };
  emit(header);
  size_t total = 0;
  for (size_t w : width) total += w;
  out += std::string(total + 2 * (width.size() - 1), '-') + '\n';
  for (auto& row : cells) emit(row);
  if (any_bound)
    out += ">=: a lower bound (early-stopped configs were timed only until they were clearly slower)\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// CSV and JSON
// ---------------------------------------------------------------------------------------------

std::string to_csv(const SweepReport& report) {
  std::string out = "shape,x,config,family,status,ms,work,throughput,unit,is_default\n";
  for (const SweepRow& r : report.rows) {
    bool failed = row_state(r) == RowState::failed;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.shape), number(r.x, ""), csv_field(r.config),
                       csv_field(family_of(r)), csv_field(r.status), failed ? "" : number(r.ms, ""),
                       number(r.work, ""), number(metric_value(report, r), ""), csv_field(report.metric),
                       r.is_default ? 1 : 0);
  }
  return out;
}

std::string to_json(const SweepReport& report) {
  std::string out = "{\n";
  out += fmt::format("  \"kernel\": {},\n  \"device\": {},\n  \"metric\": {},\n  \"x_label\": {},\n", json_string(report.kernel),
                     json_string(report.device), json_string(report.metric), json_string(report.x_label));
  out += fmt::format("  \"seconds\": {},\n  \"rows\": [", number(report.seconds, "null"));
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const SweepRow& r = report.rows[i];
    bool failed = row_state(r) == RowState::failed;
    out += i ? ",\n    " : "\n    ";
    out += fmt::format(
        "{{\"shape\": {}, \"x\": {}, \"config\": {}, \"family\": {}, \"status\": {}, \"ms\": {}, \"work\": {}, "
        "\"throughput\": {}, \"is_default\": {}}}",
        json_string(r.shape), number(r.x, "null"), json_string(r.config), json_string(family_of(r)),
        json_string(r.status), failed ? "null" : number(r.ms, "null"), number(r.work, "null"),
        number(metric_value(report, r), "null"), r.is_default ? "true" : "false");
  }
  out += report.rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

void write_text_file(const std::string& path, const std::string& text) { io::write_text_file(path, text); }

void write_csv(const SweepReport& report, const std::string& path) { write_text_file(path, to_csv(report)); }
void write_json(const SweepReport& report, const std::string& path) { write_text_file(path, to_json(report)); }

// ---------------------------------------------------------------------------------------------
// SVG plot
// ---------------------------------------------------------------------------------------------

bool use_log2_x(const SweepReport& report) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const SweepRow& r : report.rows) {
    if (!std::isfinite(r.x)) continue;
    if (r.x <= 0) return false;
    lo = std::min(lo, r.x);
    hi = std::max(hi, r.x);
  }
  return hi > lo && hi > 8 * lo;
}

namespace {

struct Point {
  double x, value;
  bool early;
  const SweepRow* row;
};

struct Family {
  std::string name;
  bool is_default = false;
  std::vector<Point> points;  // valid points, sorted by x, one per x
};

}  // namespace

std::string to_svg(const SweepReport& report) {
  // Families in order of first appearance, with their valid points.
  std::vector<Family> families;
  std::map<std::string, size_t> index;
  bool any_early = false;
  for (const SweepRow& r : report.rows) {
    auto [it, inserted] = index.emplace(family_of(r), families.size());
    if (inserted) families.push_back({family_of(r), false, {}});
    Family& f = families[it->second];
    f.is_default = f.is_default || r.is_default;
    RowState st = row_state(r);
    double v = metric_value(report, r);
    if (st == RowState::failed || !std::isfinite(v) || !std::isfinite(r.x)) continue;
    f.points.push_back({r.x, v, st == RowState::early_stopped, &r});
  }
  io::LinePlot plot;
  plot.title = report.kernel + " \u2014 " + report.device;
  std::map<std::string, int> shapes, configs;
  for (const SweepRow& r : report.rows) shapes[r.shape], configs[r.config];
  plot.subtitle = fmt::format("{} shape{} \u00d7 {} config{}, {} measurement{}, {:.1f} s", shapes.size(),
                              shapes.size() == 1 ? "" : "s", configs.size(), configs.size() == 1 ? "" : "s",
                              report.rows.size(), report.rows.size() == 1 ? "" : "s", report.seconds);
  plot.x_label = report.x_label;
  plot.y_label = report.metric;
  plot.log2_x = use_log2_x(report);
  for (const SweepRow& r : report.rows) plot.x_values.push_back(r.x);  // every shape has its place
  size_t failed_families = 0;
  for (Family& f : families) {
    if (f.points.empty()) {
      ++failed_families;
      continue;
    }
    // Several rows of a family at one x: the highest value.
    std::stable_sort(f.points.begin(), f.points.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    std::vector<Point> one_per_x;
    for (const Point& p : f.points) {
      if (!one_per_x.empty() && one_per_x.back().x == p.x) {
        if (p.value > one_per_x.back().value) one_per_x.back() = p;
      } else {
        one_per_x.push_back(p);
      }
    }
    io::PlotSeries series{f.name, f.is_default, {}};
    for (const Point& p : one_per_x) {
      any_early = any_early || p.early;
      std::string tip = fmt::format("{}\n{}\n{} {}{}{}", p.row->shape, p.row->config, p.early ? "<= " : "", sig3(p.value),
                                    report.metric,
                                    p.early ? fmt::format(" (early-stopped, >= {} ms)", ms_text(p.row->ms))
                                            : fmt::format(" ({} ms)", ms_text(p.row->ms)));
      series.points.push_back({p.x, p.value, p.early, tip});
    }
    plot.series.push_back(std::move(series));
  }
  if (any_early) plot.notes.push_back("hollow marker: early-stopped (an upper bound)");
  if (failed_families)
    plot.notes.push_back(fmt::format("{} {} failed on every shape (not drawn)", failed_families,
                                     failed_families == 1 ? "family" : "families"));
  return io::to_svg(plot);
}

void write_svg(const SweepReport& report, const std::string& path) { write_text_file(path, to_svg(report)); }

// ---------------------------------------------------------------------------------------------
// ProgressBar
// ---------------------------------------------------------------------------------------------

namespace {


size_t terminal_width() {
  struct winsize ws {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
  return 100;
}

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  int t = static_cast<int>(s + 0.5);
  if (t < 3600) return fmt::format("{}:{:02d}", t / 60, t % 60);
  return fmt::format("{}:{:02d}:{:02d}", t / 3600, t / 60 % 60, t % 60);
}

}  // namespace

ProgressBar::ProgressBar(int total, std::string label)
    : total_(std::max(total, 0)), label_(std::move(label)), tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_draw_() {}

ProgressBar::~ProgressBar() {
  try {
    finish();
  } catch (...) {
  }
}

std::string ProgressBar::line(int done, const std::string& note) const {
  constexpr int kWidth = 20;
  int filled = total_ > 0 ? static_cast<int>(static_cast<long long>(kWidth) * std::min(done, total_) / total_) : 0;
  std::string text = fmt::format("[{}{}] {}/{}", std::string(filled, '#'), std::string(kWidth - filled, '.'), done, total_);
  if (!label_.empty()) text += ' ' + label_;
  if (!note.empty()) text += ' ' + note;
  return text;
}

void ProgressBar::draw(const std::string& text, bool newline) {
  if (tty_) {
    // Cut to the terminal's width ('\r' only returns to the start of the last wrapped line).
    std::string shown = text;
    size_t cols = terminal_width() - 1;
    if (io::utf8_length(shown) > cols) shown = io::utf8_shorten(shown, cols);
    size_t w = io::utf8_length(shown);
    std::string pad = last_width_ > w ? std::string(last_width_ - w, ' ') : std::string();
    last_width_ = w;
    write_stderr('\r' + shown + pad + (newline ? "\n" : ""));
  } else {
    write_stderr(text + '\n');
  }
}

void ProgressBar::tick(const std::string& note) {
  int done = ++done_;
  std::lock_guard lock(mutex_);
  if (finished_) return;
  if (tty_) {
    auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(50)) return;
    last_draw_ = now;
    draw(line(done, note), false);
  } else {
    if (total_ <= 0) return;
    int tenth = static_cast<int>(10LL * std::min(done, total_) / total_);
    if (tenth <= last_tenth_) return;
    last_tenth_ = tenth;
    draw(line(done, note), false);
  }
}

void ProgressBar::finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  int done = done_.load();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string text = line(done, fmt::format("done in {}", duration_text(elapsed)));
  draw(text, tty_);  // on a terminal the bar's line ends here; elsewhere draw ends each line
}

}  // namespace tritium::sweep
