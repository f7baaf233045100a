// A self-contained SVG 1.1 line plot (no scripts, no external fonts): one polyline with markers
// and a legend entry per series, grid and tick labels, an x axis that may be log2. Drawn by
// tritium-tune's sweep reports (autotune/report.h) and the training logs' scalar curves
// (profiler/scalar_log.h).
#pragma once
#include <string>
#include <vector>

namespace tritium::io {

struct PlotPoint {
  double x = 0, y = 0;
  bool hollow = false;   // drawn as a hollow marker (e.g. an upper bound)
  std::string tooltip;   // the marker's <title>; empty: none
};

struct PlotSeries {
  std::string name;
  bool emphasised = false;  // drawn thicker, on top, and named with emphasis_suffix in the legend
  std::vector<PlotPoint> points;  // drawn in order of x; non-finite points are skipped
};

struct LinePlot {
  std::string title, subtitle;  // above the plot (the subtitle smaller and grey; may be empty)
  std::string x_label, y_label;
  bool log2_x = false;             // x axis in log2 (every x must then be > 0)
  std::vector<double> x_values;    // x values the axis must cover besides the points' (may be empty)
  std::vector<PlotSeries> series;  // series without points are not drawn
  std::vector<std::string> notes;  // grey lines under the legend
  std::string emphasis_suffix = " (default)";
  int max_markers = 400;           // a longer series draws its line without markers
};

// The plot; y runs from min(0, lowest y) to a rounded tick above the highest. Words that every
// series' name holds (space-separated, e.g. "GROUP_M=8") are said once under the legend instead
// of in each entry. Series take colours, dash patterns and marker shapes in turn, so 40 stay
// distinguishable; the legend stands right of the plot, in two columns when long.
std::string to_svg(const LinePlot& plot);

}  // namespace tritium::io
