#include "profiler/scalar_log.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "common/error.h"
#include "io/json.h"
#include "io/svg_line_plot.h"
#include "io/text_file.h"

namespace tritium::profiler {
namespace {

std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

// The value of an attribute in the first tag of an SVG document (width="812" -> 812).
double attribute(const std::string& svg, const std::string& name) {
  size_t at = svg.find(" " + name + "=\"");
  if (at == std::string::npos) return 0;
  return std::strtod(svg.c_str() + at + name.size() + 3, nullptr);
}

}  // namespace

ScalarLog::ScalarLog(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) fail("scalar log: cannot write {}: {}", path, std::strerror(errno));
}

ScalarLog::~ScalarLog() {
  if (file_) std::fclose(file_);
}

void ScalarLog::log(int64_t step, std::vector<std::pair<std::string, double>> values) {
  std::string line = fmt::format("{{\"step\": {}", step);
  for (const auto& [name, v] : values) {
    if (name.empty() || name == "step")
      fail("scalar log {}: a scalar may not be named '{}' (the step is given apart)", path_, name);
    line += fmt::format(", {}: {}", io::json_quote(name), number(v));
  }
  line += "}\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
    fail("scalar log: cannot write {}: {}", path_, std::strerror(errno));
  records_.push_back({step, std::move(values)});
}

std::vector<ScalarRecord> read_scalar_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("scalar log: cannot read {}: {}", path, std::strerror(errno));
  std::vector<ScalarRecord> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string what = fmt::format("{} line {}", path, n);
    io::Json j = io::parse_json(line, what);
    ScalarRecord r;
    r.step = j.at("step", what).as_int64(what + " \"step\"");
    for (const auto& [name, v] : j.as_object(what)) {
      if (name == "step") continue;
      r.values.emplace_back(name, v.is_null() ? std::nan("") : v.as_double(what + " \"" + name + "\""));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string scalar_plots_svg(const std::vector<ScalarRecord>& records, const std::string& title) {
  std::vector<std::string> names;
  std::map<std::string, size_t> index;
  std::vector<io::LinePlot> plots;
  for (const ScalarRecord& r : records)
    for (const auto& [name, v] : r.values) {
      auto [it, inserted] = index.emplace(name, plots.size());
      if (inserted) {
        io::LinePlot p;
        p.title = title.empty() ? name : title + ": " + name;
        p.x_label = "step";
        p.y_label = name;
        p.series.push_back({name, false, {}});
        plots.push_back(std::move(p));
      }
      plots[it->second].series[0].points.push_back({static_cast<double>(r.step), v, false,
                                                    fmt::format("step {}: {} = {}", r.step, name, number(v))});
    }
  std::vector<std::string> parts;
  double width = 0, height = 0;
  for (io::LinePlot& p : plots) {
    p.subtitle = fmt::format("{} point{}", p.series[0].points.size(), p.series[0].points.size() == 1 ? "" : "s");
    std::string svg = io::to_svg(p);
    // Nested at its place in the stack (a nested <svg> with x/y is plain SVG 1.1).
    parts.push_back(fmt::format("<svg x=\"0\" y=\"{:.0f}\"", height) + svg.substr(4));
    width = std::max(width, attribute(svg, "width"));
    height += attribute(svg, "height");
  }
  if (parts.empty()) {
    width = 400, height = 60;
    parts.push_back("<text x=\"200\" y=\"35\" text-anchor=\"middle\" fill=\"#999999\">no scalars logged</text>\n");
  }
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0:.0f}\" height=\"{1:.0f}\" fill=\"#ffffff\"/>\n",
      width, height);
  for (const std::string& p : parts) out += p;
  return out + "</svg>\n";
}

void write_scalar_plots(const std::vector<ScalarRecord>& records, const std::string& title, const std::string& path) {
  io::write_text_file(path, scalar_plots_svg(records, title));
}

}  // namespace tritium::profiler
