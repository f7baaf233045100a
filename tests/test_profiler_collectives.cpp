// Collectives in the profiler (issue 32): Gloo collectives recorded with their host issue (name,
// bytes, dtype, group size) and their execution on the group's worker thread; DDP's bucket ranges
// and the bucket index on each all-reduce; key_averages and the Chrome trace listing them; the
// DDP trace check (tests/ddp_trace_check.h) passing on a real one-rank DDP trace and failing on
// made-up traces that break each of its rules; on a GPU, an NCCL all-reduce timed on the
// communication stream. The two-process check is tests/dist_ddp.sh (CTest dist_ddp_profile).
#include <boost/test/unit_test.hpp>

#include "test_support.h"
#include "ops_test_helpers.h"

#include <cstdlib>
#include <set>

#include "ddp_trace_check.h"
#include "dist/gloo_process_group.h"
#include "dist/nccl_process_group.h"
#include "dist/tcp_store.h"
#include "dist_test_ranks.h"
#include "io/json.h"
#include "nn/ddp.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "profiler/chrome_trace.h"
#include "profiler/profile.h"
#include "runtime/cuda_device.h"

using namespace tritium;
using runtime::Tensor;
namespace prof = tritium::profiler;
using namespace std::chrono_literals;

namespace {

bool gloo_and_cpu() {
  if (dist::GlooProcessGroup::available() && runtime::device_available(Device::cpu())) return true;
  BOOST_TEST_MESSAGE("skipped: needs the Gloo backend and the CPU backend");
  return false;
}

std::vector<const prof::Event*> of_kind(const std::vector<prof::Event>& events, prof::EventKind kind,
                                        std::string_view name = {}) {
  std::vector<const prof::Event*> out;
  for (const prof::Event& e : events)
    if (e.kind == kind && (name.empty() || e.name == name)) out.push_back(&e);
  return out;
}

// A made-up DDP trace: `steps` ProfilerStep ranges of 1000 us, each with three backward node
// ranges ending at +600 us, one ddp:bucket range per bucket (launched from +210 us on), its
// all-reduce issued inside it and run 2 us later (or at +700 us, after backward, when `late`).
struct Made {
  int steps = 2, buckets = 3;
  bool late = false;
  int drop_step = -1, drop_bucket = -1;  // leave out this all-reduce
  int dup_bucket = -1;                   // this bucket's all-reduce twice (step 0)
  bool orphan = false;                   // bucket 1's all-reduce issued outside its range
  bool gpu = false;  // a kernel launched in the last backward node runs on the GPU until +890 us
};
io::Json made_trace(const Made& m) {
  std::vector<std::string> ev;
  int64_t id = 0;
  auto x = [&](const char* cat, const std::string& name, double ts, double dur, std::string args) {
    ev.push_back(fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": 0, \"tid\": 0, \"ts\": {}, "
                             "\"dur\": {}, \"args\": {{{}}}}}",
                             cat, name, ts, dur, args));
  };
  for (int k = 0; k < m.steps; ++k) {
    const double t0 = 1000.0 * k;
    x("user_annotation", fmt::format("ProfilerStep#{}", k), t0, 900, fmt::format("\"id\": {}, \"parent\": -1", id++));
    for (int n = 0; n < 3; ++n)
      x("user_annotation", "MmBackward", t0 + 100 + 200 * n, 100, fmt::format("\"id\": {}, \"parent\": -1", id++));
    if (m.gpu) {
      const std::string args = fmt::format("\"id\": {}, \"parent\": -1", id++);
      x("kernel_launch", "matmul", t0 + 510, 5, args);
      x("kernel", "matmul", t0 + 650, 240, args);
    }
    for (int b = 0; b < m.buckets; ++b) {
      const double ts = t0 + 210 + 150 * b;
      const int64_t range = id++;
      x("user_annotation", "ddp:bucket", ts, 5, fmt::format("\"id\": {}, \"parent\": -1, \"bucket\": {}", range, b));
      for (int copy = 0; copy < (k == 0 && b == m.dup_bucket ? 2 : 1); ++copy) {
        if (k == m.drop_step && b == m.drop_bucket) continue;
        const int64_t c = id++;
        const std::string args = fmt::format(
            "\"kind\": \"collective\", \"id\": {}, \"parent\": {}, \"Collective name\": \"all_reduce\", \"bucket\": {}", c,
            m.orphan && b == 1 ? int64_t{-1} : range, b);
        x("cpu_op", "gloo:all_reduce", ts + 1, 2, args);
        x("collective", "gloo:all_reduce", m.late ? t0 + 700 + b : ts + 3, 10, args);
      }
    }
  }
  std::string text = "{\"traceEvents\": [";
  for (size_t i = 0; i < ev.size(); ++i) text += (i ? ", " : "") + ev[i];
  return io::parse_json(text + "]}", "made-up trace");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_profiler_collectives)

