// tritium-dist-worker: one rank of the multi-process tests of dist/ and DDP (tests/dist_ddp.sh
// runs it under tritium-run, or by hand with torchrun's variables).
//   --free-port                 prints a TCP port nothing listens on, and exits
//   --mode collectives          the collectives of the default group and a sub-group across
//                               processes, checked against values every rank can compute
//   --mode train                a tiny MLP on synthetic data, DistributedDataParallel, SGD: rank 0
//                               prints "step K loss L" (the global batch's mean loss)
// train options: --steps S, --global-batch B (divisible by the world size), --accumulate N
// (micro-batches per step, all but the last under no_sync), --bucket-cap-mb / --first-bucket-cap-mb
// (to force several buckets), --find-unused (a layer that only rank 0 uses), --die-rank R
// --die-step K (rank R kills itself with SIGKILL at step K), --timeout-ms T, --mismatch (rank 1's
// model is wider: DDP must refuse).
//   --mode syncbn               SyncBatchNorm (a BatchNorm1d converted by convert_sync_batchnorm)
//                               on this rank's rows of a [12, 3, 5] batch against
//                               BatchNorm1d on the whole batch: outputs, input gradients, the
//                               summed weight and bias gradients, the running statistics
//   --mode profile              DDP on an MLP of 8 parameters with tiny bucket caps (8 buckets),
//                               --steps S steps profiled after 2 warm-up steps, each in a
//                               "ProfilerStep#K" range; each rank writes --trace PATH.rank<R>.json,
//                               reads it back and checks it (tests/ddp_trace_check.h): one
//                               all-reduce span per bucket per step, overlapping backward in at
//                               least half the steps
//   --mode allreduce-bench      all_reduce (sum, f32) bus bandwidth at --bytes N (1 MB to 1 GB when
//                               unset), --iters K timed after 5 warm-up calls; rank 0 prints
//                               nccl-tests' algbw and busbw (busbw = algbw x 2 (n - 1) / n)
// All modes: --device cpu (Gloo, the default) or cuda (NCCL, device LOCAL_RANK).
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <tritium/tritium.h>

#include "dist/distributed.h"
#include "nn/ddp.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/norm.h"
#include "nn/sampler.h"
#include "nn/sync_batch_norm.h"
#include "runtime/cuda_device.h"
#include "tools/cli.h"
#include "ddp_trace_check.h"
#include "io/json.h"
#include "loopback_port.h"
#include "profiler/profile.h"

using namespace tritium;
using runtime::Tensor;

namespace {

struct Config {
  std::string mode;
  int64_t steps = 20, global_batch = 24, accumulate = 1;
  double bucket_cap_mb = 25, first_bucket_cap_mb = 1;
  bool find_unused = false;
  bool mismatch = false;  // rank 1 builds a wider model (DDP must refuse)
  int64_t die_rank = -1, die_step = -1;
  int64_t timeout_ms = 30000;
  std::string device = "cpu";  // cuda: NCCL on cuda:LOCAL_RANK
  int64_t bytes = 0, iters = 20;  // allreduce-bench
  std::string trace;              // profile
};

// The backend and device of this rank (before init: LOCAL_RANK from the environment).
Device rank_device(const Config& c) {
  return c.device == "cuda" ? Device::cuda(dist::read_launch_environment().local_rank) : Device::cpu();
}
void init(const Config& c) {
  dist::init_process_group(c.device == "cuda" ? "nccl" : "gloo", {.timeout = std::chrono::milliseconds(c.timeout_ms)});
}

constexpr int64_t kFeatures = 16, kHidden = 33, kClasses = 5;


class TinyMlp : public nn::Module {
 public:
  TinyMlp(bool extra_branch, bool use_extra, int64_t hidden, Generator& gen) : use_extra_(use_extra) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(kFeatures, hidden, true, gen));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, kClasses, true, gen));
    if (extra_branch) extra = register_module("extra", std::make_shared<nn::Linear>(hidden, kClasses, true, gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu((*fc1)(x));
    Tensor y = (*fc2)(h);
    return extra && use_extra_ ? y + (*extra)(h) : y;
  }
  std::shared_ptr<nn::Linear> fc1, fc2, extra;

 private:
  bool use_extra_;
};

