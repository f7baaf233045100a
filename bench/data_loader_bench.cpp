// tritium-bench --data-loader: the DataLoader's throughput over Fashion-MNIST's training set
// (batches/s and samples/s for an epoch of shuffled batches) with 0, 1, 2, ... worker threads,
// with an idle consumer (the loader alone) and with a consumer that spends --work-us per batch
// (what overlap with training buys). bench/compare_data_loader.py runs torch.utils.data's
// DataLoader over the same tensors beside it.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tools/cli.h"
#include "nn/data.h"

namespace tritium::bench {

namespace {

const char* kDataLoaderUsage =
    "usage: tritium-bench --data-loader [--data DIR] [--batch-size B] [--workers LIST] [--work-us US]\n"
    "  --data DIR        Fashion-MNIST's IDX files (default /usr/share/datasets/fashion-mnist)\n"
    "  --batch-size B    batch size (default 128)\n"
    "  --workers LIST    comma-separated worker counts (default 0,1,2)\n"
    "  --work-us US      simulated training time per batch for the second measurement (default 2000)\n";

// Seconds for one epoch (after a first, untimed epoch), sleeping work_us per batch.
double epoch_seconds(nn::DataLoader& loader, int64_t work_us, int64_t& batches) {
  for (auto& b : loader) (void)b;  // warm-up: first-touch of the data set, thread start-up
  auto t0 = std::chrono::steady_clock::now();
  batches = 0;
  for (auto& [x, y] : loader) {
    if (work_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(work_us));
    ++batches;
    (void)x, (void)y;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The consumer's time alone: the same sleeps without loading (sleeps overshoot on a loaded machine).
double work_seconds(int64_t batches, int64_t work_us) {
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batches; ++b) std::this_thread::sleep_for(std::chrono::microseconds(work_us));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int data_loader_bench(int argc, char** argv) {
  std::string root = nn::FashionMNIST::default_root();
  int64_t batch_size = 128, work_us = 2000;
  std::vector<int> workers = {0, 1, 2};
  cli::Args args(argc, argv, kDataLoaderUsage, 2);
  while (args.next()) {
    if (args.is("--data")) root = args.value();
    else if (args.is("--batch-size")) batch_size = cli::parse_int(args.option(), args.value(), 1, 60000);
    else if (args.is("--work-us")) work_us = cli::parse_int(args.option(), args.value(), 0, 10000000);
    else if (args.is("--workers")) {
      workers.clear();
      for (int64_t w : cli::parse_int_list(args.option(), args.value(), 0, 64)) workers.push_back(static_cast<int>(w));
    } else args.unknown();
  }
  nn::FashionMNIST train(root, true);
  std::printf("data loader over Fashion-MNIST train (%lld samples), batch %lld, shuffled\n",
              static_cast<long long>(train.size()), static_cast<long long>(batch_size));
  std::printf("%8s  %14s  %14s  %30s\n", "workers", "batches/s", "samples/s", "epoch s with work (work alone)");
  for (int w : workers) {
    nn::DataLoader loader(train, {.batch_size = batch_size, .shuffle = true, .num_workers = w});
    int64_t batches = 0;
    double idle = epoch_seconds(loader, 0, batches);
    double busy = epoch_seconds(loader, work_us, batches);
    std::printf("%8d  %14.0f  %14.0f  %18.3f (%.3f)\n", w, batches / idle, batches * double(batch_size) / idle, busy,
                work_seconds(batches, work_us));
  }
  return 0;
}

}  // namespace tritium::bench
