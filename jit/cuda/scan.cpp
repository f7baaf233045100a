// The parallel scan of both CUDA generators (scan.h): chunk per thread, shuffles up within a warp,
// warp totals through shared memory, then each thread's exclusive prefix folded into its chunk.
#include "jit/cuda/scan.h"

#include <fmt/format.h>

#include <algorithm>

namespace tritium::jit::cuda {

namespace {
int64_t pow2_floor(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}
}  // namespace

ScanSplit split_scan(const ScanShape& s) {
  ScanSplit sp;
  // Rows enough to give every thread one: a thread per row, no exchange. Else as many threads a
  // row as the CTA has for each row, never more than the row has elements.
  if (s.rows < s.num_threads && s.len > 1)
    sp.threads_per_row = pow2_floor(std::min<int64_t>(s.num_threads / s.rows, s.len));
  sp.chunk = (s.len + sp.threads_per_row - 1) / sp.threads_per_row;
  sp.rows_per_pass = s.num_threads / sp.threads_per_row;
  return sp;
}

ScanFold emit_parallel_scan(const ScanShape& s, const ScanHooks& h) {
  const ScanSplit sp = split_scan(s);
  const int64_t T = sp.threads_per_row, C = sp.chunk, G = sp.rows_per_pass, L = s.len;
  const size_t n = s.types.size();
  auto pos = [&](const std::string& k) { return s.reverse ? fmt::format("{} - ({})", L - 1, k) : k; };
  h.line(fmt::format("// scan: {} rows of {}, {} threads a row, {} elements a thread", s.rows, L, T, C));
  h.open("");
  const std::string t = T == 1 ? "0" : h.tmp("int", fmt::format("tid % {}", T));
  const std::string lo = h.tmp("int", fmt::format("{} * {}", t, C));
  const std::string hi = h.tmp("int", fmt::format("min({} + {}, {})", lo, C, L));
  // The same number of passes in every thread (the shuffles need their whole warp); a row's
  // threads are all in or all out of a pass.
  const bool one_pass = s.rows <= G;
  ScanFold fold;
  fold.threads_per_row = T;
  fold.chunk = C;
  std::string row;
  if (one_pass) {
    h.open("");
    row = T >= s.num_threads ? "0" : h.tmp("int", fmt::format("tid / {}", T));
  } else {
    std::string rb = h.fresh("rb");
    h.open(fmt::format("for (int {0} = 0; {0} < {1}; {0} += {2})", rb, s.rows, G));
    row = h.tmp("int", fmt::format("{} + tid / {}", rb, T));
  }
  std::vector<std::string> conds;
  if ((one_pass ? s.rows < G : s.rows % G != 0) || s.num_threads % T != 0) conds.push_back(fmt::format("{} < {}", row, s.rows));
  if (C * (T - 1) >= L) conds.push_back(fmt::format("{} < {}", lo, L));  // trailing threads may have none
  const std::string live = conds.empty() ? "true" : h.tmp("bool", fmt::format("{}", fmt::join(conds, " && ")));
  // 1. The thread's chunk, serially, in place.
  std::vector<std::string> acc(n);
  for (size_t i = 0; i < n; ++i) {
    acc[i] = h.fresh("acc");
    h.line(fmt::format("{} {}{{}};", s.types[i], acc[i]));
  }
  h.open(fmt::format("if ({})", live));
  {
    const std::string p0 = h.tmp("int", pos(lo));
    for (size_t i = 0; i < n; ++i) {
      h.line(fmt::format("{} = {};", acc[i], h.input(i, row, p0)));
      h.write(i, row, p0, acc[i]);
    }
    if (C > 1) {
      std::string k = h.fresh("k");
      h.open(fmt::format("for (int {0} = {1} + 1; {0} < {2}; ++{0})", k, lo, hi));
      const std::string p = h.tmp("int", pos(k));
      std::vector<std::string> x;
      for (size_t i = 0; i < n; ++i) x.push_back(h.tmp(s.types[i], h.input(i, row, p)));
      std::vector<std::string> c = h.combine(acc, x);
      for (size_t i = 0; i < n; ++i) h.line(fmt::format("{} = {};", acc[i], c[i]));
      for (size_t i = 0; i < n; ++i) h.write(i, row, p, acc[i]);
      h.close();
    }
  }
  h.close();
  if (T > 1) {
    // 2. Inclusive scan of the chunk totals over the row's lanes of each warp (Hillis-Steele:
    // after the step of distance d a lane holds its 2d chunks' total, the lower ones on the left).
    const int64_t W = std::min<int64_t>(T, 32);
    const std::string lane = T <= 32 ? t : h.tmp("int", "tid & 31");
    for (int64_t d = 1; d < W; d *= 2) {
      h.open("");
      std::vector<std::string> below;
      for (size_t i = 0; i < n; ++i) below.push_back(h.tmp(s.types[i], fmt::format("tt_shfl_up({}, {})", acc[i], d)));
      h.open(fmt::format("if ({} >= {})", lane, d));
      std::vector<std::string> c = h.combine(below, acc);
      for (size_t i = 0; i < n; ++i) h.line(fmt::format("{} = {};", acc[i], c[i]));
      h.close();
      h.close();
    }
    // The chunks before this thread's within its warp (valid for lane > 0).
    std::vector<std::string> ex(n);
    for (size_t i = 0; i < n; ++i) {
      ex[i] = h.fresh("ex");
      h.line(fmt::format("{} {} = tt_shfl_up({}, 1);", s.types[i], ex[i], acc[i]));
    }
    if (T > 32) {
      // 3. The warps of a row (one pass: T <= num_threads / rows): each warp's total through shared
      // memory, then each thread combines those of the row's warps before its own, in order.
      const int64_t warps = s.num_threads / 32;
      std::vector<std::string> wt;
      for (size_t i = 0; i < n; ++i) wt.push_back(h.shared_array(s.types[i], warps));
      h.open("if ((tid & 31) == 31)");
      for (size_t i = 0; i < n; ++i) h.line(fmt::format("{}[tid >> 5] = {};", wt[i], acc[i]));
      h.close();
      h.barrier();
      const std::string wr = h.tmp("int", fmt::format("{} >> 5", t));  // the warp's place in its row
      h.open(fmt::format("if ({} > 0)", wr));
      const std::string w0 = h.tmp("int", fmt::format("(tid >> 5) - {}", wr));
      std::vector<std::string> pre(n);
      for (size_t i = 0; i < n; ++i) {
        pre[i] = h.fresh("pre");
        h.line(fmt::format("{} {} = {}[{}];", s.types[i], pre[i], wt[i], w0));
      }
      std::string w = h.fresh("w");
      h.open(fmt::format("for (int {0} = 1; {0} < {1}; ++{0})", w, wr));
      std::vector<std::string> x;
      for (size_t i = 0; i < n; ++i) x.push_back(h.tmp(s.types[i], fmt::format("{}[{} + {}]", wt[i], w0, w)));
      std::vector<std::string> c = h.combine(pre, x);
      for (size_t i = 0; i < n; ++i) h.line(fmt::format("{} = {};", pre[i], c[i]));
      h.close();
      h.open(fmt::format("if ({} > 0)", lane));
      c = h.combine(pre, ex);
      for (size_t i = 0; i < n; ++i) h.line(fmt::format("{} = {};", ex[i], c[i]));
      h.close();
      h.open("else");
      for (size_t i = 0; i < n; ++i) h.line(fmt::format("{} = {};", ex[i], pre[i]));
      h.close();
      h.close();
    }
    if (h.defer_fold && one_pass) {  // 4 is the caller's: the prefixes go to shared memory
      for (size_t i = 0; i < n; ++i) fold.prefix.push_back(h.shared_array(s.types[i], s.num_threads));
      h.open(fmt::format("if ({} && {} > 0)", live, t));
      for (size_t i = 0; i < n; ++i) h.line(fmt::format("{}[tid] = {};", fold.prefix[i], ex[i]));
      h.close();
      h.close();
      h.close();
      return fold;
    }
    // 4. Every thread but the row's first folds the chunks before it into its own.
    h.open(fmt::format("if ({} && {} > 0)", live, t));
    std::string k = h.fresh("k");
    h.open(fmt::format("for (int {0} = {1}; {0} < {2}; ++{0})", k, lo, hi));
    const std::string p = h.tmp("int", pos(k));
    std::vector<std::string> x;
    for (size_t i = 0; i < n; ++i) x.push_back(h.tmp(s.types[i], h.result(i, row, p)));
    std::vector<std::string> c = h.combine(ex, x);
    for (size_t i = 0; i < n; ++i) h.write(i, row, p, c[i]);
    h.close();
    h.close();
  }
  h.close();
  h.close();
  return fold;
}

}  // namespace tritium::jit::cuda