// The synthetic data set: standard normal features, labels from a fixed random linear map (the
// same on every rank: nothing depends on the rank).
struct Data {
  std::vector<float> x;
  std::vector<int64_t> y;
};
Data make_data(int64_t n) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  std::vector<float> w(kFeatures * kClasses);
  for (auto& v : w) v = normal(gen);
  Data d;
  d.x.resize(n * kFeatures);
  for (auto& v : d.x) v = normal(gen);
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    double best_score = -1e30;
    for (int64_t c = 0; c < kClasses; ++c) {
      double s = 0;
      for (int64_t f = 0; f < kFeatures; ++f) s += d.x[i * kFeatures + f] * w[f * kClasses + c];
      if (s > best_score) best_score = s, best = c;
    }
    d.y.push_back(best);
  }
  return d;
}

std::pair<Tensor, Tensor> gather_batch(const Data& d, const std::vector<int64_t>& idx, Device device) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i : idx) {
    x.insert(x.end(), d.x.begin() + i * kFeatures, d.x.begin() + (i + 1) * kFeatures);
    y.push_back(d.y[i]);
  }
  auto n = static_cast<int64_t>(idx.size());
  return {Tensor::from_vector(x, {n, kFeatures}, device), Tensor::from_vector(y, {n}, device)};
}

int train(const Config& c) {
  Device device = rank_device(c);
  init(c);
  int rank = dist::get_rank(), world = dist::get_world_size();
  if (c.global_batch % (world * c.accumulate) != 0)
    throw cli::UsageError(fmt::format("--global-batch {} is not divisible by world size {} x --accumulate {}",
                                      c.global_batch, world, c.accumulate));
  const int64_t local = c.global_batch / world, micro = local / c.accumulate;
  Data data = make_data(c.global_batch * c.steps);
  nn::DistributedSampler sampler(static_cast<int64_t>(data.y.size()), world, rank, /*shuffle=*/true, /*seed=*/3);
  std::vector<int64_t> order = sampler.indices(0);

  // Each rank initialises differently: DDP's broadcast from rank 0 must make them equal.
  Generator gen(100 + rank);
  DefaultDeviceGuard on(device);
  auto model = std::make_shared<TinyMlp>(c.find_unused, rank == 0, c.mismatch && rank == 1 ? kHidden + 1 : kHidden, gen);
  nn::DistributedDataParallel ddp(model, {.process_group = nullptr,
                                          .bucket_cap_mb = c.bucket_cap_mb,
                                          .first_bucket_cap_mb = c.first_bucket_cap_mb,
                                          .find_unused_parameters = c.find_unused});
  nn::SGD optimizer(model->parameters(), 0.1, 0.9);
  if (rank == 0)
    std::printf("world %d, %zu buckets, local batch %lld in %lld micro-batches\n", world,
                ddp.bucket_assignment().size(), static_cast<long long>(local), static_cast<long long>(c.accumulate));
  for (int64_t step = 0; step < c.steps; ++step) {
    if (rank == c.die_rank && step == c.die_step) {
      std::fflush(stdout);
      ::raise(SIGKILL);
    }
    optimizer.zero_grad();
    double loss_sum = 0;
    for (int64_t m = 0; m < c.accumulate; ++m) {
      auto begin = order.begin() + step * local + m * micro;
      auto [x, y] = gather_batch(data, std::vector<int64_t>(begin, begin + micro), device);
      auto scaled = [&] {
        Tensor loss = cross_entropy(ddp(x), y);
        loss_sum += loss.to_vector<float>()[0];
        return loss * (1.0 / static_cast<double>(c.accumulate));
      };
      if (m + 1 < c.accumulate) {
        auto guard = ddp.no_sync();
        scaled().backward();
      } else {
        scaled().backward();
      }
    }
    optimizer.step();
    Tensor loss = Tensor::from_vector<float>({static_cast<float>(loss_sum / c.accumulate)}, {1}, device);
    dist::all_reduce(loss, dist::ReduceOp::avg);
    if (rank == 0) std::printf("step %lld loss %.8f\n", static_cast<long long>(step), loss.to_vector<float>()[0]);
    std::fflush(stdout);
  }
  // The replicas stay equal: every rank's parameters match rank 0's bit for bit.
  for (Tensor p : model->parameters()) {
    Tensor mine = p.detach().clone();
    Tensor r0 = p.detach().clone();
    dist::broadcast(r0, 0);
    if (mine.to_vector<float>() != r0.to_vector<float>()) fail("rank {}: the parameters differ from rank 0's", rank);
  }
  dist::barrier();
  dist::destroy_process_group();
  return 0;
}

