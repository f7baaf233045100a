// A bitonic sort of u64 rows (ops/random_key_sort.h). Stage k (2, 4, ..., n) merges runs of k/2
// into runs of k sorted ascending where (index & k) == 0 and descending elsewhere; within one
// stage, strides j >= BLOCK are global compare-exchange passes, and the strides below BLOCK act on
// one block that is bitonic by then, so one tl::sort of the block in the stage's direction does
// all of them at once.
#include "ops/random_key_sort.h"
#include "ops/sampling_kernels.h"

#include <algorithm>

#include <tritium/tritium.h>

namespace tritium::ops::detail {

namespace tl = tritium::tl;
using runtime::Tensor;

namespace {
constexpr int64_t kMaxSortBlock = 1024;
}  // namespace

// Program p = r * (n / BLOCK) + b (rows flattened into grid x, whose size CUDA does not cap at
// 65535): block b of row r sorted ascending if (its first index & K) == 0, else descending.
Kernel& block_sort_kernel() {
  static Kernel k = kernel(
      "random_key_block_sort",
      [](tl::ptr<uint64_t> keys, tl::i64 n, tl::i64 K, int BLOCK) {
        auto pid = tl::program_id(0).to(tl::int64);
        auto blocks = n / BLOCK;
        auto row = (pid / blocks) * n;
        auto start = (pid % blocks) * BLOCK;
        auto lane = tl::arange(0, BLOCK).to(tl::int64);
        auto sorted = tl::sort(tl::load(keys + row + start + lane));
        auto descending = (start & K) != 0;
        auto dest = tl::where(descending, (BLOCK - 1) - lane, lane);
        tl::store(keys + row + start + dest, sorted);
      },
      {"keys", "n", "K", "BLOCK"});
  return k;
}

// One compare-exchange pass at stride J of stage K: program r * (n / 2 / BLOCK) + b takes pairs
// b*BLOCK.. of row r (n / 2 pairs; pair p joins i = (p / J) * 2J + p % J and i + J).
Kernel& merge_pass_kernel() {
  static Kernel k = kernel(
      "random_key_merge_pass",
      [](tl::ptr<uint64_t> keys, tl::i64 n, tl::i64 K, tl::i64 J, int BLOCK) {
        auto pid = tl::program_id(0).to(tl::int64);
        auto blocks = n / 2 / BLOCK;
        auto row = (pid / blocks) * n;
        auto p = (pid % blocks) * BLOCK + tl::arange(0, BLOCK);
        auto i = (p / J) * (2 * J) + p % J;
        auto a = tl::load(keys + row + i);
        auto b = tl::load(keys + row + i + J);
        auto ascending = (i & K) == 0;
        auto swap = (a > b) == ascending;
        tl::store(keys + row + i, tl::where(swap, b, a));
        tl::store(keys + row + i + J, tl::where(swap, a, b));
      },
      {"keys", "n", "K", "J", "BLOCK"});
  return k;
}

void sort_rows_u64(Tensor& keys) {
  if (keys.dtype() != DType::u64 || keys.dim() != 2 || !keys.is_contiguous())
    fail("sort_rows_u64: expects a contiguous [rows, n] u64 tensor, got {}", keys.str());
  const int64_t rows = keys.size(0), n = keys.size(1);
  if (rows == 0 || n <= 1) return;
  if ((n & (n - 1)) != 0) fail("sort_rows_u64: the row length {} is not a power of two", n);
  const int64_t block = std::min(n, kMaxSortBlock);
  const int64_t pair_block = std::min(n / 2, kMaxSortBlock);
  const Options on{.device = keys.device()};
  auto sort_blocks = [&](int64_t K) {
    block_sort_kernel()[{n / block * rows}](keys, n, K, static_cast<int>(block), on);
  };
  sort_blocks(block);
  for (int64_t K = 2 * block; K <= n; K *= 2) {
    for (int64_t J = K / 2; J >= block; J /= 2)
      merge_pass_kernel()[{n / 2 / pair_block * rows}](
          keys, n, K, J, static_cast<int>(pair_block), on);
    sort_blocks(K);
  }
}

}  // namespace tritium::ops::detail
