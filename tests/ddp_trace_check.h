// Checks a Chrome trace (profiler/chrome_trace.h) of DistributedDataParallel training steps, each
// inside a record_function("ProfilerStep#K") range (issue 32: "the trace shows all-reduce
// overlapping backward"). Used by tritium-dist-worker --mode profile on real processes and by
// test_profiler_collectives on made-up traces (so that every rule is seen to fail).
//
// Per step, for a model of `buckets` buckets:
// - one "ddp:bucket" range per bucket index 0..buckets-1;
// - one all-reduce execution span (cat "collective") per bucket index, whose issue (the host event
//   of the same id) lies inside that bucket's range;
// - overlap: at least one of them begins before the step's backward ends, in at least
//   `min_overlapped_steps` steps (-1: every step). Backward ends with the last backward node range
//   ("...Backward") or, on a GPU, the last kernel launched inside one (the host runs ahead of the
//   GPU, so there an NCCL span is compared with backward's kernels).
// Steps are assigned by the host time of the issue. Returns "" or the first rule broken.
#pragma once
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "io/json.h"

namespace tritium::test {

struct DdpTraceReport {
  std::string error;  // "" when every rule holds
  int steps = 0, overlapped_steps = 0;
  int collectives = 0;  // all-reduce execution spans of DDP's buckets
};

inline DdpTraceReport check_ddp_trace(const io::Json& trace, int buckets, int expected_steps,
                                      int min_overlapped_steps = -1) {
  if (min_overlapped_steps < 0) min_overlapped_steps = expected_steps;
  DdpTraceReport report;
  auto failed = [&](std::string why) {
    report.error = std::move(why);
    return report;
  };
  struct Span {
    double ts, end;
    int64_t id = -1, parent = -1;
    int bucket = -1;
    std::string name;
  };
  auto arg_int = [](const io::Json& e, const char* key) -> int64_t {
    const io::Json* args = e.find("args");
    const io::Json* v = args ? args->find(key) : nullptr;
    return v ? v->as_int64(key) : -1;
  };
  std::vector<Span> steps, bucket_ranges, backward, executions, gpu_kernels;
  std::map<int64_t, double> launched_at;  // kernel launches' host times, by id
  std::map<int64_t, Span> issues;  // collective host events by id
  for (const io::Json& e : trace.at("traceEvents", "trace").as_array("traceEvents")) {
    if (e.at("ph", "event").as_string("ph") != "X") continue;
    const std::string& cat = e.at("cat", "event").as_string("cat");
    Span s;
    s.name = e.at("name", "event").as_string("name");
    s.ts = e.at("ts", "event").as_double("ts");
    s.end = s.ts + e.at("dur", "event").as_double("dur");
    s.id = arg_int(e, "id");
    s.parent = arg_int(e, "parent");
    s.bucket = static_cast<int>(arg_int(e, "bucket"));
    const io::Json* args = e.find("args");
    const io::Json* kind = args ? args->find("kind") : nullptr;
    const io::Json* coll = args ? args->find("Collective name") : nullptr;
    const bool all_reduce = coll && coll->as_string("Collective name") == "all_reduce";
    if (cat == "user_annotation" && s.name.rfind("ProfilerStep#", 0) == 0) steps.push_back(s);
    else if (cat == "user_annotation" && s.name == "ddp:bucket") bucket_ranges.push_back(s);
    else if (cat == "user_annotation" && s.name.size() > 8 && s.name.ends_with("Backward")) backward.push_back(s);
    else if (cat == "collective" && all_reduce && s.bucket >= 0) executions.push_back(s);
    else if (cat == "kernel_launch") launched_at[s.id] = s.ts;
    else if (cat == "kernel") gpu_kernels.push_back(s);
    else if (cat == "cpu_op" && kind && kind->as_string("kind") == "collective") issues[s.id] = s;
  }
  std::sort(steps.begin(), steps.end(), [](const Span& a, const Span& b) { return a.ts < b.ts; });
  report.steps = static_cast<int>(steps.size());
  if (report.steps != expected_steps)
    return failed(fmt::format("expected {} ProfilerStep ranges, found {}", expected_steps, report.steps));
  std::map<int64_t, const Span*> range_by_id;
  for (const Span& r : bucket_ranges) range_by_id[r.id] = &r;
  auto in = [](const Span& step, double t) { return t >= step.ts && t <= step.end; };
  for (size_t k = 0; k < steps.size(); ++k) {
    const Span& step = steps[k];
    std::vector<int> ranges(buckets, 0), spans(buckets, 0);
    for (const Span& r : bucket_ranges)
      if (in(step, r.ts)) {
        if (r.bucket < 0 || r.bucket >= buckets)
          return failed(fmt::format("step {}: a ddp:bucket range has bucket index {} (expected 0 to {})", k, r.bucket,
                                    buckets - 1));
        ++ranges[r.bucket];
      }
    double last_backward_end = -1;
    for (const Span& b : backward)
      if (in(step, b.ts)) {
        last_backward_end = std::max(last_backward_end, b.end);
        for (const Span& g : gpu_kernels)
          if (auto l = launched_at.find(g.id); l != launched_at.end() && in(b, l->second))
            last_backward_end = std::max(last_backward_end, g.end);
      }
    if (last_backward_end < 0) return failed(fmt::format("step {}: no backward node range", k));
    bool overlapped = false;
    for (const Span& x : executions) {
      auto issue = issues.find(x.id);
      if (issue == issues.end())
        return failed(fmt::format("the all-reduce span of bucket {} (id {}) has no host issue event", x.bucket, x.id));
      if (!in(step, issue->second.ts)) continue;
      if (x.bucket >= buckets)
        return failed(fmt::format("step {}: an all-reduce of bucket {} (the model has {})", k, x.bucket, buckets));
      ++spans[x.bucket];
      ++report.collectives;
      auto range = range_by_id.find(issue->second.parent);
      if (range == range_by_id.end() || range->second->bucket != x.bucket)
        return failed(fmt::format("step {}: the all-reduce of bucket {} was not issued inside its ddp:bucket range", k,
                                  x.bucket));
      if (x.ts < issue->second.ts)
        return failed(fmt::format("step {}: the all-reduce of bucket {} ran before it was issued", k, x.bucket));
      if (x.ts < last_backward_end) overlapped = true;
    }
    for (int b = 0; b < buckets; ++b) {
      if (ranges[b] != 1)
        return failed(fmt::format("step {}: {} ddp:bucket ranges for bucket {} (expected 1)", k, ranges[b], b));
      if (spans[b] != 1)
        return failed(fmt::format("step {}: {} all-reduce spans for bucket {} (expected 1)", k, spans[b], b));
    }
    if (overlapped) ++report.overlapped_steps;
  }
  if (report.overlapped_steps < std::max(1, min_overlapped_steps))
    return failed(fmt::format("an all-reduce began before the last backward node of its step ended in {} of {} steps "
                              "(expected at least {}): no overlap",
                              report.overlapped_steps, report.steps, std::max(1, min_overlapped_steps)));
  return report;
}

}  // namespace tritium::test