int collectives(const Config& c) {
  Device device = rank_device(c);
  init(c);
  int rank = dist::get_rank(), world = dist::get_world_size();
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) fail("rank {}: {} is wrong", rank, what);
  };
  Tensor t = Tensor::from_vector<float>({static_cast<float>(rank + 1), -1.f}, {2}, device);
  dist::all_reduce(t);
  expect(t.to_vector<float>() == std::vector<float>{world * (world + 1) / 2.f, -1.f * world}, "all_reduce sum");
  std::vector<Tensor> outs;
  for (int r = 0; r < world; ++r) outs.push_back(Tensor::from_vector<int64_t>({-1}, {1}, device));
  dist::all_gather(outs, Tensor::from_vector<int64_t>({10 * rank}, {1}, device));
  for (int r = 0; r < world; ++r) expect(outs[r].to_vector<int64_t>()[0] == 10 * r, "all_gather");
  // The even ranks as a sub-group: a broadcast from its last member (a world rank).
  std::vector<int> evens;
  for (int r = 0; r < world; r += 2) evens.push_back(r);
  auto group = dist::new_group(evens);
  expect((group != nullptr) == (rank % 2 == 0), "new_group membership");
  if (group) {
    Tensor b = Tensor::from_vector<int32_t>({rank}, {1}, device);
    dist::broadcast(b, evens.back(), group);
    expect(b.to_vector<int32_t>()[0] == evens.back(), "sub-group broadcast");
    Tensor s = Tensor::from_vector<int32_t>({1}, {1}, device);
    dist::all_reduce(s, dist::ReduceOp::sum, group);
    expect(s.to_vector<int32_t>()[0] == static_cast<int>(evens.size()), "sub-group all_reduce");
  }
  // reduce_scatter: part p of every rank's input is p + rank; rank r gets sum over ranks of r + rank'.
  std::vector<Tensor> parts;
  for (int p = 0; p < world; ++p) parts.push_back(Tensor::from_vector<float>({float(p + rank), 1.f}, {2}, device));
  Tensor mine = Tensor::from_vector<float>({-1.f, -1.f}, {2}, device);
  dist::reduce_scatter(mine, parts, dist::ReduceOp::sum);
  expect(mine.to_vector<float>() == std::vector<float>{float(world * rank + world * (world - 1) / 2), float(world)},
         "reduce_scatter");
  dist::barrier();
  std::printf("rank %d: collectives ok (%s)\n", rank, dist::default_group()->backend().c_str());
  dist::destroy_process_group();
  return 0;
}

double rel_error(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    num += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]), den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

