// train-gpt: a byte-level GPT (nn/gpt.h) trained on Debian's fortune databases (nn/text_corpus.h)
// with AdamW, a linear warm-up and a cosine decay of the learning rate (LinearLR then
// CosineAnnealingLR), periodic held-out evaluation against the unigram model's loss, gradient
// accumulation and checkpointing, a scalar log, resumable checkpoints (--save / --save-every /
// --resume; --load reads the model only) and generated text at the end. `./run.sh --model gpt [options]` runs it. Every operation of the forward pass, the
// backward pass, the optimiser step and the sampling is a Tritium kernel. --help lists the options.
// Under tritium-run it trains data-parallel (DistributedDataParallel; docs/gpt.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <tritium/tritium.h>

#include "tools/cli.h"

#include "dist/distributed.h"
#include "io/safetensors.h"
#include "nn/autograd.h"
#include "nn/autocast.h"
#include "nn/ddp.h"
#include "nn/functional.h"
#include "nn/gpt.h"
#include "nn/grad_scaler.h"
#include "nn/lr_scheduler_warmup_cosine.h"
#include "nn/optim.h"
#include "nn/serialize.h"
#include "nn/text_corpus.h"
#include "ops/rng_state.h"
#include "profiler/scalar_log.h"
#include "profiler/step_profiler.h"
#include "runtime/memory_stats.h"
#include "tools/train_gpt_checkpoint.h"

using namespace tritium;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  int64_t layers = -1, width = -1, heads = -1, context = -1, batch_size = -1, steps = -1;  // -1: the device's default
  double lr = -1, min_lr = -1, weight_decay = 0.1, dropout = 0.0, max_minutes = 0;
  int64_t warmup = -1, eval_every = -1, eval_batches = 20;
  uint64_t seed = 0;
  std::string backend = "cpu";
  std::string corpus = nn::TextCorpus::default_fortunes_dir();
  std::string save_path, load_path, resume_path;
  int64_t save_every = 0;    // --save-every: 0 saves at the end only
  int64_t stop_after = -1;   // --stop-after: end training after this step (-1: at --steps)
  int64_t accumulate = 1;    // --accumulate: batches per optimiser step
  bool checkpoint = false;   // --checkpoint: activation checkpointing of every block
  int64_t checkpoint_blocks = -1;  // --checkpoint-blocks: of the first N only (-1: all)
  bool memory_summary = false, print_losses = false;
  std::string log_path;      // --log: empty for none
  int workers = -1;          // --workers: the DataLoader's threads; -1: nanoGPT's get_batch
  bool tf32 = false;
  std::string amp;           // --amp: "", "bf16" or "f16"
  std::string profile_path;  // --profile: empty for none
  int64_t generate = 300;
  std::string prompt = "The ";
  double temperature = 0.8, top_p = 1.0;
  int64_t top_k = 40;
};

