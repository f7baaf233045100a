// train-mnist: a multilayer perceptron (784-512-512-10, ReLU) or a small CNN (two
// conv-batchnorm-relu-maxpool stages, then two linear layers) trained on Fashion-MNIST with
// AdamW and cross-entropy; checkpoints of the model and the optimiser with --save / --load. Every operation of the forward pass, the backward pass and the
// optimiser step is a Tritium kernel. Run with --help for the options.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include <tritium/tritium.h>

#include "tools/cli.h"

#include "io/safetensors.h"
#include "nn/autocast.h"
#include "nn/autograd.h"
#include "nn/containers.h"
#include "nn/conv.h"
#include "nn/ddp.h"
#include "dist/distributed.h"
#include "ops/ops.h"
#include "nn/data.h"
#include "nn/functional.h"
#include "nn/grad_scaler.h"
#include "nn/module.h"
#include "nn/norm.h"
#include "nn/lr_scheduler.h"
#include "nn/optim.h"
#include "nn/pooling.h"
#include "nn/sampler.h"
#include "nn/serialize.h"
#include "profiler/memory_usage.h"
#include "profiler/scalar_log.h"
#include "profiler/step_profiler.h"

using namespace tritium;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  int epochs = 5;
  int64_t batch_size = 128;
  double lr = 0, weight_decay = 1e-2;  // lr 0: the model's default (1e-3 mlp, 2e-3 cnn)
  std::string schedule = "cosine";      // cosine or constant
  uint64_t seed = 0;
  std::string data = nn::FashionMNIST::default_root();
  std::string backend = "cpu";
  int64_t limit_batches = -1;  // all
  bool tf32 = false;
  std::string model = "mlp";        // mlp or cnn
  std::string save_path, load_path;  // empty: none
  int workers = 1;                   // data-loading threads (0: on the training thread)
  std::string profile_path, log_path;  // --profile, --log (issue 31 items 6, 8); empty: none
  std::string amp;                   // --amp: "", "bf16" or "f16"
  int64_t accumulate = 1;            // --accumulate: batches per optimiser step
};

const char* kUsage =
    "usage: train-mnist [options]\n"
    "Trains a model on Fashion-MNIST with AdamW; every op is a Tritium kernel.\n"
    "  --model mlp|cnn     mlp: 784-512-512-10 with ReLU (the default); cnn: two stages of\n"
    "                      conv 3x3 (32, then 64 channels)-batchnorm-relu-maxpool 2x2, then\n"
    "                      linear 3136-128-relu-10\n"
    "  --epochs N          epochs, 0 to 10000 (default 5)\n"
    "  --batch-size B      batch size, 1 to 60000 (default 128)\n"
    "  --lr LR             AdamW learning rate, above 0 and at most 10 (default 1e-3 for the\n"
    "                      mlp, 2e-3 for the cnn)\n"
    "  --schedule S        cosine (the default: the learning rate anneals from LR to 0 over the\n"
    "                      run's steps, PyTorch's CosineAnnealingLR stepped every batch) or\n"
    "                      constant\n"
    "  --weight-decay WD   AdamW weight decay, 0 to 10 (default 1e-2)\n"
    "  --seed S            seed of the initialisation and the shuffling, 0 to 2^64 - 1 (default 0)\n"
    "  --data DIR          the IDX files (default /usr/share/datasets/fashion-mnist, from\n"
    "                      Debian's dataset-fashion-mnist package)\n"
    "  --backend DEVICE    where to run: cpu, cuda or cuda:N (default cpu)\n"
    "  --limit-batches K   train on at most K batches per epoch, 1 to 2^31 - 1 (quick runs)\n"
    "  --tf32              fp32 matmuls on tf32 tensor cores on a GPU (PyTorch's\n"
    "                      set_float32_matmul_precision(\"high\"); default: exact fp32)\n"
    "  --amp bf16|f16      mixed precision (docs/amp.md): the forward under nn::autocast, matmuls\n"
    "                      in bf16 or f16, f32 master weights; f16 scales the loss (GradScaler)\n"
    "  --accumulate N      gradient accumulation: each batch's loss / N, one optimiser step every\n"
    "                      N batches (and at an epoch's end), 1 to 1024 (default 1)\n"
    "  --save PATH         after training, write the model to PATH and the optimiser's state\n"
    "                      to PATH.optim (safetensors, PyTorch's state_dict names)\n"
    "  --load PATH         before training, read the model from PATH and, when training\n"
    "                      (--epochs above 0), the optimiser from PATH.optim; with --epochs 0\n"
    "                      the loaded model is only evaluated\n"
    "  --workers N         data-loading threads, 0 to 64 (default 1; 0 loads each batch on the\n"
    "                      training thread)\n"
    "  --profile FILE      profile 5 training steps after 3 warm-up steps: write their Chrome\n"
    "                      trace (Perfetto) to FILE and print the top 15 ops and kernels\n"
    "  --log FILE          log loss, lr, samples/s and memory per step as JSON lines to FILE,\n"
    "                      and plot them at the end in FILE.svg\n"
    "  --help              this text\n"
    "Under tritium-run (WORLD_SIZE set) it trains data-parallel (docs/distributed.md): one process\n"
    "per rank (on cuda, device LOCAL_RANK, NCCL; on cpu, Gloo), --batch-size the global batch split\n"
    "evenly over the ranks (each reads its DistributedSampler's share), the model wrapped in\n"
    "DistributedDataParallel; rank 0 prints, logs, profiles and saves.\n"
    "Mistakes in the options, and errors while running, end the program with one line on\n"
    "stderr and exit status 2.\n";

