// The sweep report: summary table, CSV, JSON, SVG plot, file errors and the progress bar.
#include "test_support.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "autotune/report.h"
#include "common/error.h"

namespace tt = tritium::test;

namespace fs = std::filesystem;
using namespace tritium::sweep;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The config names; the third holds a quote and a comma (CSV quoting, JSON escaping).
const std::vector<std::string> kConfigs = {"BLOCK=64 num_warps=4", "BLOCK=128 num_warps=4",
                                           "name=\"fast, wide\" BLOCK=256", "BLOCK=512 num_warps=8"};
const std::vector<int> kSizes = {256, 1024, 4096};
// ms[shape][config]; config 0 is the default. (1024, config 1) is early-stopped and (4096,
// config 3) failed.
const double kMs[3][4] = {{1.0, 0.5, 0.8, 2.0}, {4.0, 9.0, 2.5, 3.0}, {60.0, 40.0, 70.0, kNaN}};

std::string status_of(size_t s, size_t c) {
  if (s == 1 && c == 1) return "early-stopped";
  if (s == 2 && c == 3) return "failed: out of shared memory";
  return "ok";
}

SweepReport synthetic() {
  SweepReport r;
  r.kernel = "matmul f32";
  r.device = "cpu (2 threads)";
  r.metric = "TFLOP/s";
  r.x_label = "N";
  r.seconds = 12.5;
  for (size_t s = 0; s < kSizes.size(); ++s) {
    double n = kSizes[s];
    for (size_t c = 0; c < kConfigs.size(); ++c) {
      SweepRow row;
      row.shape = fmt::format("M={0} N={0} K={0}", kSizes[s]);
      row.x = n;
      row.config = kConfigs[c];
      row.family = kConfigs[c];
      row.ms = kMs[s][c];
      row.status = status_of(s, c);
      row.work = 2 * n * n * n;
      row.is_default = c == 0;
      r.rows.push_back(row);
    }
  }
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// RFC 4180 records (quoted fields may hold commas, doubled quotes and line breaks).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false, in_record = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    in_record = true;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(field), field.clear();
    } else if (c == '\n') {
      fields.push_back(field), field.clear();
      records.push_back(fields), fields.clear();
      in_record = false;
    } else {
      field += c;
    }
  }
  if (in_record) fields.push_back(field), records.push_back(fields);
  return records;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct TempDir {
  fs::path dir;
  TempDir() {
    char tmpl[] = "/tmp/tritium-report-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_autotune_report)

BOOST_AUTO_TEST_CASE(metric_values) {
  SweepReport r = synthetic();
  // 2 * 256^3 FLOPs in 0.5 ms.
  BOOST_TEST(metric_value(r, r.rows[1]) == 2.0 * 256 * 256 * 256 / 0.5e-3 / 1e12, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::isnan(metric_value(r, r.rows[11])));  // the failed row
  r.metric = "GB/s";
  SweepRow bytes;
  bytes.ms = 2.0;
  bytes.work = 4e9;  // 4 GB in 2 ms: 2000 GB/s
  bytes.status = "ok";
  BOOST_TEST(metric_value(r, bytes) == 2000.0, boost::test_tools::tolerance(1e-12));
  bytes.status = "ok";
  bytes.ms = kNaN;
  BOOST_TEST(std::isnan(metric_value(r, bytes)));
  r.metric = "furlongs";
  BOOST_CHECK_THROW(metric_value(r, r.rows[0]), tritium::Error);
  BOOST_TEST((row_state(r.rows[5]) == RowState::early_stopped));
  BOOST_TEST((row_state(r.rows[11]) == RowState::failed));
}

BOOST_AUTO_TEST_CASE(table_picks_the_fastest_config_and_speedups) {
  SweepReport r = synthetic();
  std::string table = format_table(r);
  BOOST_TEST_MESSAGE("\n" << table);
  std::vector<std::string> lines = lines_of(table);
  BOOST_TEST(table.find("matmul f32") != std::string::npos);
  BOOST_TEST(table.find("TFLOP/s") != std::string::npos);
  for (size_t s = 0; s < kSizes.size(); ++s) {
    // Expected values straight from the data: best over ok rows, worst over ok and early-stopped.
    size_t best = 0;
    double best_ms = INFINITY, worst_ms = 0;
    bool early = false;
    for (size_t c = 0; c < kConfigs.size(); ++c) {
      std::string st = status_of(s, c);
      if (st == "ok" && kMs[s][c] < best_ms) best_ms = kMs[s][c], best = c;
      if (st == "ok" || st == "early-stopped") worst_ms = std::max(worst_ms, kMs[s][c]);
      early = early || st == "early-stopped";
    }
    std::string shape = fmt::format("M={0} N={0} K={0}", kSizes[s]);
    auto it = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(shape, 0) == 0; });
    BOOST_REQUIRE(it != lines.end());
    const std::string& line = *it;
    BOOST_TEST_INFO("line: " << line);
    BOOST_TEST(line.find(kConfigs[best]) != std::string::npos);
    for (size_t c = 0; c < kConfigs.size(); ++c)
      if (c != best) BOOST_TEST(line.find(kConfigs[c]) == std::string::npos);
    std::string vs_worst = fmt::format("{}{:.2f}x", early ? ">=" : "", worst_ms / best_ms);
    std::string vs_default = fmt::format("{:.2f}x", kMs[s][0] / best_ms);
    BOOST_TEST(line.find(" " + vs_worst) != std::string::npos, vs_worst);
    BOOST_TEST(line.find(" " + vs_default) != std::string::npos, vs_default);
    // The best time and throughput.
    BOOST_TEST(line.find(fmt::format(" {:.4g} ", best_ms)) != std::string::npos);
  }
  // Spot checks of the expected numbers themselves.
  BOOST_TEST(table.find("4.00x") != std::string::npos);    // 256: 2.0 / 0.5
  BOOST_TEST(table.find(">=3.60x") != std::string::npos);  // 1024: 9.0 (early-stopped) / 2.5
  BOOST_TEST(table.find("1.75x") != std::string::npos);    // 4096: 70 / 40
  BOOST_TEST(table.find("lower bound") != std::string::npos);

  auto summary = summarize(r);
  BOOST_REQUIRE(summary.size() == 3u);
  BOOST_TEST(summary[1].ok == 3);
  BOOST_TEST(summary[1].early_stopped == 1);
  BOOST_TEST(summary[2].failed == 1);
  BOOST_TEST(summary[2].best == 9);  // shape 2, config 1
}