const char* kUsage =
    "usage: train-gpt [options]   (./run.sh --model gpt [options])\n"
    "Trains a byte-level GPT on Debian's fortune databases with AdamW (warm-up, then cosine decay of\n"
    "the learning rate), evaluates it on held-out fortunes and prints generated text; every op is a\n"
    "Tritium kernel. Defaults in brackets: CPU / GPU.\n"
    "  --layers N          transformer blocks [4 / 6]\n"
    "  --width C           embedding width, divisible by --heads [128 / 384]\n"
    "  --heads H           attention heads [4 / 6]\n"
    "  --context T         context length in bytes [64 / 256]\n"
    "  --batch-size B      sequences per batch [16 / 64]\n"
    "  --accumulate N      gradient accumulation: N batches per optimiser step, each batch's loss / N\n"
    "                      (the gradient of their mean over N x B sequences; default 1)\n"
    "  --steps N           optimiser steps in all, those before a --resume included (the schedule\n"
    "                      spans them); 0 evaluates and generates only [1500 / 5000]\n"
    "  --max-minutes M     also stop training after M minutes (0: no limit; default 0)\n"
    "  --lr LR             peak learning rate [2e-3 / 1e-3]; --min-lr the cosine's end [lr / 10]\n"
    "  --warmup N          linear warm-up steps [100 / 100]\n"
    "  --weight-decay WD   AdamW's, on the matrices only (nanoGPT's groups; default 0.1)\n"
    "  --dropout P         dropout after the embeddings, attention and MLP outputs (default 0)\n"
    "  --eval-every N      held-out evaluation every N steps [250 / 250]; --eval-batches N (default 20)\n"
    "  --seed S            initialisation, batches, dropout and sampling (default 0)\n"
    "  --device DEVICE     cpu, cuda or cuda:N (default cpu; --backend is the same option)\n"
    "  --tf32              fp32 matmuls on tf32 tensor cores on a GPU\n"
    "  --amp bf16|f16      mixed precision (docs/amp.md): the forward under nn::autocast, f32\n"
    "                      master weights; f16 scales the loss (GradScaler)\n"
    "  --checkpoint        gradient checkpointing of every transformer block: the forward keeps only\n"
    "                      the blocks' inputs and backward recomputes the rest (the same gradients,\n"
    "                      less activation memory, about one more forward per step)\n"
    "  --checkpoint-blocks N\n"
    "                      checkpoint the first N blocks only (the last ones' recomputation would\n"
    "                      come first in backward: less extra time, less saving)\n"
    "  --profile FILE      profile 5 training steps after 3 warm-up steps: their Chrome trace\n"
    "                      (Perfetto) to FILE and the top 15 ops and kernels to stdout\n"
    "  --log FILE          JSON lines to FILE: loss, lr, tokens/s and memory per step and the\n"
    "                      held-out loss of each evaluation; their plots in FILE.svg at the end\n"
    "  --memory-summary    the device's memory statistics after the first step and at the end\n"
    "  --print-losses      each step's loss on stdout, exactly (to compare runs)\n"
    "  --corpus DIR        the fortune files (default /usr/share/games/fortunes, Debian's fortunes)\n"
    "  --workers N         batches through nn::DataLoader: every training window once per epoch in\n"
    "                      a shuffled order, loaded by N threads ahead (0: on the training thread);\n"
    "                      default: nanoGPT's random windows, drawn on the training thread\n"
    "  --save PATH         after training, a checkpoint to PATH: one safetensors file with the model,\n"
    "                      AdamW, the schedule, the GradScaler, the random generators and the data\n"
    "                      position (docs/gpt.md)\n"
    "  --save-every N      also save it every N steps (needs --save)\n"
    "  --stop-after N      end training after step N as if interrupted (the schedule still spans\n"
    "                      --steps; with --save, a checkpoint to --resume from)\n"
    "  --resume PATH       continue the run whose --save checkpoint PATH is, with the same options:\n"
    "                      the steps after it compute what the uninterrupted run does, bit for bit\n"
    "  --load PATH         before training, the model alone of a --save checkpoint (the same\n"
    "                      architecture options): to evaluate and generate, or to train anew from\n"
    "  --generate N        bytes generated at the end (default 300; 0: none)\n"
    "  --prompt TEXT       their prompt (default 'The ')\n"
    "  --temperature T     sampling temperature, 0 for greedy (default 0.8)\n"
    "  --top-k K           keep the K most likely bytes, 0 all (default 40); --top-p P (default 1)\n"
    "  --help              this text\n"
    "Data parallel: under tritium-run (tritium-run --nproc-per-node N train-gpt ...) one process per\n"
    "rank (on cuda, device LOCAL_RANK and NCCL; on cpu, Gloo), --batch-size the global batch split\n"
    "evenly over the ranks, the model wrapped in DistributedDataParallel (--accumulate's inner\n"
    "batches under no_sync); rank 0 alone prints, evaluates, logs, profiles, saves and generates.\n"
    "--resume takes a checkpoint of any world size (the data position is global).\n"
    "Mistakes in the options, and errors while running, end the program with one line on\n"
    "stderr and exit status 2.\n";

