// The training scalar log (profiler/scalar_log.h): JSON lines that parse back with the values
// written (null for non-finite ones), the reader's errors, and the stacked SVG of the curves checked
// for well-formed XML (every tag closed in order) with one plot per scalar.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/json.h"
#include "profiler/scalar_log.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace prof = tritium::profiler;
using namespace tritium;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("tritium_scalar_log_{}_{}", ::getpid(), name)).string();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Well-formed XML as far as an SVG needs: tags balanced and closed in order, attributes quoted,
// no stray '<' or '&' in text. Returns the open/close mismatch found, "" when well-formed; counts
// the elements named `count_tag`.
std::string xml_problem(const std::string& s, const std::string& count_tag, int& count) {
  std::vector<std::string> stack;
  count = 0;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '&') {
      size_t semi = s.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return "bare & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      ++i;
      continue;
    }
    size_t end = i + 1;
    bool quoted = false;
    for (; end < s.size(); ++end) {
      if (s[end] == '"') quoted = !quoted;
      else if (s[end] == '<' && !quoted) return "'<' inside a tag at " + std::to_string(end);
      else if (s[end] == '>' && !quoted) break;
    }
    if (end >= s.size()) return "unterminated tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "</" + name + "> closes " + (stack.empty() ? "nothing" : stack.back());
      stack.pop_back();
    } else {
      std::string name = tag.substr(0, tag.find_first_of(" \n/"));
      if (name == count_tag) ++count;
      if (tag.back() != '/') stack.push_back(name);
    }
    i = end + 1;
  }
  return stack.empty() ? "" : "<" + stack.back() + "> never closed";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_scalar_log)

BOOST_AUTO_TEST_CASE(json_lines_parse_back) {
  const std::string path = temp_path("log.jsonl");
  {
    prof::ScalarLog log(path);
    log.log(0, {{"loss", 2.5}, {"lr", 1e-3}, {"tokens_per_s", 51234.5}, {"memory", 8123456}});
    log.log(10, {{"loss", 1.25}, {"lr", 5e-4}, {"tokens_per_s", std::nan("")}, {"memory", 8123457}});
    log.log(20, {{"loss", 0.3333333333333333}, {"lr", 2.5e-4}});
    BOOST_TEST(log.records().size() == 3u);
  }
  // Each line is one JSON object, read with the project's strict reader.
  std::istringstream lines(read_file(path));
  std::vector<io::Json> parsed;
  for (std::string line; std::getline(lines, line);) parsed.push_back(io::parse_json(line, "log line"));
  BOOST_REQUIRE(parsed.size() == 3u);
  BOOST_TEST(parsed[0].at("step", "").as_int64("step") == 0);
  BOOST_TEST(parsed[0].at("loss", "").as_double("loss") == 2.5);
  BOOST_TEST(parsed[0].at("lr", "").as_double("lr") == 1e-3);
  BOOST_TEST(parsed[0].at("memory", "").as_int64("memory") == 8123456);
  BOOST_TEST(parsed[1].at("tokens_per_s", "").is_null());  // NaN: JSON has none
  BOOST_TEST(parsed[2].at("loss", "").as_double("loss") == 0.3333333333333333);  // round-trips exactly
  BOOST_TEST(parsed[2].find("memory") == nullptr);

  auto back = prof::read_scalar_log(path);
  BOOST_REQUIRE(back.size() == 3u);
  BOOST_TEST(back[1].step == 10);
  BOOST_TEST(back[1].values.size() == 4u);
  BOOST_TEST(std::isnan(back[1].values[2].second));
  BOOST_TEST(back[2].values[1].first == "lr");
  std::filesystem::remove(path);
}

BOOST_AUTO_TEST_CASE(svg_is_well_formed_with_a_plot_per_scalar) {
  std::vector<prof::ScalarRecord> records;
  for (int s = 0; s < 37; ++s)
    records.push_back({s * 5, {{"loss", 2.0 / (1 + s) + 0.01 * (s % 3)}, {"lr <&> \"x\"", 1e-3 * (37 - s) / 37}}});
  records[4].values[0].second = std::nan("");  // skipped, not drawn as NaN
  std::string svg = prof::scalar_plots_svg(records, "run & test");
  int nested = 0, polylines = 0;
  BOOST_TEST(xml_problem(svg, "svg", nested) == "");
  BOOST_TEST(nested == 3);  // the outer one and a plot per scalar
  xml_problem(svg, "polyline", polylines);
  BOOST_TEST(polylines == 2);
  BOOST_TEST(svg.find("NaN") == std::string::npos);
  BOOST_TEST(svg.find("nan") == std::string::npos);
  BOOST_TEST(svg.find("run &amp; test: loss") != std::string::npos);
  // Written to a file, and an empty log still draws a valid picture.
  const std::string path = temp_path("plot.svg");
  prof::write_scalar_plots(records, "run", path);
  BOOST_TEST(read_file(path) == prof::scalar_plots_svg(records, "run"));
  std::filesystem::remove(path);
  int n = 0;
  BOOST_TEST(xml_problem(prof::scalar_plots_svg({}, "empty"), "svg", n) == "");
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::check_throws([] { prof::ScalarLog log("/nonexistent-dir/log.jsonl"); }, {"scalar log", "/nonexistent-dir/log.jsonl"});
  const std::string path = temp_path("bad.jsonl");
  {
    prof::ScalarLog log(path);
    tt::check_throws([&] { log.log(1, {{"step", 1.0}}); }, {"may not be named 'step'"});
    tt::check_throws([&] { log.log(1, {{"", 1.0}}); }, {"may not be named ''"});
  }
  write_file(path, "{\"step\": 1, \"loss\": 2}\n\n{\"loss\": 3}\n");
  tt::check_throws([&] { prof::read_scalar_log(path); }, {"line 3", "step"});
  write_file(path, "{\"step\": 1, \"loss\": \"high\"}\n");
  tt::check_throws([&] { prof::read_scalar_log(path); }, {"line 1", "loss"});
  write_file(path, "{\"step\": 1.5}\n");
  tt::check_throws([&] { prof::read_scalar_log(path); }, {"line 1", "step"});
  std::filesystem::remove(path);
  tt::check_throws([&] { prof::read_scalar_log(path); }, {"cannot read", path});
}

BOOST_AUTO_TEST_SUITE_END()