int syncbn(const Config& c) {
  Device device = rank_device(c);
  init(c);
  int rank = dist::get_rank(), world = dist::get_world_size();
  const int64_t n = 12, ch = 3, len = 5;
  if (n % world) fail("--mode syncbn needs a world size dividing {}", n);
  const int64_t rows = n / world;
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.5f, 2.f);
  std::vector<float> x(n * ch * len), r(n * ch * len);
  for (auto& v : x) v = normal(gen);
  for (auto& v : r) v = normal(gen);
  DefaultDeviceGuard on(device);
  auto shard = [&](const std::vector<float>& v) {
    return std::vector<float>(v.begin() + rank * rows * ch * len, v.begin() + (rank + 1) * rows * ch * len);
  };
  auto setup = [&](nn::BatchNorm& bn) {
    bn.weight.detach().copy_(Tensor::from_vector<float>({0.5f, 1.5f, -1.f}, {ch}, device));
    bn.bias.detach().copy_(Tensor::from_vector<float>({0.1f, 0.2f, 0.3f}, {ch}, device));
  };
  // A model converted by convert_sync_batchnorm (PyTorch's way to get SyncBatchNorm layers).
  auto tree = std::make_shared<nn::Sequential>(std::make_shared<nn::BatchNorm1d>(ch));
  nn::SyncBatchNorm::convert_sync_batchnorm(tree);
  auto& sync = tree->at<nn::SyncBatchNorm>(0);
  nn::BatchNorm1d whole(ch);
  setup(sync), setup(whole);
  for (int step = 0; step < 2; ++step) {  // twice: the running statistics' update compounds
    Tensor xs = Tensor::from_vector(shard(x), {rows, ch, len}, device).requires_grad_();
    Tensor xw = Tensor::from_vector(x, {n, ch, len}, device).requires_grad_();
    Tensor ys = sync(xs), yw = whole(xw);
    sum(ys * Tensor::from_vector(shard(r), {rows, ch, len}, device)).backward();
    sum(yw * Tensor::from_vector(r, {n, ch, len}, device)).backward();
    std::vector<float> yw_all = yw.to_vector<float>(), gw_all = xw.grad().to_vector<float>();
    double e_y = rel_error(ys.to_vector<float>(), shard(yw_all));
    double e_gx = rel_error(xs.grad().to_vector<float>(), shard(gw_all));
    Tensor gweight = sync.weight.grad().detach().clone(), gbias = sync.bias.grad().detach().clone();
    dist::all_reduce(gweight), dist::all_reduce(gbias);
    double e_gw = rel_error(gweight.to_vector<float>(), whole.weight.grad().to_vector<float>());
    double e_gb = rel_error(gbias.to_vector<float>(), whole.bias.grad().to_vector<float>());
    double e_rm = rel_error(sync.running_mean.to_vector<float>(), whole.running_mean.to_vector<float>());
    double e_rv = rel_error(sync.running_var.to_vector<float>(), whole.running_var.to_vector<float>());
    std::printf("rank %d step %d: relative errors y %.2g, x grad %.2g, weight grad %.2g, bias grad %.2g, running mean "
                "%.2g, running var %.2g\n", rank, step, e_y, e_gx, e_gw, e_gb, e_rm, e_rv);
    for (double e : {e_y, e_gx, e_gw, e_gb, e_rm, e_rv})
      if (!(e < 1e-5)) fail("rank {}: SyncBatchNorm differs from BatchNorm on the whole batch", rank);
    sync.zero_grad(), whole.zero_grad();
  }
  sync.eval();  // evaluation: the running statistics, no collective
  Tensor probe = Tensor::from_vector(shard(x), {rows, ch, len}, device);
  whole.eval();
  if (rel_error(sync(probe).to_vector<float>(), whole(probe).to_vector<float>()) > 1e-6) fail("rank {}: eval", rank);
  dist::barrier();
  std::printf("rank %d: syncbn ok\n", rank);
  dist::destroy_process_group();
  return 0;
}

