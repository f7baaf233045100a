// Split-K for ops::matmul: the split heuristic, TRITIUM_MATMUL_SPLIT_K, and the kernel that adds
// the partial tiles (ops/matmul_split_k.h).
#include "ops/matmul_split_k.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include <tritium/tritium.h>

#include "runtime/dtype_dispatch.h"

namespace tritium::ops::split_k {
namespace {

namespace tl = tritium::tl;
using runtime::Tensor;

constexpr int64_t kMaxSplits = 16;         // the heuristic's cap: more partials cost more than they fill
constexpr int64_t kMaxRequested = 1024;    // TRITIUM_MATMUL_SPLIT_K's cap
constexpr int64_t kMinGranulesPerSplit = 8;  // a split keeps at least 8 granules of K (8 x 64 on a GPU)
constexpr int64_t kPrologueGranules = 4;     // a program's fixed time (pipeline fill, partial store) in K granules

// c[b1, b2, m, n] = alpha * sum_s part[s, b1 * NB2 + b2, m, n] (+ beta * self[b1, b2, m, n] with
// HAS_SELF), one block of BLOCK elements of one batch matrix per program (program_id(1) = batch).
// The splits are added in order 0..S-1.
template <class Acc, class T> Kernel& typed_sum_kernel() {
  static Kernel k = kernel(
      "matmul_split_k_sum",
      [](tl::ptr<Acc> part, tl::ptr<T> c, tl::i64 M, tl::i64 N, tl::i32 S, tl::i64 stride_ps, tl::i64 NB2, tl::i64 sc1,
         tl::i64 sc2, tl::i64 stride_cm, tl::i64 stride_cn, tl::ptr<T> self, tl::i64 ss1, tl::i64 ss2,
         tl::i64 stride_sm, tl::i64 stride_sn, tl::scalar<dtype_of<Acc>()> alpha, tl::scalar<dtype_of<Acc>()> beta,
         int BLOCK, bool HAS_SELF) {
        auto batch = tl::program_id(1).to(tl::int64);
        auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK).to(tl::int64);
        auto mask = offs < M * N;
        auto p = part + batch * (M * N) + offs;
        auto acc = tl::zeros({BLOCK}, dtype_of<Acc>());
        for (auto s : tl::range(0, S)) acc = acc + tl::load(p + s.to(tl::int64) * stride_ps, mask, 0.0);
        auto m = offs / N, n = offs % N;
        auto b1 = batch / NB2, b2 = batch % NB2;
        acc = acc * alpha;
        if (HAS_SELF)
          acc = acc + beta * tl::load(self + (b1 * ss1 + b2 * ss2 + m * stride_sm + n * stride_sn), mask, 0.0).to(dtype_of<Acc>());
        tl::store(c + (b1 * sc1 + b2 * sc2 + m * stride_cm + n * stride_cn), acc.to(dtype_of<T>()), mask);
      },
      {"part", "c", "M", "N", "S", "stride_ps", "NB2", "sc1", "sc2", "stride_cm", "stride_cn", "self", "ss1", "ss2",
       "stride_sm", "stride_sn", "alpha", "beta", "BLOCK", "HAS_SELF"});
  return k;
}

}  // namespace

int64_t requested_splits() {
  const char* v = std::getenv("TRITIUM_MATMUL_SPLIT_K");
  if (!v || !*v) return 0;
  const std::string text(v);
  const bool digits = text.size() <= 4 && text.find_first_not_of("0123456789") == std::string::npos;
  const int64_t s = digits ? std::stoll(text) : -1;
  if (s < 0 || s > kMaxRequested)
    fail("TRITIUM_MATMUL_SPLIT_K=\"{}\": expected an integer in [0, {}] (0: the heuristic, 1: never split, S: S "
         "splits of K)",
         v, kMaxRequested);
  return s;
}

Plan plan(int64_t programs, int64_t K, int64_t granule, int64_t workers, int64_t split_cost) {
  const int64_t requested = requested_splits();
  auto chunk_for = [&](int64_t s) { return cdiv(cdiv(K, s), granule) * granule; };
  int64_t s = requested;
  if (requested == 0) {
    // Split only while the tiles leave workers idle, and only as far as each split keeps
    // kMinGranulesPerSplit granules of K: enough K steps to amortise its prologue and its partial
    // tile's store and reload. Among those splits, the one of least modelled time: the waves of
    // programs the workers run one after the other (a second wave of a few programs costs a
    // whole chunk: 36 tiles x 4 splits on 132 SMs is 2 waves, x 3 is one), each a chunk of K plus
    // a prologue, and split_cost per split for the partials; the fewer splits on a tie.
    s = 1;
    if (programs < workers) {
      const int64_t most = std::max<int64_t>(1, std::min(K / (kMinGranulesPerSplit * granule), kMaxSplits));
      auto time = [&](int64_t t) {
        const int64_t splits = cdiv(K, chunk_for(t));
        return cdiv(programs * splits, workers) * (chunk_for(t) + kPrologueGranules * granule) +
               (splits > 1 ? splits * split_cost : 0);
      };
      for (int64_t t = 2; t <= most; ++t)
        if (time(t) < time(s)) s = t;
    }
  }
  s = std::max<int64_t>(s, 1);
  if (s == 1) return {1, K};
  const int64_t chunk = chunk_for(s);
  return {cdiv(K, chunk), chunk};
}

void reduce_partials(const Tensor& part, const Tensor& c, int64_t M, int64_t N, int64_t NB2, int64_t sc1, int64_t sc2,
                     const Addend& addend) {
  const int64_t splits = part.size(0), nbatch = part.size(1);
  const int block = 1024;
  const bool has_self = addend.self.defined();
  const Tensor& self = has_self ? addend.self : c;  // not read without HAS_SELF
  runtime::dispatch_float(c.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    typed_sum_kernel<Acc, T>()[{cdiv(M * N, block), nbatch}](
        part, c, M, N, static_cast<int32_t>(splits), part.stride(0), NB2, sc1, sc2, c.stride(-2), c.stride(-1), self,
        addend.ss1, addend.ss2, has_self ? self.stride(-2) : int64_t{0}, has_self ? self.stride(-1) : int64_t{0},
        static_cast<Acc>(addend.alpha), static_cast<Acc>(addend.beta), block, has_self, Options{.device = c.device()});
  });
}

Kernel& sum_kernel(DType dtype) {
  Kernel* k = nullptr;
  runtime::dispatch_float(dtype, "matmul split-K sum", [&](auto tag) {
    using T = decltype(tag);
    k = &typed_sum_kernel<std::conditional_t<std::is_same_v<T, double>, double, float>, T>();
  });
  return *k;
}

}  // namespace tritium::ops::split_k