Config parse(int argc, char** argv) {
  Config c;
  cli::Args args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& o = args.option();
    if (args.is("--tf32")) c.tf32 = true;
    else if (args.is("--epochs")) c.epochs = static_cast<int>(cli::parse_int(o, args.value(), 0, 10000));
    else if (args.is("--batch-size")) c.batch_size = cli::parse_int(o, args.value(), 1, 60000);
    else if (args.is("--lr")) {
      c.lr = cli::parse_double(o, args.value(), 0, 10);
      if (c.lr == 0) throw cli::UsageError("--lr: the learning rate must be above 0");
    } else if (args.is("--schedule")) {
      c.schedule = args.value();
      if (c.schedule != "cosine" && c.schedule != "constant")
        throw cli::UsageError("--schedule: expected cosine or constant, got '" + c.schedule + "'");
    } else if (args.is("--weight-decay")) c.weight_decay = cli::parse_double(o, args.value(), 0, 10);
    else if (args.is("--seed")) c.seed = cli::parse_uint64(o, args.value());
    else if (args.is("--limit-batches")) c.limit_batches = cli::parse_int(o, args.value(), 1, INT32_MAX);
    else if (args.is("--data")) c.data = args.value();
    else if (args.is("--accumulate")) c.accumulate = cli::parse_int(o, args.value(), 1, 1024);
    else if (args.is("--amp")) {
      c.amp = args.value();
      if (c.amp != "bf16" && c.amp != "f16") throw cli::UsageError("--amp: expected bf16 or f16, got '" + c.amp + "'");
    }
    else if (args.is("--model")) {
      c.model = args.value();
      if (c.model != "mlp" && c.model != "cnn")
        throw cli::UsageError("--model: expected one of mlp, cnn, got '" + c.model + "'");
    } else if (args.is("--save")) c.save_path = args.value();
    else if (args.is("--load")) c.load_path = args.value();
    else if (args.is("--workers")) c.workers = static_cast<int>(cli::parse_int(o, args.value(), 0, 64));
    else if (args.is("--profile")) c.profile_path = args.value();
    else if (args.is("--log")) c.log_path = args.value();
    else if (args.is("--backend")) c.backend = cli::parse_device(o, args.value()).str();
    else args.unknown();
  }
  return c;
}

