#include "io/svg_line_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "io/utf8_text.h"

namespace tritium::io {
namespace {

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

}  // namespace

std::string to_svg(const LinePlot& plot) {
  struct Drawn {
    const PlotSeries* series;
    std::vector<const PlotPoint*> points;  // finite, sorted by x
  };
  std::vector<Drawn> drawn;
  for (const PlotSeries& s : plot.series) {
    Drawn d{&s, {}};
    for (const PlotPoint& p : s.points)
      if (std::isfinite(p.x) && std::isfinite(p.y) && (!plot.log2_x || p.x > 0)) d.points.push_back(&p);
    if (d.points.empty()) continue;
    std::stable_sort(d.points.begin(), d.points.end(), [](const PlotPoint* a, const PlotPoint* b) { return a->x < b->x; });
    drawn.push_back(std::move(d));
  }

  // Data ranges.
  const bool log_x = plot.log2_x;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = 0, y_hi = 0;
  for (double x : plot.x_values)
    if (std::isfinite(x) && (!log_x || x > 0)) x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
  for (const Drawn& d : drawn)
    for (const PlotPoint* p : d.points) {
      x_lo = std::min(x_lo, p->x), x_hi = std::max(x_hi, p->x);
      y_lo = std::min(y_lo, p->y), y_hi = std::max(y_hi, p->y);
    }
  if (!std::isfinite(x_lo)) x_lo = log_x ? 1 : 0, x_hi = log_x ? 2 : 1;
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
  // y from min(0, data) to the first tick at or above the data plus a little headroom.
  double y_want = y_hi > 0 ? y_hi * 1.04 : (y_lo < 0 ? 0 : 1);
  double y_base = y_lo < 0 ? y_lo * 1.04 : 0;
  Ticks y_ticks = nice_ticks(y_base, y_want, 6);
  if (y_ticks.values.size() >= 2 && y_ticks.values.back() < y_want)
    y_ticks.values.push_back(y_ticks.values.back() + (y_ticks.values[1] - y_ticks.values[0]));
  if (y_ticks.values.size() >= 2 && y_ticks.values.front() > y_base)
    y_ticks.values.insert(y_ticks.values.begin(), y_ticks.values.front() - (y_ticks.values[1] - y_ticks.values[0]));
  double y_top = y_ticks.values.size() >= 2 ? y_ticks.values.back() : y_want;
  double y_bottom = y_ticks.values.size() >= 2 ? std::min(y_ticks.values.front(), 0.0) : y_base;
  if (!(y_top > y_bottom)) y_top = y_bottom + 1;

  // Layout.
  const double left = 78, top = 58, plot_w = 620, plot_h = 400, bottom = 58, line_h = 17;
  const size_t max_label = 90;
  // Words (space-separated, e.g. "GROUP_M=8") that every line's name holds are said once, below
  // the legend, and left out of its entries.
  std::vector<std::vector<std::string>> words(drawn.size());
  std::vector<std::string> common;
  if (drawn.size() >= 2) {
    for (size_t i = 0; i < drawn.size(); ++i) {
      std::istringstream in(drawn[i].series->name);
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
    const PlotSeries& f = *drawn[i].series;
    std::string name;
    if (common.empty()) {
      name = f.name;
    } else {
      for (const std::string& w : words[i])
        if (std::find(common.begin(), common.end(), w) == common.end()) name += (name.empty() ? "" : " ") + w;
    }
    std::string label = io::utf8_shorten(name, max_label) + (f.emphasised ? plot.emphasis_suffix : "");
    longest = std::max(longest, text_width(label, 12, f.emphasised));
    labels.push_back(label);
  }
  std::vector<std::string> notes;
  if (!common.empty()) {
    std::string all;
    for (const std::string& w : common) all += (all.empty() ? "" : " ") + w;
    notes.push_back("every line: " + io::utf8_shorten(all, max_label));
  }
  for (const std::string& note : plot.notes) notes.push_back(note);
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
  auto py = [&](double v) { return top + plot_h - (v - y_bottom) / (y_top - y_bottom) * plot_h; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
      width, height);
  out += fmt::format("<title>{}</title>\n", xml(plot.title));
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", width, height);
  out += fmt::format("<text x=\"{:.1f}\" y=\"24\" font-size=\"16\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>\n",
                     left + plot_w / 2, xml(plot.title));
  if (!plot.subtitle.empty())
    out += fmt::format("<text x=\"{:.1f}\" y=\"42\" font-size=\"11\" fill=\"#555555\" text-anchor=\"middle\">{}</text>\n",
                       left + plot_w / 2, xml(plot.subtitle));

  // Grid, ticks and tick labels.
  out += "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  std::string labels_svg;
  for (double v : y_ticks.values) {
    if (v > y_top + 1e-12 || v < y_bottom - 1e-12) continue;
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
  std::string x_title = plot.x_label.empty() ? std::string("x") : plot.x_label;
  if (log_x) x_title += " (log scale)";
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
                     left + plot_w / 2, top + plot_h + 42, xml(x_title));
  out += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 {0:.1f} "
      "{1:.1f})\">{2}</text>\n",
      22.0, top + plot_h / 2, xml(plot.y_label));
  if (drawn.empty())
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#999999\">no measurements</text>\n",
                       left + plot_w / 2, top + plot_h / 2);

  // Lines: the emphasised ones last, so they stay on top.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return !drawn[i].series->emphasised; });
  for (size_t i : order) {
    const PlotSeries& f = *drawn[i].series;
    Style st = style_for(i);
    out += fmt::format("<g><title>{}</title>\n<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} points=\"",
                       xml(f.name), st.color, f.emphasised ? "2.8" : "1.6",
                       *st.dash ? fmt::format(" stroke-dasharray=\"{}\"", st.dash) : std::string());
    const auto& pts = drawn[i].points;
    for (size_t k = 0; k < pts.size(); ++k) out += fmt::format("{}{:.1f},{:.1f}", k ? " " : "", px(pts[k]->x), py(pts[k]->y));
    out += "\"/>\n";
    if (pts.size() <= static_cast<size_t>(std::max(plot.max_markers, 0)))
      for (const PlotPoint* p : pts) out += marker(st, px(p->x), py(p->y), p->hollow, p->tooltip) + "\n";
    out += "</g>\n";
  }

  // Legend beside the plot.
  out += "<g font-size=\"12\">\n";
  for (size_t i = 0; i < n; ++i) {
    Style st = style_for(i);
    double x = legend_x + static_cast<double>(i / per_column) * col_w;
    double y = top + 6 + static_cast<double>(i % per_column) * line_h;
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
                       x, y, x + 30, y, st.color, drawn[i].series->emphasised ? "2.8" : "1.6",
                       *st.dash ? fmt::format(" stroke-dasharray=\"{}\"", st.dash) : std::string());
    out += marker(st, x + 15, y, false, "") + "\n";
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\"{}>{}</text>\n", x + 38, y + 4,
                       drawn[i].series->emphasised ? " font-weight=\"bold\"" : "", xml(labels[i]));
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

}  // namespace tritium::io