Config parse(int argc, char** argv) {
  Config c;
  cli::Args args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& o = args.option();
    if (args.is("--layers")) c.layers = cli::parse_int(o, args.value(), 1, 256);
    else if (args.is("--width")) c.width = cli::parse_int(o, args.value(), 1, 65536);
    else if (args.is("--heads")) c.heads = cli::parse_int(o, args.value(), 1, 1024);
    else if (args.is("--context")) c.context = cli::parse_int(o, args.value(), 1, 65536);
    else if (args.is("--batch-size")) c.batch_size = cli::parse_int(o, args.value(), 1, 1 << 20);
    else if (args.is("--steps")) c.steps = cli::parse_int(o, args.value(), 0, INT32_MAX);
    else if (args.is("--max-minutes")) c.max_minutes = cli::parse_double(o, args.value(), 0, 1e6);
    else if (args.is("--lr") || args.is("--min-lr")) {
      double v = cli::parse_double(o, args.value(), 0, 10);
      if (args.is("--lr") && v == 0) throw cli::UsageError("--lr: the learning rate must be above 0");
      (args.is("--lr") ? c.lr : c.min_lr) = v;
    } else if (args.is("--warmup")) c.warmup = cli::parse_int(o, args.value(), 0, INT32_MAX);
    else if (args.is("--weight-decay")) c.weight_decay = cli::parse_double(o, args.value(), 0, 10);
    else if (args.is("--dropout")) {
      c.dropout = cli::parse_double(o, args.value(), 0, 1);
      if (c.dropout == 1) throw cli::UsageError("--dropout: expected a probability below 1");
    } else if (args.is("--eval-every")) c.eval_every = cli::parse_int(o, args.value(), 1, INT32_MAX);
    else if (args.is("--eval-batches")) c.eval_batches = cli::parse_int(o, args.value(), 1, 100000);
    else if (args.is("--seed")) c.seed = cli::parse_uint64(o, args.value());
    else if (args.is("--device") || args.is("--backend")) c.backend = cli::parse_device(o, args.value()).str();
    else if (args.is("--tf32")) c.tf32 = true;
    else if (args.is("--amp")) {
      c.amp = args.value();
      if (c.amp != "bf16" && c.amp != "f16") throw cli::UsageError("--amp: expected bf16 or f16, got '" + c.amp + "'");
    } else if (args.is("--profile")) c.profile_path = args.value();
    else if (args.is("--corpus")) c.corpus = args.value();
    else if (args.is("--save")) c.save_path = args.value();
    else if (args.is("--load")) c.load_path = args.value();
    else if (args.is("--resume")) c.resume_path = args.value();
    else if (args.is("--save-every")) c.save_every = cli::parse_int(o, args.value(), 1, INT32_MAX);
    else if (args.is("--stop-after")) c.stop_after = cli::parse_int(o, args.value(), 0, INT32_MAX);
    else if (args.is("--accumulate")) c.accumulate = cli::parse_int(o, args.value(), 1, 1024);
    else if (args.is("--checkpoint")) c.checkpoint = true;
    else if (args.is("--checkpoint-blocks")) c.checkpoint = true, c.checkpoint_blocks = cli::parse_int(o, args.value(), 0, 256);
    else if (args.is("--memory-summary")) c.memory_summary = true;
    else if (args.is("--print-losses")) c.print_losses = true;
    else if (args.is("--log")) c.log_path = args.value();
    else if (args.is("--workers")) c.workers = static_cast<int>(cli::parse_int(o, args.value(), 0, 64));
    else if (args.is("--generate")) c.generate = cli::parse_int(o, args.value(), 0, 1 << 20);
    else if (args.is("--prompt")) c.prompt = args.value();
    else if (args.is("--temperature")) c.temperature = cli::parse_double(o, args.value(), 0, 100);
    else if (args.is("--top-k")) c.top_k = cli::parse_int(o, args.value(), 0, nn::TextCorpus::vocab_size);
    else if (args.is("--top-p")) {
      c.top_p = cli::parse_double(o, args.value(), 0, 1);
      if (c.top_p == 0) throw cli::UsageError("--top-p: expected a number in (0, 1]");
    } else if (args.is("--model")) {
      std::string m = args.value();  // run.sh passes --model gpt through
      if (m != "gpt") throw cli::UsageError("--model: train-gpt trains the gpt model, got '" + m + "'");
    } else args.unknown();
  }
  // The device's defaults: a model that learns in minutes on 2 CPU cores, nanoGPT's character
  // model (6 x 384, 6 heads, context 256) on a GPU.
  const bool gpu = Device::parse(c.backend).is_cuda();
  auto pick = [&](auto& v, auto cpu, auto cuda) {
    if (v < 0) v = gpu ? cuda : cpu;
  };
  pick(c.layers, 4, 6), pick(c.width, 128, 384), pick(c.heads, 4, 6), pick(c.context, 64, 256);
  pick(c.batch_size, 16, 64), pick(c.steps, 1500, 5000), pick(c.lr, 2e-3, 1e-3), pick(c.warmup, 100, 100);
  pick(c.eval_every, 250, 250);
  if (c.min_lr < 0) c.min_lr = c.lr / 10;
  if (c.width % c.heads != 0)
    throw cli::UsageError(fmt::format("--width ({}) must be divisible by --heads ({})", c.width, c.heads));
  if (static_cast<int64_t>(c.prompt.size()) > c.context)
    throw cli::UsageError(fmt::format("--prompt: {} bytes, longer than the context ({})", c.prompt.size(), c.context));
  if (c.prompt.empty()) throw cli::UsageError("--prompt: give at least one byte");
  if (c.checkpoint_blocks > c.layers)
    throw cli::UsageError(fmt::format("--checkpoint-blocks {}: the model has {} blocks", c.checkpoint_blocks, c.layers));
  if (c.save_every > 0 && c.save_path.empty()) throw cli::UsageError("--save-every: give --save PATH too");
  if (!c.resume_path.empty() && !c.load_path.empty())
    throw cli::UsageError("--resume and --load: give one (--resume continues a run, --load reads a model only)");
  return c;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A checkpoint's architecture, so that loading another model's checkpoint says so.