BOOST_AUTO_TEST_CASE(table_without_a_usable_default) {
  SweepReport r = synthetic();
  for (auto& row : r.rows)
    if (row.is_default && row.x == 1024) row.ms = kNaN, row.status = "failed: compile error";
  for (auto& row : r.rows)
    if (row.x == 4096) row.is_default = false;  // no default at all
  for (auto& row : r.rows)
    if (row.x == 256 && row.config == kConfigs[0]) row.status = "early-stopped";
  auto summary = summarize(r);
  BOOST_TEST(std::isnan(summary[1].speedup_vs_default));
  BOOST_TEST(std::isnan(summary[2].speedup_vs_default));
  BOOST_TEST(summary[0].default_is_lower_bound);
  std::string table = format_table(r);
  BOOST_TEST_MESSAGE("\n" << table);
  auto lines = lines_of(table);
  for (const std::string& line : lines) {
    if (line.rfind("M=1024", 0) == 0 || line.rfind("M=4096", 0) == 0) {
      // "vs default" is "-", followed by the three counts.
      std::vector<std::string> words;
      std::istringstream in(line);
      for (std::string w; in >> w;) words.push_back(w);
      BOOST_REQUIRE(words.size() >= 5u);
      BOOST_TEST(words[words.size() - 4] == "-", line);
    }
    if (line.rfind("M=256", 0) == 0) BOOST_TEST(line.find(">=2.00x") != std::string::npos, line);
  }
  // A shape where nothing ran.
  SweepReport none;
  none.kernel = "k";
  none.metric = "GB/s";
  SweepRow bad;
  bad.shape = "n=1";
  bad.x = 1;
  bad.config = "c";
  bad.ms = kNaN;
  bad.status = "failed: boom";
  none.rows = {bad};
  BOOST_TEST(format_table(none).find("(no config ran)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(csv_parses_back) {
  SweepReport r = synthetic();
  TempDir tmp;
  fs::path path = tmp.dir / "sweep.csv";
  write_csv(r, path.string());
  std::string text = read_file(path);
  BOOST_TEST(count(text, "\n") == r.rows.size() + 1);
  auto records = parse_csv(text);
  BOOST_REQUIRE(records.size() == r.rows.size() + 1);
  std::vector<std::string> header = {"shape", "x",          "config", "family",    "status",
                                     "ms",    "work",       "throughput", "unit", "is_default"};
  BOOST_TEST(records[0] == header, boost::test_tools::per_element());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& rec = records[i + 1];
    BOOST_REQUIRE(rec.size() == header.size());
    BOOST_TEST(rec[0] == r.rows[i].shape);
    BOOST_TEST(std::stod(rec[1]) == r.rows[i].x);
    BOOST_TEST(rec[2] == r.rows[i].config);  // the quoted one included
    BOOST_TEST(rec[4] == r.rows[i].status);
    if (std::isnan(r.rows[i].ms)) BOOST_TEST(rec[5].empty());
    else BOOST_TEST(std::stod(rec[5]) == r.rows[i].ms);
    BOOST_TEST(rec[8] == "TFLOP/s");
    BOOST_TEST(rec[9] == (r.rows[i].is_default ? "1" : "0"));
  }
  // The config with a comma and quotes is quoted, its quotes doubled.
  BOOST_TEST(text.find("\"name=\"\"fast, wide\"\" BLOCK=256\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(json_nulls_and_escapes) {
  SweepReport r = synthetic();
  r.kernel = "matmul \\ f32\n";
  TempDir tmp;
  fs::path path = tmp.dir / "sweep.json";
  write_json(r, path.string());
  std::string text = read_file(path);
  BOOST_TEST(text.front() == '{');
  BOOST_TEST(text.find("\"kernel\": \"matmul \\\\ f32\\n\"") != std::string::npos);
  BOOST_TEST(text.find("\"metric\": \"TFLOP/s\"") != std::string::npos);
  BOOST_TEST(text.find("\"seconds\": 12.5") != std::string::npos);
  BOOST_TEST(count(text, "\"shape\":") == r.rows.size());
  // The failed row: ms and throughput null.
  BOOST_TEST(count(text, "\"ms\": null") == 1u);
  BOOST_TEST(count(text, "\"throughput\": null") == 1u);
  BOOST_TEST(text.find("\"status\": \"failed: out of shared memory\", \"ms\": null") != std::string::npos);
  // The quote in a config is escaped; no raw NaN anywhere.
  BOOST_TEST(text.find("\"config\": \"name=\\\"fast, wide\\\" BLOCK=256\"") != std::string::npos);
  BOOST_TEST(text.find("nan") == std::string::npos);
  BOOST_TEST(text.find("\"is_default\": true") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(log_scale_decision) {
  SweepReport r = synthetic();  // 256 .. 4096: a factor 16
  BOOST_TEST(use_log2_x(r));
  auto with_x = [](std::vector<double> xs) {
    SweepReport r;
    r.metric = "GB/s";
    for (double x : xs) {
      SweepRow row;
      row.x = x;
      r.rows.push_back(row);
    }
    return r;
  };
  BOOST_TEST(!use_log2_x(with_x({1000, 2000, 4000})));  // a factor 4
  BOOST_TEST(!use_log2_x(with_x({1, 8})));              // exactly 8: linear
  BOOST_TEST(use_log2_x(with_x({1, 9})));
  BOOST_TEST(!use_log2_x(with_x({0, 100})));  // zero cannot go on a log axis
  BOOST_TEST(!use_log2_x(with_x({5})));
  BOOST_TEST(!use_log2_x(with_x({})));
  BOOST_TEST(to_svg(r).find("N (log scale)") != std::string::npos);
  BOOST_TEST(to_svg(with_x({1000, 2000, 4000})).find("(log scale)") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(svg_plot) {
  SweepReport r = synthetic();
  // A fifth family that failed everywhere gets no line.
  for (int n : kSizes) {
    SweepRow row;
    row.shape = fmt::format("M={0} N={0} K={0}", n);
    row.x = n;
    row.config = row.family = "BLOCK=1024 num_warps=16";
    row.ms = kNaN;
    row.status = "failed: too many registers";
    r.rows.push_back(row);
  }
  TempDir tmp;
  fs::path path = tmp.dir / "sweep.svg";
  write_svg(r, path.string());
  std::string svg = read_file(path);
  BOOST_TEST(svg.rfind("<svg", 0) == 0);
  BOOST_TEST(svg.find("xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  BOOST_TEST(svg.find("</svg>") != std::string::npos);
  BOOST_TEST(count(svg, "<polyline") == kConfigs.size());
  BOOST_TEST(svg.find("matmul f32") != std::string::npos);
  BOOST_TEST(svg.find("cpu (2 threads)") != std::string::npos);
  BOOST_TEST(svg.find(">TFLOP/s</text>") != std::string::npos);
  // Legend entries (XML-escaped), the default marked.
  BOOST_TEST(svg.find(">BLOCK=64 num_warps=4 (default)</text>") != std::string::npos);
  BOOST_TEST(svg.find(">BLOCK=128 num_warps=4</text>") != std::string::npos);
  BOOST_TEST(svg.find(">name=&quot;fast, wide&quot; BLOCK=256</text>") != std::string::npos);
  BOOST_TEST(svg.find(">BLOCK=512 num_warps=8</text>") != std::string::npos);
  BOOST_TEST(svg.find(">BLOCK=1024 num_warps=16") == std::string::npos);
  BOOST_TEST(svg.find("1 family failed on every shape") != std::string::npos);
  BOOST_TEST(svg.find("early-stopped") != std::string::npos);
  // No external resources, no scripts, no raw quote inside text.
  BOOST_TEST(svg.find("<script") == std::string::npos);
  BOOST_TEST(svg.find("href") == std::string::npos);
  BOOST_TEST(svg.find("@import") == std::string::npos);
  // The failed point of config 3 is skipped: its line has two points.
  size_t p = svg.find("<polyline", svg.find("<title>BLOCK=512 num_warps=8</title>"));
  BOOST_REQUIRE(p != std::string::npos);
  size_t q = svg.find("points=\"", p) + 8;
  std::string points = svg.substr(q, svg.find('"', q) - q);
  BOOST_TEST(count(points, ",") == 2u, points);

  // Many families: each gets its line and legend entry.
  SweepReport many;
  many.kernel = "vector add";
  many.device = "cpu";
  many.metric = "GB/s";
  many.x_label = "size";
  for (int c = 0; c < 48; ++c)
    for (int e = 12; e <= 24; e += 2) {
      SweepRow row;
      row.x = std::ldexp(1.0, e);
      row.shape = fmt::format("n={}", row.x);
      row.config = row.family = fmt::format("BLOCK={} num_warps={}", 64 << (c % 6), 1 << (c / 6 % 4));
      row.config += fmt::format(" v{}", c);
      row.family = row.config;
      row.ms = 1e-3 * row.x / (c + 10);
      row.status = "ok";
      row.work = 12 * row.x;
      many.rows.push_back(row);
    }
  std::string big = to_svg(many);
  BOOST_TEST(count(big, "<polyline") == 48u);
  BOOST_TEST(big.find(" v47</text>") != std::string::npos);
  BOOST_TEST(big.find("stroke-dasharray") != std::string::npos);  // past ten colours, dashes
}

BOOST_AUTO_TEST_CASE(unwritable_path_throws) {
  SweepReport r = synthetic();
  const std::string path = "/proc/nonexistent/x.svg";
  for (auto write : {&write_svg, &write_csv, &write_json}) {
    try {
      write(r, path);
      BOOST_FAIL("no exception");
    } catch (const tritium::Error& e) {
      std::string what = e.what();
      BOOST_TEST(what.find(path) != std::string::npos, what);
      BOOST_TEST(what.find("No such file or directory") != std::string::npos, what);
    }
  }
}

BOOST_AUTO_TEST_CASE(progress_bar_in_a_log) {
  std::string out = tt::capture_fd(2, [] {
    ProgressBar bar(100, "matmul");
    for (int i = 0; i < 100; ++i) bar.tick(fmt::format("config {}", i));
    bar.finish();
  });
  BOOST_TEST_MESSAGE("\n" << out);
  auto lines = lines_of(out);
  BOOST_TEST(lines.size() <= 11u);
  BOOST_TEST(lines.size() >= 10u);
  BOOST_TEST(out.find('\r') == std::string::npos);
  BOOST_TEST(lines.front().rfind("[##..................] 10/100 matmul config 9", 0) == 0, lines.front());
  BOOST_TEST(lines.back().rfind("[####################] 100/100 matmul done in", 0) == 0, lines.back());

  // From four threads at once, finished by the destructor.
  std::string threaded = tt::capture_fd(2, [] {
    ProgressBar bar(1000, "sweep");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 250; ++i) bar.tick();
      });
    for (auto& t : threads) t.join();
    BOOST_TEST(bar.done() == 1000);
  });
  lines = lines_of(threaded);
  BOOST_TEST(lines.size() <= 11u);
  BOOST_TEST(lines.back().find("1000/1000 sweep done in") != std::string::npos, lines.back());

  // Fewer ticks than tenths: a line each, then the final one.
  std::string small = tt::capture_fd(2, [] {
    ProgressBar bar(3, "");
    for (int i = 0; i < 3; ++i) bar.tick();
  });
  BOOST_TEST(lines_of(small).size() == 4u, small);
}

BOOST_AUTO_TEST_SUITE_END()