BOOST_AUTO_TEST_CASE(gloo_collectives_have_an_issue_and_an_execution) {
  if (!gloo_and_cpu()) return;
  prof::Profile p;
  auto failures = test::run_gloo_ranks(2, [](int rank, std::shared_ptr<dist::ProcessGroup> group) -> std::string {
    Tensor t = Tensor::from_vector<float>({1.f + rank, 2.f, 3.f, 4.f, 5.f}, {5});
    {
      prof::record_function r("waited");  // the execution must end before the wait returns
      group->all_reduce(t)->wait();
    }
    if (t.to_vector<float>() != std::vector<float>{3.f, 4.f, 6.f, 8.f, 10.f}) return "all_reduce value";
    Tensor b = Tensor::from_vector<int32_t>({rank, rank, rank}, {3});
    group->broadcast(b, 1)->wait();
    std::vector<Tensor> outs = {Tensor::zeros({2}, DType::f64), Tensor::zeros({2}, DType::f64)};
    group->all_gather(outs, Tensor::from_vector<double>({1.0 * rank, 2.0}, {2}))->wait();
    Tensor mine = Tensor::zeros({3}, DType::f32);
    group->reduce_scatter(mine, {Tensor::from_vector<float>({1.f, 2.f, 3.f}, {3}), Tensor::from_vector<float>({4.f, 5.f, 6.f}, {3})})->wait();
    group->barrier()->wait();
    return "";
  });
  for (const std::string& f : failures) BOOST_TEST(f == "");
  const std::vector<prof::Event>& events = p.events();

  auto all_reduce = of_kind(events, prof::EventKind::collective, "gloo:all_reduce");
  BOOST_TEST_REQUIRE(all_reduce.size() == 2u);  // one per rank (both ranks are threads of this process)
  std::set<int> issuing;
  for (const prof::Event* e : all_reduce) {
    BOOST_TEST(e->comm.collective == "all_reduce");
    BOOST_TEST(e->comm.backend == "gloo");
    BOOST_TEST(e->comm.dtype == "f32");
    BOOST_TEST(e->comm.elements == 5);
    BOOST_TEST(e->comm.bytes == 20);
    BOOST_TEST(e->comm.group_size == 2);
    BOOST_TEST(e->comm.bucket == -1);
    BOOST_TEST(e->gpu_dur_us == -1.0);
    // Ran on the group's worker thread, after the issue began and before the wait returned.
    BOOST_TEST_REQUIRE(e->exec_dur_us >= 0.0);
    BOOST_TEST(e->exec_thread != e->thread);
    BOOST_TEST(e->exec_start_us >= e->start_us);
    const prof::Event* waited = nullptr;
    for (const prof::Event& r : events)
      if (r.name == "waited" && r.id == e->parent) waited = &r;
    BOOST_TEST_REQUIRE(waited != nullptr);
    BOOST_TEST(e->exec_start_us + e->exec_dur_us <= waited->start_us + waited->dur_us);
    issuing.insert(e->thread);
  }
  BOOST_TEST(issuing.size() == 2u);
  auto one = [&](std::string_view name) {
    auto v = of_kind(events, prof::EventKind::collective, name);
    BOOST_TEST_REQUIRE(v.size() == 2u, name);
    BOOST_TEST(v[0]->exec_dur_us >= 0.0, name);
    return v[0];
  };
  const prof::Event* bc = one("gloo:broadcast");
  BOOST_TEST((bc->comm.dtype == "i32" && bc->comm.elements == 3 && bc->comm.bytes == 12));
  const prof::Event* ag = one("gloo:all_gather");
  BOOST_TEST((ag->comm.dtype == "f64" && ag->comm.elements == 2 && ag->comm.bytes == 16));
  const prof::Event* rs = one("gloo:reduce_scatter");  // every rank contributes all its inputs
  BOOST_TEST((rs->comm.dtype == "f32" && rs->comm.elements == 6 && rs->comm.bytes == 24));
  const prof::Event* ba = one("gloo:barrier");
  BOOST_TEST((ba->comm.bytes == 0 && ba->comm.group_size == 2));

  // The table lists them, with where they ran.
  prof::KeyAverages averages = p.key_averages();
  const prof::KeyAverage* row = averages.find("gloo:all_reduce", prof::EventKind::collective);
  BOOST_TEST_REQUIRE(row != nullptr);
  BOOST_TEST(row->count == 2);
  BOOST_TEST(row->comm_total_us == all_reduce[0]->exec_dur_us + all_reduce[1]->exec_dur_us, boost::test_tools::tolerance(1e-9));
  const std::string table = averages.table("comm_time_total", 5);
  BOOST_TEST(table.find("gloo:all_reduce") != std::string::npos, table);
  BOOST_TEST(table.find("Comm total") != std::string::npos, table);
  BOOST_TEST(table.find("collective") != std::string::npos, table);

  // The Chrome trace: the issue on the caller's track, the execution on the worker's track.
  io::Json trace = io::parse_json(prof::to_chrome_trace(events), "trace");
  int issues = 0, executions = 0, flows = 0, worker_names = 0;
  for (const io::Json& e : trace.at("traceEvents", "trace").as_array("events")) {
    const std::string& ph = e.at("ph", "e").as_string("ph");
    const io::Json* args = e.find("args");
    if (ph == "M" && args && args->at("name", "m").as_string("n").find("collectives (gloo)") != std::string::npos)
      ++worker_names;
    if (ph == "s" || ph == "f") ++flows;
    if (ph != "X" || e.at("name", "e").as_string("n") != "gloo:all_reduce") continue;
    BOOST_TEST(args->at("Collective name", "a").as_string("c") == "all_reduce");
    BOOST_TEST(args->at("Bytes", "a").as_int64("b") == 20);
    BOOST_TEST(args->at("Group size", "a").as_int64("g") == 2);
    BOOST_TEST(args->at("dtype", "a").as_string("d") == "f32");
    const std::string& cat = e.at("cat", "e").as_string("cat");
    if (cat == "cpu_op") ++issues;
    else if (cat == "collective") ++executions;
  }
  BOOST_TEST(issues == 2);
  BOOST_TEST(executions == 2);
  BOOST_TEST(worker_names == 2);  // the two groups' worker threads
  BOOST_TEST(flows == 2 * 10);   // an arrow from each issue to its execution, 10 collectives
}

