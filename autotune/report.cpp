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

std::string xml(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') out += ' ';  // not allowed in XML 1.0
        else out += static_cast<char>(c);
    }
  }
  return out;
}

// Number of UTF-8 code points (what the legend's width estimate counts).
size_t text_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// At most `max` code points, with "…" when cut.
std::string shorten(const std::string& s, size_t max) {
  if (text_length(s) <= max) return s;
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == max - 1) break;
  }
  return s.substr(0, i) + "\u2026";
}

// Estimated width in pixels of text in DejaVu Sans (the widest of the fonts the SVG names) at
// `px` pixels: the legend is laid out from it, as SVG cannot measure text for us.
double text_width(const std::string& s, double px, bool bold) {
  // Advance widths in em for ' ' .. '~'.
  static const double em[95] = {
      .318, .401, .460, .838, .636, .950, .780, .275, .390, .390, .500, .838, .318, .361, .318, .337,  //  !"#$%&'()*+,-./
      .636, .636, .636, .636, .636, .636, .636, .636, .636, .636, .337, .337, .838, .838, .838, .531,  // 0-9:;<=>?
      1.0,  .684, .686, .698, .770, .632, .575, .775, .752, .295, .295, .656, .557, .863, .748, .787,  // @A-O
      .603, .787, .695, .635, .611, .732, .684, .989, .685, .611, .685, .390, .337, .390, .838, .500,  // P-Z[\]^_
      .500, .613, .635, .550, .635, .615, .352, .635, .634, .278, .278, .579, .278, .974, .634, .612,  // `a-o
      .635, .635, .411, .521, .392, .634, .592, .818, .592, .592, .525, .636, .337, .636, .838};       // p-z{|}~
  double w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 32 && c < 127) w += em[c - 32];
    else if ((c & 0xC0) != 0x80) w += 0.8;  // the first byte of any other character
  }
  return w * px * (bold ? 1.1 : 1.0);
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
    width[c] = text_length(header[c]);
    for (auto& row : cells) width[c] = std::max(width[c], text_length(row[c]));
  }
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) line += "  ";
      std::string pad(width[c] - text_length(row[c]), ' ');
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

void write_text_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("cannot write {}: {}", path, std::strerror(errno));
  size_t n = std::fwrite(text.data(), 1, text.size(), f);
  int err = n == text.size() ? 0 : errno;
  if (std::fclose(f) != 0 && !err) err = errno;
  if (err || n != text.size()) fail("cannot write {}: {}", path, std::strerror(err ? err : EIO));
}

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

// Ticks at multiples of a 1-2-5 step covering [lo, hi] (about `target` of them).
struct Ticks {
  std::vector<double> values;
  int decimals = 0;
};
Ticks nice_ticks(double lo, double hi, int target) {
  Ticks t;
  double span = hi - lo;
  if (!(span > 0)) span = std::fabs(hi) > 0 ? std::fabs(hi) : 1;
  double raw = span / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  t.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1)
    t.values.push_back(k * step + 0.0);  // + 0.0: no "-0"
  return t;
}

// A power of two as "256", "64K", "16M", "2G"; other values as plain numbers.
std::string x_tick_text(double v) {
  if (v >= 65536 && std::fmod(v, 1024) == 0) {
    const char* units[] = {"K", "M", "G", "T"};
    int u = -1;
    while (v >= 1024 && std::fmod(v, 1024) == 0 && u < 3) {
      v /= 1024;
      ++u;
    }
    return fmt::format("{}{}", v, units[u]);
  }
  if (std::fabs(v) >= 1e7) return fmt::format("{:.3g}", v);
  return fmt::format("{}", v);
}

struct Style {
  const char* color;
  const char* dash;  // stroke-dasharray, "" for solid
  int marker;        // 0 circle, 1 square, 2 triangle, 3 diamond
};

// Tableau's ten colours; past ten, the colours come round again with another dash pattern and
// marker, so 40 lines differ in at least colour or style.
Style style_for(size_t i) {
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  static const char* dashes[] = {"", "7,3", "2,2", "9,3,2,3"};
  size_t round = (i / 10) % 4;
  return {colors[i % 10], dashes[round], static_cast<int>(round)};
}

