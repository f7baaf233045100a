// The parallel scan both CUDA generators emit (element_scan.cpp's element loops and lowering/'s
// layouts): rows of `len` elements, each row split over T threads (a power of two) as contiguous
// chunks; each thread scans its chunk serially in place, the chunk totals are scanned across the
// row's threads (shuffles up within a warp, then the warps' totals through shared memory), and each
// thread folds the total of the chunks before it into its own. Every combine keeps the sequential
// order of its operands (earlier elements on the left), so any associative combine function,
// commutative or not, gives the serial scan's result. A reverse scan is a forward scan over the
// row read from its end. Private to jit/cuda.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tritium::jit::cuda {

struct ScanShape {
  int64_t rows = 1, len = 1;
  bool reverse = false;
  int num_threads = 128;           // of the CTA (a multiple of 32)
  std::vector<std::string> types;  // the C type of each operand
};

// How a scan's rows are split over the CTA's threads.
struct ScanSplit {
  int64_t threads_per_row = 1;  // T: a power of two, at most len and num_threads
  int64_t chunk = 1;            // elements per thread: ceil(len / T)
  int64_t rows_per_pass = 1;    // num_threads / T
};
ScanSplit split_scan(const ScanShape& s);

// What the generator provides; positions are along the row in memory order (the scan reverses).
struct ScanHooks {
  std::function<void(const std::string&)> line, open;
  std::function<void()> close;
  std::function<std::string(const char*)> fresh;
  std::function<std::string(const std::string& type, const std::string& expr)> tmp;
  std::function<std::vector<std::string>(const std::vector<std::string>&, const std::vector<std::string>&)> combine;
  // Operand i's element (row, pos) as an expression: of the input (first pass), and of the result
  // written before by `write` (the second pass).
  std::function<std::string(size_t i, const std::string& row, const std::string& pos)> input, result;
  std::function<void(size_t i, const std::string& row, const std::string& pos, const std::string& v)> write;
  // A shared array of `count` elements of `type` (an expression naming it) and a barrier after
  // writing it; used only when a row spans several warps.
  std::function<std::string(const std::string& type, int64_t count)> shared_array;
  std::function<void()> barrier;
  // Leave the last step to the caller, who reads every result once anyway (a copy out of the
  // staging buffer): a pass over the row fewer (one read and one write an element).
  bool defer_fold = false;
};

// The last step when the caller takes it (ScanHooks::defer_fold): element `pos` of row `row`
// belongs to chunk k = pos / chunk (counted from the row's end when reversed) of thread
// row * threads_per_row + k; for k > 0, its result is combine(prefix[i][that thread], what
// hooks.result reads). Empty `prefix`: the scan folded in place.
struct ScanFold {
  std::vector<std::string> prefix;  // a shared array an operand, indexed by thread
  int64_t threads_per_row = 1, chunk = 1;
};

// Emits the scan; every thread of the CTA must run it (it may contain a barrier). Results are
// written through hooks.write; the caller makes them visible to other threads afterwards.
ScanFold emit_parallel_scan(const ScanShape& s, const ScanHooks& h);

}  // namespace tritium::jit::cuda