std::string architecture(const Config& c) {
  return fmt::format("layers={},width={},heads={},context={},vocab={}", c.layers, c.width, c.heads, c.context,
                     nn::TextCorpus::vocab_size);
}

// The options that shape a run's trajectory: --resume needs the same ones (not --checkpoint,
// which changes no value, nor the evaluation, logging and generation options).
std::string training_options(const Config& c) {
  return fmt::format("batch-size={},accumulate={},steps={},lr={},min-lr={},warmup={},weight-decay={},dropout={},"
                     "amp={},seed={},data={}",
                     c.batch_size, c.accumulate, c.steps, c.lr, c.min_lr, c.warmup, c.weight_decay, c.dropout,
                     c.amp.empty() ? "off" : c.amp, c.seed, c.workers >= 0 ? "loader" : "get_batch");
}

// Mean loss over `batches` windows of a split, drawn from a generator of a fixed seed (the same
// windows at every evaluation), in eval mode without autograd.
double evaluate(nn::GPT& model, const nn::TextCorpus& corpus, nn::TextCorpus::Split split, const Config& c,
                Device device) {
  nn::NoGradGuard no_grad;
  model.eval();
  Generator gen(c.seed + 1000003);
  double sum = 0;
  for (int64_t i = 0; i < c.eval_batches; ++i) {
    auto [x, y] = corpus.get_batch(split, c.batch_size, c.context, gen, device);
    sum += model.loss(x, y).to(DType::f32).to_vector<float>()[0];
  }
  model.train();
  return sum / static_cast<double>(c.eval_batches);
}

bool g_progress_open = false;

