// unique and unique_consecutive (ops/sort.h) over the flattened input: the elements in order
// (sorted by ops::sort for unique, as they are for unique_consecutive) are marked where a new
// value starts (`unique_runs` MODE 0), a cumsum of the marks numbers each element's group, the
// first element of each group is written to the output (MODE 1, with the group's start) and the
// counts are the distances between starts (MODE 2). The number of groups is read back to the
// host to size the output (PyTorch synchronises here too).
#include <vector>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/indexing.h"
#include "ops/reduce_kernels.h"
#include "ops/sort.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

}  // namespace

Kernel& detail::unique_runs_kernel() {
  static Kernel k = tritium::kernel(
      "unique_runs", [](P s, P group, P values, P starts, tl::i64 n, tl::i64 groups, int MODE, int CMP, int BLOCK) {
        const DType cmp_t = static_cast<DType>(CMP);
        auto i = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK).to(tl::int64);
        if (MODE == 0) {  // group: 1 where a new value starts
          auto m = i < n;
          auto a = tl::load(s + i, m, 0), b = tl::load(s + (i - 1), m && i >= 1, 0);
          if (a.dtype() != cmp_t) a = a.to(cmp_t), b = b.to(cmp_t);
          tl::store(group + i, (i == 0 || a != b).to(tl::int64), m);
        } else if (MODE == 1) {  // group holds each element's group number (0-based)
          auto m = i < n;
          auto g = tl::load(group + i, m, 0);
          auto first = m && (i == 0 || g != tl::load(group + (i - 1), m && i >= 1, 0));
          tl::store(values + g, tl::load(s + i, m, 0), first);
          tl::store(starts + g, i, first);
        } else {  // counts (in values) from the starts, for `groups` groups
          auto m = i < groups;
          auto st = tl::load(starts + i, m, 0);
          auto next = tl::load(starts + (i + 1), m && i + 1 < groups, n);
          tl::store(values + i, next - st, m);
        }
      });
  return k;
}

namespace {

constexpr int64_t kBlock = 1024;

UniqueResult collapse_runs(const char* op, const Tensor& x, const Tensor& ordered, const Tensor& perm,
                           bool return_inverse, bool return_counts) {
  const int64_t n = ordered.numel();
  const Device dev = x.device();
  UniqueResult r;
  if (n == 0) {
    r.values = Tensor::empty({0}, x.dtype(), dev);
    if (return_inverse) r.inverse = Tensor::empty(x.shape(), DType::i64, dev);
    if (return_counts) r.counts = Tensor::empty({0}, DType::i64, dev);
    return r;
  }
  (void)op;
  const int cmp = static_cast<int>(x.dtype() == DType::i1 ? DType::i32 : detail::math_type(x.dtype()));
  Tensor marks = Tensor::empty({n}, DType::i64, dev);
  detail::unique_runs_kernel()[{cdiv(n, kBlock)}](ordered, marks, marks, marks, n, int64_t(0), 0, cmp, static_cast<int>(kBlock));
  Tensor group = sub(cumsum(marks, 0), Scalar(1));
  const int64_t groups = group.as_strided({1}, {1}, group.storage_offset() + n - 1).to_vector<int64_t>()[0] + 1;
  r.values = Tensor::empty({groups}, x.dtype(), dev);
  Tensor starts = Tensor::empty({groups}, DType::i64, dev);
  detail::unique_runs_kernel()[{cdiv(n, kBlock)}](ordered, group, r.values, starts, n, groups, 1, cmp, static_cast<int>(kBlock));
  if (return_counts) {
    r.counts = Tensor::empty({groups}, DType::i64, dev);
    detail::unique_runs_kernel()[{cdiv(groups, kBlock)}](ordered, group, r.counts, starts, n, groups, 2, cmp,
                                                 static_cast<int>(kBlock));
  }
  if (return_inverse) {
    Tensor inv = perm.defined() ? scatter(zeros({n}, DType::i64, dev), 0, perm, group) : group;
    r.inverse = inv.as_strided(x.shape(), [&] {
      Shape st(x.shape().size());
      int64_t s = 1;
      for (size_t k = st.size(); k-- > 0;) st[k] = s, s *= std::max<int64_t>(x.shape()[k], 1);
      return st;
    }(), inv.storage_offset());
  }
  return r;
}

Tensor flattened(const Tensor& x) {
  Tensor c = contiguous(x);
  return c.as_strided({x.numel()}, {1}, c.storage_offset());
}

}  // namespace

UniqueResult unique(const Tensor& x, bool /*sorted*/, bool return_inverse, bool return_counts) {
  detail::check_tensors("unique", {&x});
  Tensor flat = flattened(x);
  if (flat.numel() == 0) return collapse_runs("unique", x, flat, Tensor(), return_inverse, return_counts);
  ValuesIndices s = sort(flat, 0, false);
  return collapse_runs("unique", x, s.values, s.indices, return_inverse, return_counts);
}

UniqueResult unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts) {
  detail::check_tensors("unique_consecutive", {&x});
  return collapse_runs("unique_consecutive", x, flattened(x), Tensor(), return_inverse, return_counts);
}

}  // namespace tritium::ops