// The models, from the library's modules. Both take the loader's [N, 784] images; the CNN
// unflattens them to [N, 1, 28, 28] as its first layer. The children are named so that a
// checkpoint's keys say what they are ("conv1.weight", "bn1.running_mean", ...).
nn::Sequential make_mlp(Generator& gen) {
  return nn::Sequential(nn::Linear(784, 512, true, gen), nn::ReLU(), nn::Linear(512, 512, true, gen), nn::ReLU(),
                        nn::Linear(512, 10, true, gen));
}

nn::Sequential make_cnn(Generator& gen) {
  auto conv = [&](int64_t in, int64_t out) {
    return std::make_shared<nn::Conv2d>(in, out, 3, 1, 1, 1, 1, true, "zeros", gen);
  };
  return nn::Sequential(std::vector<nn::NamedModule>{
      {"unflatten", std::make_shared<nn::Unflatten>(1, std::vector<int64_t>{1, 28, 28})},
      {"conv1", conv(1, 32)},
      {"bn1", std::make_shared<nn::BatchNorm2d>(32)},
      {"relu1", std::make_shared<nn::ReLU>()},
      {"pool1", std::make_shared<nn::MaxPool2d>(Ints{2})},
      {"conv2", conv(32, 64)},
      {"bn2", std::make_shared<nn::BatchNorm2d>(64)},
      {"relu2", std::make_shared<nn::ReLU>()},
      {"pool2", std::make_shared<nn::MaxPool2d>(Ints{2})},
      {"flatten", std::make_shared<nn::Flatten>()},
      {"fc1", std::make_shared<nn::Linear>(64 * 7 * 7, 128, true, gen)},
      {"relu3", std::make_shared<nn::ReLU>()},
      {"fc2", std::make_shared<nn::Linear>(128, 10, true, gen)},
  });
}

// Checkpoints carry the model's name in their metadata, so that loading one of the other model
// says so instead of listing every missing key.
constexpr const char* kModelKey = "train-mnist.model";

std::string optimizer_path(const std::string& model_path) { return model_path + ".optim"; }

void load_checkpoint(const Config& cfg, nn::Module& model, nn::Optimizer& optimizer, Device device) {
  io::Safetensors file = io::load_safetensors(cfg.load_path, device);
  auto it = file.metadata.find(kModelKey);
  if (it != file.metadata.end() && it->second != cfg.model)
    fail("--load {}: a checkpoint of the {} model, but --model is {} (pass --model {})", cfg.load_path, it->second,
         cfg.model, it->second);
  try {
    model.load_state_dict(nn::StateDict(file.tensors));
  } catch (const Error& e) {
    fail("--load {}: not a checkpoint of the {} model: {}", cfg.load_path, cfg.model, e.what());
  }
  if (cfg.epochs > 0) nn::load(optimizer, optimizer_path(cfg.load_path));
}

void save_checkpoint(const Config& cfg, const nn::Module& model, const nn::Optimizer& optimizer) {
  nn::save(model, cfg.save_path, {{kModelKey, cfg.model}});
  nn::save(optimizer, optimizer_path(cfg.save_path));
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Whether a progress line is drawn and not yet ended: an error ends it before its own line.
bool g_progress_open = false;

// One line on stderr, redrawn with '\r' at most 10 times a second (and at the end).
class ProgressBar {
 public:
  ProgressBar(int epoch, int epochs, int64_t total, bool shown = true)
      : epoch_(epoch), epochs_(epochs), total_(total), shown_(shown) {}
  void update(int64_t done, double loss, double samples_per_s, bool force = false) {
    if (!shown_) return;
    auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    constexpr int kWidth = 30;
    int filled = total_ ? static_cast<int>(kWidth * done / total_) : kWidth;
    std::string bar(filled, '=');
    if (filled < kWidth) bar += '>' + std::string(kWidth - filled - 1, ' ');
    std::fprintf(stderr, "\repoch %d/%d [%s] %lld/%lld  loss %.4f  %.0f samples/s ", epoch_, epochs_, bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), loss, samples_per_s);
    std::fflush(stderr);
    g_progress_open = true;
  }
  void finish() {
    if (!shown_) return;
    std::fputc('\n', stderr);
    g_progress_open = false;
  }

 private:
  int epoch_, epochs_;
  int64_t total_;
  bool shown_;
  Clock::time_point last_{};
};