// ---- data parallel (issue 32): the job tritium-run started, when it did --------------------------
struct DataParallelJob {
  bool on = false;
  int rank = 0, world = 1;
  bool lead() const { return rank == 0; }
};

// Joins the job (Gloo on cpu, NCCL on cuda:LOCAL_RANK, which `device` becomes) when WORLD_SIZE is
// set; ranks other than 0 print nothing on stdout.
DataParallelJob join_data_parallel_job(const Config& c, Device& device) {
  DataParallelJob job;
  if (!std::getenv("WORLD_SIZE")) return job;
  dist::LaunchEnvironment env = dist::read_launch_environment();
  if (device.is_cuda()) device = Device::cuda(env.local_rank);
  dist::init_process_group(device.is_cuda() ? "nccl" : "gloo");
  job.on = true, job.rank = dist::get_rank(), job.world = dist::get_world_size();
  if (c.batch_size % job.world != 0)
    fail("--batch-size {} is the global batch: it must be divisible by the {} ranks", c.batch_size, job.world);
  if (!job.lead() && !std::freopen("/dev/null", "w", stdout)) fail("rank {}: cannot silence stdout", job.rank);
  return job;
}

// The GPT's loss as a module's forward (x, y) -> loss, so that DistributedDataParallel's forward
// (which prepares the reduction of the backward that follows) runs GPT::loss.
class GPTLoss : public nn::Module {
 public:
  explicit GPTLoss(std::shared_ptr<nn::GPT> gpt) : gpt_(register_module("gpt", std::move(gpt))) {}
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override {
    if (inputs.size() != 2) fail("GPTLoss: expected (tokens, targets), got {} inputs", inputs.size());
    return {gpt_->loss(inputs[0], inputs[1])};
  }
  std::string type_name() const override { return "GPTLoss"; }

 private:
  std::shared_ptr<nn::GPT> gpt_;
};