std::string marker(const Style& st, double x, double y, bool hollow, const std::string& tooltip) {
  std::string fill = hollow ? "#ffffff" : st.color;
  std::string common = fmt::format("fill=\"{}\" stroke=\"{}\" stroke-width=\"1.2\"", fill, st.color);
  std::string shape, tag;
  switch (st.marker) {
    case 1: tag = "rect", shape = fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"6\" height=\"6\" {}", x - 3, y - 3, common); break;
    case 2:
      tag = "polygon";
      shape = fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" {}", x, y - 4, x - 3.6, y + 2.6,
                          x + 3.6, y + 2.6, common);
      break;
    case 3:
      tag = "polygon";
      shape = fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" {}", x, y - 4,
                          x + 4, y, x, y + 4, x - 4, y, common);
      break;
    default: tag = "circle", shape = fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" {}", x, y, common);
  }
  if (tooltip.empty()) return shape + "/>";
  return shape + "><title>" + xml(tooltip) + "</title></" + tag + ">";
}

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
  size_t failed_families = 0;
  std::vector<Family> drawn;
  for (Family& f : families) {
    if (f.points.empty()) {
      ++failed_families;
      continue;
    }
    std::stable_sort(f.points.begin(), f.points.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    std::vector<Point> one_per_x;
    for (const Point& p : f.points) {
      if (!one_per_x.empty() && one_per_x.back().x == p.x) {
        if (p.value > one_per_x.back().value) one_per_x.back() = p;
      } else {
        one_per_x.push_back(p);
      }
    }
    f.points = std::move(one_per_x);
    for (const Point& p : f.points) any_early = any_early || p.early;
    drawn.push_back(std::move(f));
  }

  // Data ranges (x over every row, so each shape has its place; y from 0).
  bool log_x = use_log2_x(report);
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_hi = 0;
  for (const SweepRow& r : report.rows) {
    if (!std::isfinite(r.x)) continue;
    x_lo = std::min(x_lo, r.x);
    x_hi = std::max(x_hi, r.x);
  }
  for (const Family& f : drawn)
    for (const Point& p : f.points) y_hi = std::max(y_hi, p.value);
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1;
  auto tx = [&](double x) { return log_x ? std::log2(x) : x; };
  double d_lo = tx(x_lo), d_hi = tx(x_hi);
  if (d_hi - d_lo <= 0) {  // one x value: centre it
    double half = log_x ? 1 : (std::fabs(d_lo) > 0 ? std::fabs(d_lo) * 0.5 : 1);
    d_lo -= half;
    d_hi += half;
  } else {
    double pad = (d_hi - d_lo) * 0.04;
    d_lo -= pad;
    d_hi += pad;
  }
  // y from 0 to the first tick at or above the data plus a little headroom.
  double y_want = y_hi > 0 ? y_hi * 1.04 : 1;
  Ticks y_ticks = nice_ticks(0, y_want, 6);
  if (y_ticks.values.size() >= 2 && y_ticks.values.back() < y_want)
    y_ticks.values.push_back(y_ticks.values.back() + (y_ticks.values[1] - y_ticks.values[0]));
  double y_top = y_ticks.values.size() >= 2 ? y_ticks.values.back() : y_want;

  // Layout.
  const double left = 78, top = 58, plot_w = 620, plot_h = 400, bottom = 58, line_h = 17;
  const size_t max_label = 90;
  // Words (space-separated, e.g. "GROUP_M=8") that every line's name holds are said once, below
  // the legend, and left out of its entries.
  std::vector<std::vector<std::string>> words(drawn.size());
  std::vector<std::string> common;
  if (drawn.size() >= 2) {
    for (size_t i = 0; i < drawn.size(); ++i) {
      std::istringstream in(drawn[i].name);
      for (std::string w; in >> w;) words[i].push_back(w);
    }
    for (const std::string& w : words[0]) {
      bool everywhere = std::all_of(words.begin(), words.end(), [&](const std::vector<std::string>& ws) {
        return std::find(ws.begin(), ws.end(), w) != ws.end();
      });
      if (everywhere && std::find(common.begin(), common.end(), w) == common.end()) common.push_back(w);
    }
    // Only when every entry keeps a word of its own.
    for (const auto& ws : words)
      if (std::all_of(ws.begin(), ws.end(), [&](const std::string& w) {
            return std::find(common.begin(), common.end(), w) != common.end();
          }))
        common.clear();
  }
  std::vector<std::string> labels;
  double longest = 0;  // estimated width in pixels
  for (size_t i = 0; i < drawn.size(); ++i) {
    const Family& f = drawn[i];
    std::string name;
    if (common.empty()) {
      name = f.name;
    } else {
      for (const std::string& w : words[i])
        if (std::find(common.begin(), common.end(), w) == common.end()) name += (name.empty() ? "" : " ") + w;
    }
    std::string label = shorten(name, max_label) + (f.is_default ? " (default)" : "");
    longest = std::max(longest, text_width(label, 12, f.is_default));
    labels.push_back(label);
  }
  std::vector<std::string> notes;
  if (!common.empty()) {
    std::string all;
    for (const std::string& w : common) all += (all.empty() ? "" : " ") + w;
    notes.push_back("every line: " + shorten(all, max_label));
  }
  if (any_early) notes.push_back("hollow marker: early-stopped (an upper bound)");
  if (failed_families)
    notes.push_back(fmt::format("{} {} failed on every shape (not drawn)", failed_families,
                                failed_families == 1 ? "family" : "families"));
  size_t n = drawn.size();
  size_t per_column = std::max<size_t>(1, static_cast<size_t>(plot_h / line_h) - notes.size());
  per_column = std::max(per_column, (n + 1) / 2);  // at most two columns; past that, taller
  size_t columns = n ? (n + per_column - 1) / per_column : 0;
  double col_w = 38 + longest + 20;
  double legend_x = left + plot_w + 24;
  double notes_w = 0;
  for (const std::string& note : notes) notes_w = std::max(notes_w, text_width(note, 11, false));
  double width = legend_x + std::max({static_cast<double>(columns) * col_w, notes_w, 200.0}) + 10;
  double legend_rows = static_cast<double>(std::min(n, per_column) + notes.size() + (notes.empty() ? 0 : 1));
  double height = std::max(top + plot_h + bottom, top + legend_rows * line_h + 10);

  auto px = [&](double x) { return left + (tx(x) - d_lo) / (d_hi - d_lo) * plot_w; };
  auto py = [&](double v) { return top + plot_h - v / y_top * plot_h; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
      width, height);
  out += fmt::format("<title>{}</title>\n", xml(report.kernel + " \u2014 " + report.device));
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", width, height);
  out += fmt::format("<text x=\"{:.1f}\" y=\"24\" font-size=\"16\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>\n",
                     left + plot_w / 2, xml(report.kernel + " \u2014 " + report.device));
  std::map<std::string, int> shapes, configs;
  for (const SweepRow& r : report.rows) shapes[r.shape], configs[r.config];
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"42\" font-size=\"11\" fill=\"#555555\" text-anchor=\"middle\">{} shape{} \u00d7 {} "
      "config{}, {} measurement{}, {:.1f} s</text>\n",
      left + plot_w / 2, shapes.size(), shapes.size() == 1 ? "" : "s", configs.size(), configs.size() == 1 ? "" : "s",
      report.rows.size(), report.rows.size() == 1 ? "" : "s", report.seconds);

  // Grid, ticks and tick labels.
  out += "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  std::string labels_svg;
  for (double v : y_ticks.values) {
    if (v > y_top + 1e-12) continue;
    double y = py(v);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", left, y, left + plot_w, y);
    labels_svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:.{}f}</text>\n", left - 8, y + 4, v,
                              y_ticks.decimals);
    labels_svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333333\"/>\n",
                              left - 5, y, left, y);
  }
  std::vector<double> x_ticks;
  if (log_x) {
    int e_lo = static_cast<int>(std::ceil(d_lo - 1e-9)), e_hi = static_cast<int>(std::floor(d_hi + 1e-9));
    int step = std::max(1, (e_hi - e_lo + 10) / 10);
    for (int e = e_lo; e <= e_hi; ++e)
      if ((e - e_lo) % step == 0) x_ticks.push_back(std::ldexp(1.0, e));
  } else {
    Ticks t = nice_ticks(d_lo, d_hi, 7);
    for (double v : t.values)
      if (v >= d_lo - 1e-9 && v <= d_hi + 1e-9) x_ticks.push_back(v);
  }
  for (double v : x_ticks) {
    double x = px(v);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", x, top, x, top + plot_h);
    labels_svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, top + plot_h + 18,
                              xml(x_tick_text(v)));
    labels_svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333333\"/>\n", x,
                              top + plot_h, x, top + plot_h + 5);
  }
  out += "</g>\n";
  out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#333333\"/>\n",
                     left, top, plot_w, plot_h);
  out += labels_svg;
  std::string x_title = report.x_label.empty() ? std::string("x") : report.x_label;
  if (log_x) x_title += " (log scale)";
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
                     left + plot_w / 2, top + plot_h + 42, xml(x_title));
  out += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 {0:.1f} "
      "{1:.1f})\">{2}</text>\n",
      22.0, top + plot_h / 2, xml(report.metric));
  if (drawn.empty())
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#999999\">no measurements</text>\n",
                       left + plot_w / 2, top + plot_h / 2);

  // Lines: the default's last, so it stays on top.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return !drawn[i].is_default; });
  for (size_t i : order) {
    const Family& f = drawn[i];
    Style st = style_for(i);
    out += fmt::format("<g><title>{}</title>\n<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} points=\"",
                       xml(f.name), st.color, f.is_default ? "2.8" : "1.6",
                       *st.dash ? fmt::format(" stroke-dasharray=\"{}\"", st.dash) : std::string());
    for (size_t k = 0; k < f.points.size(); ++k)
      out += fmt::format("{}{:.1f},{:.1f}", k ? " " : "", px(f.points[k].x), py(f.points[k].value));
    out += "\"/>\n";
    for (const Point& p : f.points) {
      std::string tip = fmt::format("{}\n{}\n{} {}{}{}", p.row->shape, p.row->config, p.early ? "<= " : "",
                                    sig3(p.value), report.metric,
                                    p.early ? fmt::format(" (early-stopped, >= {} ms)", ms_text(p.row->ms))
                                            : fmt::format(" ({} ms)", ms_text(p.row->ms)));
      out += marker(st, px(p.x), py(p.value), p.early, tip) + "\n";
    }
    out += "</g>\n";
  }

  // Legend beside the plot.
  out += "<g font-size=\"12\">\n";
  for (size_t i = 0; i < n; ++i) {
    Style st = style_for(i);
    double x = legend_x + static_cast<double>(i / per_column) * col_w;
    double y = top + 6 + static_cast<double>(i % per_column) * line_h;
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
                       x, y, x + 30, y, st.color, drawn[i].is_default ? "2.8" : "1.6",
                       *st.dash ? fmt::format(" stroke-dasharray=\"{}\"", st.dash) : std::string());
    out += marker(st, x + 15, y, false, "") + "\n";
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\"{}>{}</text>\n", x + 38, y + 4,
                       drawn[i].is_default ? " font-weight=\"bold\"" : "", xml(labels[i]));
  }
  double note_y = top + 6 + static_cast<double>(std::min(n, per_column)) * line_h + (n ? line_h * 0.5 : 0);
  for (const std::string& note : notes) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#666666\" font-size=\"11\">{}</text>\n", legend_x,
                       note_y + 4, xml(note));
    note_y += line_h;
  }
  out += "</g>\n</svg>\n";
  return out;
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
    if (text_length(shown) > cols) shown = shorten(shown, cols);
    size_t w = text_length(shown);
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