// Fraction of the test set classified correctly (eval mode, no autograd).
double evaluate(nn::Module& model, nn::DataLoader& loader, Device device) {
  nn::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0, seen = 0;
  for (auto& [x, y] : loader) {
    auto pred = argmax(model(x.to(device)), 1).to_vector<int64_t>();
    auto labels = y.to_vector<int64_t>();
    for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == labels[i];
    seen += static_cast<int64_t>(labels.size());
  }
  model.train();
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
}

// ---- data parallel (issue 32): the job tritium-run started, when it did --------------------------
struct DataParallelJob {
  bool on = false;
  int rank = 0, world = 1;
  bool lead() const { return rank == 0; }
};

// Joins the job (Gloo on cpu, NCCL on cuda:LOCAL_RANK, which `device` becomes) when WORLD_SIZE is
// set; ranks other than 0 print nothing on stdout.
DataParallelJob join_data_parallel_job(const Config& cfg, Device& device) {
  DataParallelJob job;
  if (!std::getenv("WORLD_SIZE")) return job;
  dist::LaunchEnvironment env = dist::read_launch_environment();
  if (device.is_cuda()) device = Device::cuda(env.local_rank);
  dist::init_process_group(device.is_cuda() ? "nccl" : "gloo");
  job.on = true, job.rank = dist::get_rank(), job.world = dist::get_world_size();
  if (cfg.batch_size % job.world != 0)
    fail("--batch-size {} is the global batch: it must be divisible by the {} ranks", cfg.batch_size, job.world);
  if (!job.lead() && !std::freopen("/dev/null", "w", stdout)) fail("rank {}: cannot silence stdout", job.rank);
  return job;
}