int run(const Config& c) {
  Device device = Device::parse(c.backend);
  const DataParallelJob job = join_data_parallel_job(c, device);
  auto corpus_ptr = std::make_shared<const nn::TextCorpus>(nn::TextCorpus::fortunes(c.corpus));
  const nn::TextCorpus& corpus = *corpus_ptr;
  const double unigram = corpus.unigram_held_out_loss();
  if (c.context + 1 > corpus.size(nn::TextCorpus::Split::held_out))
    fail("--context {}: the held-out split has only {} bytes", c.context, corpus.size(nn::TextCorpus::Split::held_out));

  Generator init_gen(c.seed);
  // Built and initialised on the training device (a CUDA-only build has no CPU kernels).
  DefaultDeviceGuard on_device(device);
  auto model_ptr = std::make_shared<nn::GPT>(
      nn::GPTConfig{.vocab_size = nn::TextCorpus::vocab_size, .block_size = c.context, .n_layer = c.layers,
                    .n_head = c.heads, .n_embd = c.width, .dropout = c.dropout, .bias = true,
                    .gradient_checkpointing = c.checkpoint, .checkpoint_blocks = c.checkpoint_blocks},
      init_gen);
  nn::GPT& model = *model_ptr;
  model.to(device);
  if (c.tf32) ops::set_float32_matmul_precision("high");
  // nanoGPT's groups: weight decay on the matrices (dim >= 2), none on biases and LayerNorms.
  // One optimiser, two parameter groups (each group one multi-tensor launch per dtype).
  nn::ParamGroup decay, no_decay;
  for (auto& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).params.push_back(p);
  no_decay.options["weight_decay"] = 0.0;
  nn::AdamW opt({decay, no_decay}, c.lr, {0.9, 0.99}, 1e-8, c.weight_decay);
  // Linear warm-up to lr, then a cosine down to min_lr at the last step (LinearLR, then
  // CosineAnnealingLR, through SequentialLR), stepped after each optimiser step.
  std::shared_ptr<nn::LRScheduler> scheduler;
  if (c.steps > 0) scheduler = nn::warmup_cosine_lr(opt, c.warmup, c.steps, c.min_lr);
  // --amp f16 needs loss scaling; bf16 has f32's range and needs none (PyTorch's practice).
  nn::GradScaler scaler(device, 65536.0, 2.0, 0.5, 2000, /*enabled=*/c.amp == "f16");
  std::unique_ptr<profiler::StepProfiler> step_profiler;
  if (!c.profile_path.empty() && job.lead()) step_profiler = std::make_unique<profiler::StepProfiler>(c.profile_path);
  std::unique_ptr<profiler::ScalarLog> scalar_log;
  if (!c.log_path.empty() && job.lead()) scalar_log = std::make_unique<profiler::ScalarLog>(c.log_path);

  // The random streams: batches (their generator's position is the data position) and dropout
  // (the default generator, which nn::Dropout draws from; one generator serves every device).
  Generator batch_gen(c.seed + 1);
  Generator& dropout_gen = ops::default_generator();
  dropout_gen.manual_seed(c.seed + 2);
  train_gpt::RunState state{model, opt, scheduler.get(), scaler, batch_gen, dropout_gen};
  train_gpt::Progress progress;
  if (!c.load_path.empty()) train_gpt::load_model(c.load_path, model, architecture(c));
  if (!c.resume_path.empty()) {
    progress = train_gpt::resume_checkpoint(c.resume_path, state, architecture(c), training_options(c));
    std::printf("resumed %s after step %lld\n", c.resume_path.c_str(), static_cast<long long>(progress.step));
  }
  // The batches, from the data position the run is at (a global position: any world size).
  train_gpt::TrainBatches batches(corpus_ptr, c.batch_size, c.context, c.workers, c.seed + 1, batch_gen, device,
                                  progress.data, job.world, job.rank);
  auto save = [&] {
    if (job.lead()) train_gpt::save_checkpoint(c.save_path, state, progress, architecture(c), training_options(c));
  };
  // Data parallel: the loss through DistributedDataParallel (rank 0's parameters broadcast, the
  // gradients averaged over the ranks during backward); the optimiser keeps the model's parameters.
  std::shared_ptr<GPTLoss> loss_module;
  std::unique_ptr<nn::DistributedDataParallel> ddp;
  if (job.on) {
    loss_module = std::make_shared<GPTLoss>(model_ptr);
    ddp = std::make_unique<nn::DistributedDataParallel>(loss_module);
  }

  std::printf("train-gpt: %lld layers, width %lld, %lld heads, context %lld, %.2fM parameters, on %s%s\n",
              static_cast<long long>(c.layers), static_cast<long long>(c.width), static_cast<long long>(c.heads),
              static_cast<long long>(c.context), static_cast<double>(model.num_parameters_without_positions()) / 1e6,
              device.str().c_str(),
              !c.checkpoint                ? ""
              : c.checkpoint_blocks < 0 ? ", blocks checkpointed"
                                        : fmt::format(", {} blocks checkpointed", c.checkpoint_blocks).c_str());
  std::printf("corpus: %s, %lld training bytes (%lld fortunes), %lld held-out bytes (%lld fortunes)\n",
              c.corpus.c_str(), static_cast<long long>(corpus.size(nn::TextCorpus::Split::train)),
              static_cast<long long>(corpus.documents(nn::TextCorpus::Split::train)),
              static_cast<long long>(corpus.size(nn::TextCorpus::Split::held_out)),
              static_cast<long long>(corpus.documents(nn::TextCorpus::Split::held_out)));
  std::printf("unigram model's held-out loss: %.4f (uniform over bytes: %.4f)\n", unigram, std::log(256.0));
  std::printf("batch %lld x %lld tokens%s, %lld steps, lr %.3g -> %.3g (warm-up %lld), weight decay %.3g, seed %llu\n",
              static_cast<long long>(c.batch_size), static_cast<long long>(c.context),
              c.accumulate > 1 ? fmt::format(" x {} accumulated", c.accumulate).c_str() : "",
              static_cast<long long>(c.steps), c.lr, c.min_lr, static_cast<long long>(c.warmup), c.weight_decay,
              static_cast<unsigned long long>(c.seed));
  if (job.on)
    std::printf("data parallel over %d ranks (%s), %lld sequences per rank and batch\n", job.world,
                dist::default_group()->backend().c_str(), static_cast<long long>(c.batch_size / job.world));
  std::fflush(stdout);

  auto start = Clock::now();
  auto last_draw = start - std::chrono::seconds(1);
  double held_out = NAN;
  const int64_t start_step = progress.step;
  int64_t tokens_seen = 0;
  double eval_seconds = 0;  // tokens/s counts training time only
  auto train_seconds_so_far = [&] { return std::max(1e-9, seconds_since(start) - eval_seconds); };
  auto report = [&] {
    if (!job.lead()) return;  // rank 0 alone evaluates
    auto eval_start = Clock::now();
    held_out = evaluate(model, corpus, nn::TextCorpus::Split::held_out, c, device);
    eval_seconds += seconds_since(eval_start);
    if (g_progress_open) std::fputc('\n', stderr), g_progress_open = false;
    std::string train_loss = progress.step > 0 ? fmt::format("train loss {:.4f}, ", progress.loss_ema) : std::string();
    std::printf("step %lld: %sheld-out loss %.4f (unigram %.4f), %.1f s, %.0f tokens/s\n",
                static_cast<long long>(progress.step), train_loss.c_str(), held_out, unigram, seconds_since(start),
                tokens_seen / train_seconds_so_far());
    std::fflush(stdout);
    if (scalar_log) scalar_log->log(progress.step, {{"held_out_loss", held_out}});
  };
  auto print_memory = [&](const char* when) {
    std::printf("memory %s:\n%s", when, memory_summary(device).c_str());
    std::fflush(stdout);
  };
  // --steps counts from the start of the run: a resumed checkpoint's steps are done already.
  const int64_t last = c.stop_after >= 0 ? std::min(c.stop_after, c.steps) : c.steps;
  const double accumulate = static_cast<double>(c.accumulate);
  reset_peak_memory_stats(device);
  while (progress.step < last) {
    if (c.max_minutes > 0 && seconds_since(start) > 60 * c.max_minutes) {
      std::printf("stopping after %.1f minutes (--max-minutes)\n", seconds_since(start) / 60);
      break;
    }
    const double lr = opt.param_groups()[0].option("lr");
    opt.zero_grad();
    // Accumulation: the gradients of N batches' loss / N add up to those of their mean.
    double loss_sum = 0;
    for (int64_t micro = 0; micro < c.accumulate; ++micro) {
      auto [x, y] = batches.next();
      Tensor loss;
      {
        // Data parallel: the inner batches' forwards under no_sync, so that only the last
        // backward reduces (the sum of the accumulated gradients).
        std::optional<nn::DistributedDataParallel::NoSyncGuard> no_sync;
        if (ddp && micro + 1 < c.accumulate) no_sync.emplace(*ddp);
        nn::autocast amp(device.kind, c.amp == "f16" ? DType::f16 : DType::bf16, /*enabled=*/!c.amp.empty());
        loss = ddp ? ddp->forward_many({x, y})[0] : model.loss(x, y);
      }
      scaler.scale(c.accumulate > 1 ? loss / accumulate : loss).backward();
      loss_sum += loss.to(DType::f32).to_vector<float>()[0];
    }
    if (job.on) {  // the global batch's loss: the mean of the ranks' means
      Tensor global = Tensor::from_vector<double>({loss_sum}, {1}, device);
      dist::all_reduce(global, dist::ReduceOp::avg);
      loss_sum = global.to_vector<double>()[0];
    }
    scaler.step(opt);  // opt.step() unless f16; skipped on the device after an inf
    scaler.update();
    if (scheduler) scheduler->step();
    if (step_profiler) step_profiler->step();
    progress.data = batches.position();
    const double l = loss_sum / accumulate;
    progress.loss_ema = progress.step == 0 ? l : 0.95 * progress.loss_ema + 0.05 * l;
    ++progress.step;
    tokens_seen += c.accumulate * c.batch_size * c.context;
    if (c.print_losses) std::printf("loss %lld %.17g\n", static_cast<long long>(progress.step), l);
    if (scalar_log)
      scalar_log->log(progress.step, {{"loss", l},
                                      {"lr", lr},
                                      {"tokens_per_s", tokens_seen / train_seconds_so_far()},
                                      {"memory_allocated", static_cast<double>(memory_allocated(device))},
                                      {"max_memory_allocated", static_cast<double>(max_memory_allocated(device))}});
    if (c.memory_summary && progress.step == start_step + 1) print_memory("after the first step");
    if (job.lead() && (Clock::now() - last_draw > std::chrono::milliseconds(200) || progress.step == last)) {
      last_draw = Clock::now();
      constexpr int kWidth = 24;
      int filled = static_cast<int>(kWidth * progress.step / c.steps);
      std::string bar(filled, '=');
      if (filled < kWidth) bar += '>' + std::string(kWidth - filled - 1, ' ');
      std::fprintf(stderr, "\rstep %lld/%lld [%s] loss %.4f  lr %.2e  %.0f tokens/s ",
                   static_cast<long long>(progress.step), static_cast<long long>(c.steps), bar.c_str(),
                   progress.loss_ema, lr, tokens_seen / train_seconds_so_far());
      std::fflush(stderr);
      g_progress_open = true;
    }
    if (progress.step % c.eval_every == 0) report();
    if (c.save_every > 0 && progress.step % c.save_every == 0 && progress.step < last) save();
  }
  const double train_seconds = seconds_since(start) - eval_seconds;
  const int64_t steps_run = progress.step - start_step;
  if (step_profiler) step_profiler->finish();
  if (progress.step % c.eval_every != 0 || steps_run == 0) report();
  if (c.memory_summary) print_memory("at the end");
  if (scalar_log) profiler::write_scalar_plots(scalar_log->records(), "train-gpt", c.log_path + ".svg");
  if (!c.save_path.empty() && job.lead()) {
    save();
    std::printf("saved the checkpoint of step %lld to %s\n", static_cast<long long>(progress.step),
                c.save_path.c_str());
  }
  if (c.generate > 0 && job.lead()) {
    nn::GenerationConfig g{.max_new_tokens = c.generate, .temperature = c.temperature > 0 ? c.temperature : 1.0,
                           .top_k = c.top_k, .top_p = c.top_p, .greedy = c.temperature == 0, .seed = c.seed};
    Tensor out = model.generate(nn::TextCorpus::encode(c.prompt), g);
    std::printf("generated (temperature %.2f, top-k %lld, top-p %.2f):\n%s\n", c.temperature,
                static_cast<long long>(c.top_k), c.top_p,
                nn::TextCorpus::decode(out.to_vector<int64_t>()).c_str());
  }
  std::printf("final: held-out loss %.4f (unigram %.4f), %lld steps in %.1f s, %.0f tokens/s\n", held_out, unigram,
              static_cast<long long>(steps_run), train_seconds, train_seconds > 0 ? tokens_seen / train_seconds : 0.0);
  std::fflush(stdout);
  ddp.reset();
  if (job.on) dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return cli::run_main("train-gpt", [&] {
    Config cfg = parse(argc, argv);
    Device device = Device::parse(cfg.backend);
    if (!runtime::device_available(device)) {
      std::fprintf(stderr, "train-gpt: %s the %s backend is unavailable: %s\n", device.is_cuda() ? "" : "skipped:",
                   device.is_cuda() ? "CUDA" : "CPU", runtime::device_unavailable_reason(device).c_str());
      return device.is_cuda() ? 2 : 77;
    }
    try {
      return run(cfg);
    } catch (...) {
      if (g_progress_open) std::fputc('\n', stderr);
      throw;
    }
  });
}
