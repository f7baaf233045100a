// `tritium-bench --rnn`: whole recurrent modules (nn::LSTM, nn::GRU, nn::RNN; nn/rnn.h), forward
// and forward + backward, at a realistic size (default seq 64, batch 32, input 128, hidden 256,
// 2 layers), timed by tritium::do_bench (median). bench/compare_rnn.py times torch.nn's modules
// at the same sizes with the same thread count and prints both.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autotune/do_bench.h"
#include "nn/autograd.h"
#include "nn/rnn.h"
#include "tools/cli.h"

namespace tritium::bench {

namespace {

const char* kRnnUsage =
    "usage: tritium-bench --rnn [--device D] [--modules lstm,gru,rnn] [--seq 64] [--batch 32] [--input 128]\n"
    "                           [--hidden 256] [--layers 2] [--bidirectional] [--json FILE] [--clock cpu]\n"
    "Times nn::LSTM / GRU / RNN forward (eval, no grad) and forward + backward (sum of the output) in ms.\n"
    "--clock cpu (CPU only): the median of 5 calls timed by the process's CPU clock (with\n"
    "TRITIUM_NUM_THREADS=1, the work done whatever else a shared machine runs).\n";

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// An untimed first call (it compiles), then the median of `reps` calls by the CPU clock.
double cpu_median_ms(const std::function<void()>& fn, int reps = 5) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const double t0 = process_cpu_ms();
    fn();
    times.push_back(process_cpu_ms() - t0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int rnn_bench(int argc, char** argv) {
  cli::Args args(argc, argv, kRnnUsage, 2);
  Device device = Device::cpu();
  std::string modules = "lstm,gru,rnn", json_path;
  int64_t seq = 64, batch = 32, input = 128, hidden = 256, layers = 2;
  bool bidirectional = false, cpu_clock = false;
  while (args.next()) {
    if (args.is("--device")) device = cli::parse_device(args.option(), args.value());
    else if (args.is("--modules")) modules = args.value();
    else if (args.is("--seq")) seq = cli::parse_int(args.option(), args.value(), 1, 1 << 20);
    else if (args.is("--batch")) batch = cli::parse_int(args.option(), args.value(), 1, 1 << 20);
    else if (args.is("--input")) input = cli::parse_int(args.option(), args.value(), 1, 1 << 20);
    else if (args.is("--hidden")) hidden = cli::parse_int(args.option(), args.value(), 1, 1 << 20);
    else if (args.is("--layers")) layers = cli::parse_int(args.option(), args.value(), 1, 64);
    else if (args.is("--bidirectional")) bidirectional = true;
    else if (args.is("--json")) json_path = args.value();
    else if (args.is("--clock")) cpu_clock = cli::parse_choice(args.option(), args.value(), {"wall", "cpu"}) == "cpu";
    else args.unknown();
  }
  if (cpu_clock && !device.is_cpu()) throw cli::UsageError("--clock cpu times CPU work: it needs --device cpu");
  DefaultDeviceGuard on_device(device);
  std::string json = "[";
  std::printf("%-6s %-42s %12s %12s\n", "module", "shape", "fwd ms", "fwd+bwd ms");
  for (const std::string name : {"lstm", "gru", "rnn"}) {
    if (modules.find(name) == std::string::npos) continue;
    Generator gen(0);
    auto o = nn::RNNOptions(input, hidden).num_layers(layers).bidirectional(bidirectional);
    std::unique_ptr<nn::RNNBase> m;
    if (name == "lstm") m = std::make_unique<nn::LSTM>(o, gen);
    else if (name == "gru") m = std::make_unique<nn::GRU>(o, gen);
    else m = std::make_unique<nn::RNN>(o, gen);
    Tensor x = ops::randn({seq, batch, input}, gen);
    auto forward = [&] {
      nn::NoGradGuard no_grad;
      m->forward_many({x});
    };
    auto forward_backward = [&] {
      m->zero_grad();
      tritium::sum(m->forward_many({x})[0]).backward();
    };
    const double fwd = cpu_clock ? cpu_median_ms(forward) : do_bench(forward, device).median_ms;
    const double both = cpu_clock ? cpu_median_ms(forward_backward) : do_bench(forward_backward, device).median_ms;
    const std::string shape = fmt::format("T {} B {} I {} H {} L {}{}", seq, batch, input, hidden, layers,
                                          bidirectional ? " bidir" : "");
    std::printf("%-6s %-42s %12.3f %12.3f\n", name.c_str(), shape.c_str(), fwd, both);
    json += fmt::format("{}{{\"module\": \"{}\", \"seq\": {}, \"batch\": {}, \"input\": {}, \"hidden\": {}, "
                        "\"layers\": {}, \"bidirectional\": {}, \"fwd_ms\": {}, \"fwd_bwd_ms\": {}}}",
                        json.size() > 1 ? ", " : "", name, seq, batch, input, hidden, layers, bidirectional,
                        fwd, both);
  }
  json += "]\n";
  if (!json_path.empty()) {
    std::FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) fail("tritium-bench --rnn: cannot write {}", json_path);
    std::fputs(json.c_str(), f);
    std::fclose(f);
  }
  return 0;
}

}  // namespace tritium::bench