int run(const Config& cfg) {
  Generator gen(cfg.seed);
  Device device = Device::parse(cfg.backend);
  const DataParallelJob job = join_data_parallel_job(cfg, device);
  auto load = [&](bool train) {
    try {
      return nn::FashionMNIST(cfg.data, train);
    } catch (const Error& e) {
      fail("{} (the data set comes from Debian's dataset-fashion-mnist package; --data DIR reads another directory)",
           e.what());
    }
  };
  nn::FashionMNIST train_set = load(/*train=*/true), test_set = load(/*train=*/false);
  // Data parallel: each rank reads its share of every epoch's permutation, batch_size / world at a time.
  std::shared_ptr<nn::DistributedSampler> shard;
  if (job.on) shard = std::make_shared<nn::DistributedSampler>(train_set.size(), job.world, job.rank, true, cfg.seed);
  nn::DataLoader train_loader(train_set, {.batch_size = cfg.batch_size / job.world, .shuffle = !shard,
                                          .sampler = shard, .num_workers = cfg.workers, .seed = cfg.seed});
  nn::DataLoader test_loader(test_set, {.batch_size = 1000, .num_workers = cfg.workers});

  // Built and initialised on the device it trains on (Philox draws the same values everywhere),
  // so a build without the CPU backend trains too.
  nn::Sequential model = [&] {
    DefaultDeviceGuard on(device);
    return cfg.model == "cnn" ? make_cnn(gen) : make_mlp(gen);
  }();
  // DDP over the model (not owned: the model outlives it); the optimiser keeps the model's parameters.
  std::unique_ptr<nn::DistributedDataParallel> ddp;
  if (job.on) ddp = std::make_unique<nn::DistributedDataParallel>(std::shared_ptr<nn::Module>(&model, [](nn::Module*) {}));
  nn::Module& net = ddp ? static_cast<nn::Module&>(*ddp) : model;
  if (cfg.tf32) tritium::ops::set_float32_matmul_precision("high");
  const double lr = cfg.lr > 0 ? cfg.lr : cfg.model == "cnn" ? 2e-3 : 1e-3;
  nn::AdamW optimizer(model.parameters(), lr, {0.9, 0.999}, 1e-8, cfg.weight_decay);
  if (!cfg.load_path.empty()) load_checkpoint(cfg, model, optimizer, device);
  // --amp f16 needs loss scaling; bf16 has f32's range and needs none (PyTorch's practice).
  nn::GradScaler scaler(device, 65536.0, 2.0, 0.5, 2000, /*enabled=*/cfg.amp == "f16");

  std::unique_ptr<profiler::StepProfiler> step_profiler;  // --profile
  if (!cfg.profile_path.empty() && job.lead()) step_profiler = std::make_unique<profiler::StepProfiler>(cfg.profile_path);
  std::unique_ptr<profiler::ScalarLog> scalar_log;  // --log
  if (!cfg.log_path.empty() && job.lead()) scalar_log = std::make_unique<profiler::ScalarLog>(cfg.log_path);
  int64_t step = 0;
  int64_t batches = train_loader.size();
  if (cfg.limit_batches > 0) batches = std::min(batches, cfg.limit_batches);
  std::printf("train-mnist: %s, %lld training and %lld test samples, %lld batches of %lld per epoch, seed %llu, "
              "fp32 matmuls %s\n",
              cfg.model.c_str(), static_cast<long long>(train_set.size()), static_cast<long long>(test_set.size()),
              static_cast<long long>(batches), static_cast<long long>(cfg.batch_size),
              static_cast<unsigned long long>(cfg.seed), cfg.tf32 ? "as tf32" : "in fp32");
  if (!cfg.amp.empty() || cfg.accumulate > 1)
    std::printf("train-mnist: autocast %s, one optimiser step every %lld batches\n",
                cfg.amp.empty() ? "off" : cfg.amp.c_str(), static_cast<long long>(cfg.accumulate));
  if (job.on)
    std::printf("train-mnist: data parallel over %d ranks (%s), %lld samples per rank and batch\n", job.world,
                dist::default_group()->backend().c_str(), static_cast<long long>(cfg.batch_size / job.world));
  std::fflush(stdout);
  // Cosine annealing over the whole run, stepped every batch (at 5 epochs the CNN ends at 92.2-92.6 %
  // in PyTorch where a constant rate ends at 91.1-91.5 %: bench/RESULTS.md, stop 39).
  std::unique_ptr<nn::CosineAnnealingLR> scheduler;
  // With --accumulate it counts optimiser steps: ceil(batches / accumulate) per epoch.
  const int64_t steps_per_epoch = (batches + cfg.accumulate - 1) / cfg.accumulate;
  if (cfg.schedule == "cosine" && cfg.epochs > 0)
    scheduler = std::make_unique<nn::CosineAnnealingLR>(optimizer, cfg.epochs * steps_per_epoch);

  double train_seconds = 0, accuracy = 0;
  int64_t train_samples = 0;
  for (int epoch = 1; epoch <= cfg.epochs; ++epoch) {
    ProgressBar bar(epoch, cfg.epochs, batches, job.lead());
    if (shard) shard->set_epoch(epoch - 1);  // a new permutation each epoch, the same on every rank
    auto start = Clock::now();
    int64_t done = 0, samples = 0;
    double loss_sum = 0;
    for (auto& [x, y] : train_loader) {
      Tensor loss;
      // Data parallel with --accumulate: the gradients are all-reduced once per optimiser step.
      const bool steps_now = (done + 1) % cfg.accumulate == 0 || done + 1 == batches;
      std::optional<nn::DistributedDataParallel::NoSyncGuard> no_sync;
      if (ddp && !steps_now) no_sync.emplace(*ddp);
      {
        nn::autocast amp(device.kind, cfg.amp == "f16" ? DType::f16 : DType::bf16, /*enabled=*/!cfg.amp.empty());
        loss = cross_entropy(net(x.to(device)), y.to(device));
      }
      // Accumulation: the gradients of N batches' loss / N add up to those of their mean.
      if (done % cfg.accumulate == 0) optimizer.zero_grad();
      scaler.scale(cfg.accumulate > 1 ? loss / static_cast<double>(cfg.accumulate) : loss).backward();
      no_sync.reset();
      if (steps_now) {
        scaler.step(optimizer);  // optimizer.step() unless f16; skipped on the device after an inf
        scaler.update();
        // The schedule counts optimiser steps (one per batch without --accumulate).
        if (scheduler) scheduler->step();
      }

      if (job.on) {  // the global batch's loss (the mean of the ranks' means), for rank 0's output
        loss = loss.detach().clone();
        dist::all_reduce(loss, dist::ReduceOp::avg);
      }
      loss_sum += loss.to_vector<float>()[0];
      samples += x.size(0) * job.world;
      ++done;
      bar.update(done, loss_sum / done, samples / seconds_since(start), done == batches);
      if (step_profiler) step_profiler->step();
      if (scalar_log)
        scalar_log->log(step, {{"loss", loss.to_vector<float>()[0]}, {"lr", optimizer.param_groups()[0].option("lr")},
                               {"samples_per_s", samples / seconds_since(start)},
                               {"memory", static_cast<double>(profiler::memory_in_use(device))}});
      ++step;
      if (done == batches) break;
    }
    double seconds = seconds_since(start);
    bar.finish();
    train_seconds += seconds, train_samples += samples;
    if (job.lead()) accuracy = evaluate(model, test_loader, device);
    std::printf("epoch %d: train loss %.4f, test accuracy %.2f%%, %.1f s (%.0f samples/s)\n", epoch,
                done ? loss_sum / done : 0.0, 100 * accuracy, seconds, samples / seconds);
    std::fflush(stdout);
  }
  if (cfg.epochs == 0) accuracy = evaluate(model, test_loader, device);  // a loaded model, only evaluated
  if (step_profiler) step_profiler->finish();
  if (scalar_log) profiler::write_scalar_plots(scalar_log->records(), "train-mnist " + cfg.model, cfg.log_path + ".svg");
  if (!cfg.save_path.empty() && job.lead()) {
    save_checkpoint(cfg, model, optimizer);
    std::printf("saved the model to %s and the optimiser to %s\n", cfg.save_path.c_str(),
                optimizer_path(cfg.save_path).c_str());
  }
  std::printf("final: test accuracy %.2f%%, mean throughput %.0f samples/s\n", 100 * accuracy,
              train_seconds > 0 ? train_samples / train_seconds : 0.0);
  if (job.on) dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return cli::run_main("train-mnist", [&] {
    Config cfg = parse(argc, argv);
    Device device = Device::parse(cfg.backend);
    if (device.is_cuda() && !runtime::device_available(device)) {
      std::fprintf(stderr, "train-mnist: the CUDA backend is unavailable: %s\n",
                   runtime::device_unavailable_reason(device).c_str());
      return 2;
    }
    if (!runtime::device_available(device)) {
      std::fprintf(stderr, "train-mnist: skipped: the CPU backend is unavailable: %s\n",
                   runtime::device_unavailable_reason(device).c_str());
      return 77;
    }
    try {
      return run(cfg);
    } catch (...) {
      if (g_progress_open) std::fputc('\n', stderr);
      throw;
    }
  });
}
