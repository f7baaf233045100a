// cat and stack (ops/shape.h): several inputs copied into one output by one launch.
//
// Every input and the output are seen as [outer, inner] matrices, where outer is the product of
// the dims before `dim` (the same for all) and inner_i the product of dim and the dims after it:
// input i fills the columns [off_i, off_i + inner_i) of the output's rows. One kernel copies up to
// kSlots inputs: program_id(1) names the input (PyTorch's CatArrayBatchedCopy takes blockIdx.y
// the same way), program_id(0) a [R rows, BLOCK columns] tile of it. The inputs' pointers, row
// strides, widths and offsets are kernel arguments (as PyTorch passes its metadata array by value)
// rather than a device array, so no host-to-device copy precedes the launch and each pointer keeps
// its specialised alignment (16-byte vector accesses). An input whose inner dims are not dense or
// whose outer dims do not collapse to one stride is copied by ops::copy_ into its slice instead.
#include <algorithm>
#include <array>
#include <optional>

#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/cat_pool_kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/shape.h"
#include "runtime/views.h"

namespace tritium::ops {

namespace {

using P = tl::ptr<tl::any>;
using detail::normalize_dim;
using detail::shape_str;

constexpr int kSlots = detail::kCatSlots;
constexpr int64_t kTile = 4096;  // elements a program (R * BLOCK), as the elementwise copy

}  // namespace

Kernel& detail::cat_kernel() {
  static Kernel k = tritium::kernel(
      "cat_copy",
      [](P out, P x0, P x1, P x2, P x3, P x4, P x5, P x6, P x7,                                    //
         tl::i64 rs0, tl::i64 rs1, tl::i64 rs2, tl::i64 rs3, tl::i64 rs4, tl::i64 rs5, tl::i64 rs6, tl::i64 rs7,  //
         tl::i64 w0, tl::i64 w1, tl::i64 w2, tl::i64 w3, tl::i64 w4, tl::i64 w5, tl::i64 w6, tl::i64 w7,          //
         tl::i64 o0, tl::i64 o1, tl::i64 o2, tl::i64 o3, tl::i64 o4, tl::i64 o5, tl::i64 o6, tl::i64 o7,          //
         tl::i64 outer, tl::i64 out_row, tl::i64 col_blocks, int NUM, int ODT, int R, int BLOCK) {
        const std::array<tl::tensor, kSlots> x{x0, x1, x2, x3, x4, x5, x6, x7};
        const std::array<tl::tensor, kSlots> rs{rs0, rs1, rs2, rs3, rs4, rs5, rs6, rs7};
        const std::array<tl::tensor, kSlots> w{w0, w1, w2, w3, w4, w5, w6, w7};
        const std::array<tl::tensor, kSlots> o{o0, o1, o2, o3, o4, o5, o6, o7};
        auto slot = tl::program_id(1);
        auto pid = tl::program_id(0).to(tl::int64);
        // One scalar division a program: no lane divides to find its row or column.
        auto rb = pid / col_blocks, cb = pid % col_blocks;
        auto cols = cb * BLOCK + tl::arange(0, BLOCK).to(tl::int64);
        tl::tensor rows = rb;  // a tile of one row stays 1-D
        if (R > 1) {
          rows = (rb * R + tl::arange(0, R).to(tl::int64))(tl::_, tl::None);
          cols = cols(tl::None, tl::_);
        }
        for (int s = 0; s < NUM; ++s)
          tl::if_(slot == s, [&] {
            auto m = (rows < outer) && (cols < w[s]);
            auto v = tl::load(x[s] + rows * rs[s] + cols, m);
            tl::store(out + rows * out_row + o[s] + cols, v.to(static_cast<DType>(ODT)), m);
          });
      },
      {"out", "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",      "x7",  "rs0", "rs1",  "rs2", "rs3", "rs4",
       "rs5", "rs6", "rs7", "w0",  "w1",  "w2",  "w3",  "w4",      "w5",  "w6",  "w7",   "o0",  "o1",  "o2",
       "o3",  "o4",  "o5",  "o6",  "o7",  "outer", "out_row", "col_blocks", "NUM", "ODT", "R", "BLOCK"});
  return k;
}

namespace {

// One input as an [outer, inner] matrix: its row stride, or nothing when the dims from `d` on are
// not dense row-major or the dims before `d` do not collapse to one stride.
std::optional<int64_t> row_stride(const Tensor& t, int d) {
  int64_t dense = 1;
  for (int k = t.dim() - 1; k >= d; --k) {
    if (t.size(k) != 1 && t.stride(k) != dense) return std::nullopt;
    dense *= t.size(k);
  }
  std::optional<int64_t> rs;
  int64_t span = 0;
  for (int k = d - 1; k >= 0; --k) {
    if (t.size(k) == 1) continue;
    if (!rs) rs = t.stride(k), span = t.stride(k) * t.size(k);
    else if (t.stride(k) != span) return std::nullopt;
    else span *= t.size(k);
  }
  return rs.value_or(dense);  // a single row: any stride
}

struct Part {
  const Tensor* t;
  int64_t rs, width, offset;
};

// Copies the parts (at most kSlots) into `out` with one launch.
void launch(const Tensor& out, const std::vector<Part>& parts, int64_t outer, int64_t out_row) {
  int64_t widest = 0;
  for (const Part& p : parts) widest = std::max(widest, p.width);
  const int64_t block = std::min(kTile, next_power_of_2(widest));
  const int64_t r = std::max<int64_t>(1, std::min(kTile / block, next_power_of_2(outer)));
  const int64_t col_blocks = cdiv(widest, block);
  std::array<const Tensor*, kSlots> x;
  std::array<int64_t, kSlots> rs{}, w{}, o{};
  for (int s = 0; s < kSlots; ++s) {
    const bool used = s < static_cast<int>(parts.size());
    x[s] = used ? parts[s].t : &out;
    if (used) rs[s] = parts[s].rs, w[s] = parts[s].width, o[s] = parts[s].offset;
  }
  detail::cat_kernel()[{col_blocks * cdiv(outer, r), static_cast<int64_t>(parts.size())}](
      out, *x[0], *x[1], *x[2], *x[3], *x[4], *x[5], *x[6], *x[7], rs[0], rs[1], rs[2], rs[3], rs[4], rs[5], rs[6],
      rs[7], w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], outer,
      out_row, col_blocks, static_cast<int>(parts.size()), static_cast<int>(out.dtype()), static_cast<int>(r),
      static_cast<int>(block));
}

void check_defined(const char* op, const Tensor& x) {
  if (!x.defined()) fail("{}: the tensor is undefined", op);
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) fail("cat: expected a non-empty list of tensors");
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : tensors) ptrs.push_back(&t);
  Device dev = detail::check_tensors("cat", ptrs);
  // PyTorch's legacy rule: 1-D empty tensors ([0]) are skipped whatever the others' shapes.
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  const Tensor* ref = nullptr;
  DType dtype = tensors[0].dtype();
  for (size_t i = 0; i < tensors.size(); ++i) {
    dtype = i == 0 ? dtype : detail::promote_types("cat", dtype, tensors[i].dtype());
    if (!ref && !skipped(tensors[i])) ref = &tensors[i];
  }
  if (!ref) return Tensor::empty({0}, dtype, dev);
  if (ref->dim() == 0) fail("cat: zero-dimensional tensor (at position {}) cannot be concatenated", ref - tensors.data());
  const int d = normalize_dim("cat", dim, ref->dim());
  Shape shape = ref->shape();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped(t)) continue;
    if (t.dim() != ref->dim())
      fail("cat: tensors must have the same number of dimensions: got {} and {} (tensor number {} in the list)",
           ref->dim(), t.dim(), i);
    for (int k = 0; k < t.dim(); ++k)
      if (k != d && t.size(k) != ref->size(k))
        fail("cat: sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor "
             "number {} in the list",
             d, ref->size(k), t.size(k), i);
    total += t.size(d);
  }
  shape[static_cast<size_t>(d)] = total;
  Tensor out = Tensor::empty(shape, dtype, dev);
  if (out.numel() == 0) return out;
  int64_t outer = 1, inner = 1;  // the output's rows, and the elements of one index along d
  for (int k = 0; k < d; ++k) outer *= shape[static_cast<size_t>(k)];
  for (int k = d + 1; k < out.dim(); ++k) inner *= shape[static_cast<size_t>(k)];
  std::vector<Part> batch;
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    if (skipped(t) || t.size(d) == 0) continue;
    const int64_t len = t.size(d);
    if (auto rs = row_stride(t, d)) {
      batch.push_back({&t, *rs, len * inner, start * inner});
      if (batch.size() == kSlots) launch(out, batch, outer, total * inner), batch.clear();
    } else {  // not an [outer, inner] matrix: the generic strided copy
      Tensor part = runtime::slice_of(out, d, start, start + len, 1);
      copy_(part, t);
    }
    start += len;
  }
  if (!batch.empty()) launch(out, batch, outer, total * inner);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) fail("stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_defined("stack", tensors[i]);
    if (tensors[i].shape() != tensors[0].shape())
      fail("stack: expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
           shape_str(tensors[0].shape()), shape_str(tensors[i].shape()), i);
  }
  int d = normalize_dim("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(runtime::unsqueeze_of(t, d));
  return cat(parts, d);
}

}  // namespace tritium::ops