BOOST_AUTO_TEST_CASE(ddp_buckets_in_the_trace) {
  if (!gloo_and_cpu()) return;
  auto store = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, 5000ms);
  auto group = dist::GlooProcessGroup::create(store, 0, 1, 5000ms);
  Generator gen(3);
  auto model = std::make_shared<nn::Sequential>(nn::Linear(9, 40, true, gen), nn::ReLU(), nn::Linear(40, 20, true, gen),
                                                nn::ReLU(), nn::Linear(20, 3, true, gen));
  nn::DistributedDataParallel ddp(model, {.process_group = group, .bucket_cap_mb = 1e-6, .first_bucket_cap_mb = 1e-6});
  const int buckets = static_cast<int>(ddp.bucket_assignment().size());
  BOOST_TEST_REQUIRE(buckets == 6);
  nn::SGD sgd(model->parameters(), 0.1);
  Tensor x = test::ops_util::random_tensor<float>({13, 9}, 4);
  Tensor y = Tensor::from_vector<int64_t>({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {13});
  auto step = [&] {
    sgd.zero_grad();
    cross_entropy(ddp(x), y).backward();
    sgd.step();
  };
  step();  // compiles the kernels
  // Ten steps: on a loaded 2-core machine the worker's wake-up lagged the backward of all of 3
  // (stop 51, ./test.sh beside a ThreadSanitizer build: 1 run in 3 failed).
  const int steps = 10;
  prof::Profile p;
  for (int k = 0; k < steps; ++k) {
    prof::record_function r(fmt::format("ProfilerStep#{}", k));
    step();
  }
  p.stop();
  const std::vector<prof::Event>& events = p.events();
  auto ranges = of_kind(events, prof::EventKind::range, "ddp:bucket");
  auto all_reduce = of_kind(events, prof::EventKind::collective, "gloo:all_reduce");
  BOOST_TEST_REQUIRE(ranges.size() == size_t(steps * buckets));
  BOOST_TEST_REQUIRE(all_reduce.size() == size_t(steps * buckets));
  std::vector<int> per_bucket(buckets, 0);
  for (const prof::Event* e : all_reduce) {
    BOOST_TEST_REQUIRE((e->comm.bucket >= 0 && e->comm.bucket < buckets));
    ++per_bucket[e->comm.bucket];
    const prof::Event* parent = nullptr;
    for (const prof::Event* r : ranges)
      if (r->id == e->parent) parent = r;
    BOOST_TEST_REQUIRE(parent != nullptr);  // issued inside its bucket's range
    BOOST_TEST(parent->comm.bucket == e->comm.bucket);
    // The bucket's bytes: its parameters' gradients.
    int64_t bytes = 0;
    for (int i : ddp.bucket_assignment()[e->comm.bucket]) bytes += model->parameters()[i].nbytes();
    BOOST_TEST(parent->comm.bytes == bytes);
    BOOST_TEST(e->comm.bytes == bytes);
    BOOST_TEST(e->comm.group_size == 1);
  }
  for (int b = 0; b < buckets; ++b) BOOST_TEST(per_bucket[b] == steps);
  // The whole trace passes the multi-process test's check (one rank: every rule but the peers).
  // Overlap in at least one step: the worker thread's wake-up on this shared machine can lag the
  // few remaining backward nodes of so small a model (dist_ddp_profile checks every step).
  test::DdpTraceReport report =
      test::check_ddp_trace(io::parse_json(prof::to_chrome_trace(events), "trace"), buckets, steps, 1);
  BOOST_TEST(report.error == "");
  BOOST_TEST(report.collectives == steps * buckets);
  BOOST_TEST_MESSAGE("all-reduce overlapping backward in " << report.overlapped_steps << " of " << steps << " steps");
}