// DDP steps profiled, the trace written and checked (issue 32: all-reduce overlapping backward).
int profile(const Config& c) {
  Device device = rank_device(c);
  init(c);
  int rank = dist::get_rank(), world = dist::get_world_size();
  if (c.trace.empty()) throw cli::UsageError("--mode profile needs --trace PATH");
  // 256 rows a rank: with 64, once the CPU kernels got faster (stop 50), backward ended before the
  // first all-reduce began in 3 of 4 steps of one run under ctest -j2.
  const int64_t local = 256;
  Data data = make_data(local * world * (c.steps + 2));
  Generator gen(5);
  DefaultDeviceGuard on(device);
  // Wide early layers: the backward of the first layers, which runs after the last layers' buckets
  // are launched, takes milliseconds, well above the Gloo worker's wake-up on a loaded machine
  // (with 256-wide layers it was about as long, and the first all-reduce began after backward
  // in half the steps).
  auto model = std::make_shared<nn::Sequential>(
      nn::Linear(kFeatures, 512, true, gen), nn::ReLU(), nn::Linear(512, 512, true, gen), nn::ReLU(),
      nn::Linear(512, 128, true, gen), nn::ReLU(), nn::Linear(128, kClasses, true, gen));
  nn::DistributedDataParallel ddp(model, {.process_group = nullptr, .bucket_cap_mb = 1e-6, .first_bucket_cap_mb = 1e-6});
  const int buckets = static_cast<int>(ddp.bucket_assignment().size());
  nn::SGD optimizer(model->parameters(), 0.05);
  auto step = [&](int64_t k) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < local; ++i) idx.push_back((k * world + rank) * local + i);
    auto [x, y] = gather_batch(data, idx, device);
    optimizer.zero_grad();
    Tensor loss = cross_entropy(ddp(x), y);
    loss.backward();
    optimizer.step();
    Tensor l = loss.detach().clone();
    dist::all_reduce(l, dist::ReduceOp::avg);  // a collective outside DDP's buckets
  };
  step(0), step(1);  // compile the kernels first
  profiler::Profile p({.record_shapes = true});
  for (int64_t k = 0; k < c.steps; ++k) {
    profiler::record_function r(fmt::format("ProfilerStep#{}", k));
    step(k + 2);
  }
  p.stop();
  const std::string path = fmt::format("{}.rank{}.json", c.trace, rank);
  p.export_chrome_trace(path);
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  // Overlap in at least half the steps: on the shared 2-core CI machine a rank's threads are
  // sometimes descheduled for 10-20 ms, long enough for backward to end before the Gloo worker
  // wakes (seen in 1 step of 16); a reducer that does not overlap fails every step.
  const int min_overlapped = static_cast<int>(c.steps + 1) / 2;
  test::DdpTraceReport report =
      test::check_ddp_trace(io::parse_json(text.str(), path), buckets, static_cast<int>(c.steps), min_overlapped);
  if (!report.error.empty()) fail("rank {}: {}: {}", rank, path, report.error);
  // The table lists the collectives: DDP's buckets and the loss's all-reduce, every step.
  profiler::KeyAverages averages = p.key_averages();
  const profiler::KeyAverage* row = averages.find("gloo:all_reduce", profiler::EventKind::collective);
  if (c.device == "cuda") row = averages.find("nccl:all_reduce", profiler::EventKind::collective);
  if (!row || row->count != c.steps * (buckets + 1) || !(row->comm_total_us > 0))
    fail("rank {}: key_averages has no all_reduce row of {} calls with a communication time", rank,
         c.steps * (buckets + 1));
  if (rank == 0) std::printf("%s", averages.table("comm_time_total", 6).c_str());
  std::printf("rank %d: profile ok: %d steps, %d buckets, %d all-reduce spans, all-reduce overlapping backward in %d "
              "of %d steps\n",
              rank, report.steps, buckets, report.collectives, report.overlapped_steps, report.steps);
  std::fflush(stdout);
  dist::barrier();
  dist::destroy_process_group();
  return 0;
}

// Waits for the device's queued work (the collectives on it included).
void synchronize(Device device) {
  if (device.is_cuda()) runtime::cuda::synchronize(device.index);
}