BOOST_AUTO_TEST_CASE(the_ddp_trace_check_fails_on_each_broken_rule) {
  test::DdpTraceReport good = test::check_ddp_trace(made_trace({}), 3, 2);
  BOOST_TEST(good.error == "");
  BOOST_TEST(good.overlapped_steps == 2);
  BOOST_TEST(good.collectives == 6);
  auto fails = [](const Made& m, const std::string& expect, int steps = 2, int min_overlapped = -1) {
    std::string error = test::check_ddp_trace(made_trace(m), m.buckets, steps, min_overlapped).error;
    BOOST_TEST(error.find(expect) != std::string::npos, "'" << error << "' should contain '" << expect << "'");
  };
  fails({.late = true}, "no overlap");
  // On a GPU backward ends with its kernels: an all-reduce after the host's last node but while
  // backward's kernels still run overlaps.
  BOOST_TEST(test::check_ddp_trace(made_trace({.late = true, .gpu = true}), 3, 2).error == "");
  BOOST_TEST(test::check_ddp_trace(made_trace({.gpu = true}), 3, 2).error == "");
  fails({.drop_step = 1, .drop_bucket = 2}, "step 1: 0 all-reduce spans for bucket 2");
  fails({.dup_bucket = 1}, "step 0: 2 all-reduce spans for bucket 1");
  fails({.orphan = true}, "the all-reduce of bucket 1 was not issued inside its ddp:bucket range");
  fails({}, "expected 3 ProfilerStep ranges, found 2", 3);
  BOOST_TEST(test::check_ddp_trace(made_trace({.buckets = 3}), 2, 2).error.find("bucket index 2") != std::string::npos);
}

// On a GPU with NCCL: a one-rank group's all-reduce timed on its communication stream, a stream
// of its own (not the kernels' stream). Skips without a GPU or NCCL.
BOOST_AUTO_TEST_CASE(nccl_all_reduce_on_the_communication_stream) {
  if (!runtime::device_available(Device::cuda())) {
    BOOST_TEST_MESSAGE("skipped: no GPU");
    return;
  }
  std::shared_ptr<dist::NcclProcessGroup> group;
  try {
    auto store = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, 5000ms);
    group = dist::NcclProcessGroup::create(store, 0, 1, 5000ms, 0);
  } catch (const Error& e) {
    BOOST_TEST_MESSAGE("skipped: " << e.what());
    return;
  }
  DefaultDeviceGuard on(Device::cuda(0));
  Tensor t = test::ops_util::random_tensor<float>({1 << 20}, 9);
  Tensor expect = t.clone();
  prof::Profile p;
  Tensor u = ops::add(t, Scalar(1.0));  // a kernel on the current stream
  BOOST_TEST(u.numel() == t.numel());
  group->all_reduce(t)->wait();
  p.stop();
  BOOST_TEST(t.to_vector<float>() == expect.to_vector<float>());  // one rank: the sum is itself
  auto all_reduce = of_kind(p.events(), prof::EventKind::collective, "nccl:all_reduce");
  BOOST_TEST_REQUIRE(all_reduce.size() == 1u);
  const prof::Event& e = *all_reduce[0];
  BOOST_TEST(e.comm.bytes == (int64_t{4} << 20));
  BOOST_TEST(e.device == "cuda:0");
  BOOST_TEST(e.gpu_dur_us >= 0.0);
  BOOST_TEST(e.gpu_start_us >= 0.0);
  auto kernels = of_kind(p.events(), prof::EventKind::kernel);
  BOOST_TEST_REQUIRE(!kernels.empty());
  for (const prof::Event* k : kernels)
    if (k->gpu_dur_us >= 0) BOOST_TEST(k->stream != e.stream);
  const std::string trace = prof::to_chrome_trace(p.events());
  BOOST_TEST(trace.find("(nccl)") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