int allreduce_bench(const Config& c) {
  Device device = rank_device(c);
  init(c);
  int world = dist::get_world_size();
  std::vector<int64_t> sizes = {c.bytes};
  if (c.bytes == 0) sizes = {1 << 20, 16 << 20, 64 << 20, 256 << 20, int64_t{1} << 30};
  for (int64_t bytes : sizes) {
    Tensor t = Tensor::zeros({bytes / 4}, DType::f32, device);
    for (int i = 0; i < 5; ++i) dist::all_reduce(t);
    synchronize(device);
    dist::barrier();
    auto start = std::chrono::steady_clock::now();
    std::vector<dist::WorkPtr> works;
    for (int64_t i = 0; i < c.iters; ++i) works.push_back(dist::all_reduce(t, dist::ReduceOp::sum, nullptr, true));
    for (auto& w : works) w->wait();
    synchronize(device);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / c.iters;
    double algbw = static_cast<double>(bytes) / seconds / 1e9;
    if (dist::get_rank() == 0)
      std::printf("all_reduce %s %d ranks %lld bytes: %.3f ms, algbw %.2f GB/s, busbw %.2f GB/s\n",
                  dist::default_group()->backend().c_str(), world, static_cast<long long>(bytes), seconds * 1e3, algbw,
                  algbw * 2.0 * (world - 1) / world);
    std::fflush(stdout);
  }
  dist::destroy_process_group();
  return 0;
}

Config parse(int argc, char** argv) {
  Config c;
  cli::Args args(argc, argv, "usage: tritium-dist-worker --mode train|collectives [options] (see the source)\n");
  while (args.next()) {
    const std::string& o = args.option();
    if (args.is("--free-port")) c.mode = "free-port";
    else if (args.is("--mode")) c.mode = cli::parse_choice(o, args.value(), {"train", "collectives", "allreduce-bench", "syncbn", "profile"});
    else if (args.is("--trace")) c.trace = args.value();
    else if (args.is("--bytes")) c.bytes = cli::parse_int(o, args.value(), 4, int64_t(1) << 36) / 4 * 4;
    else if (args.is("--iters")) c.iters = cli::parse_int(o, args.value(), 1, 100000);
    else if (args.is("--steps")) c.steps = cli::parse_int(o, args.value(), 1, 10000);
    else if (args.is("--global-batch")) c.global_batch = cli::parse_int(o, args.value(), 1, 100000);
    else if (args.is("--accumulate")) c.accumulate = cli::parse_int(o, args.value(), 1, 64);
    else if (args.is("--bucket-cap-mb")) c.bucket_cap_mb = cli::parse_double(o, args.value(), 1e-6, 1e4);
    else if (args.is("--first-bucket-cap-mb")) c.first_bucket_cap_mb = cli::parse_double(o, args.value(), 1e-6, 1e4);
    else if (args.is("--find-unused")) c.find_unused = true;
    else if (args.is("--mismatch")) c.mismatch = true;
    else if (args.is("--device")) c.device = cli::parse_choice(o, args.value(), {"cpu", "cuda"});
    else if (args.is("--die-rank")) c.die_rank = cli::parse_int(o, args.value(), 0, 1 << 20);
    else if (args.is("--die-step")) c.die_step = cli::parse_int(o, args.value(), 0, 1 << 20);
    else if (args.is("--timeout-ms")) c.timeout_ms = cli::parse_int(o, args.value(), 1, 86400000);
    else args.unknown();
  }
  if (c.mode.empty()) throw cli::UsageError("--mode is required");
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  return cli::run_main("tritium-dist-worker", [&] {
    Config c = parse(argc, argv);
    if (c.mode == "free-port") {
      std::printf("%d\n", tritium::test::unused_loopback_port());
      return 0;
    }
    if ((c.mode == "train" || c.mode == "syncbn" || c.mode == "profile") && !runtime::device_available(c.device == "cuda" ? Device::cuda() : Device::cpu())) {
      std::fprintf(stderr, "skipped: the %s backend is unavailable\n", c.device.c_str());
      return 77;
    }
    if (c.mode == "allreduce-bench") return allreduce_bench(c);
    if (c.mode == "syncbn") return syncbn(c);
    if (c.mode == "profile") return profile(c);
    return c.mode == "train" ? train(c) : collectives(c);
  });
}
