// tril / triu (ops/shape.h): one kernel, one launch. Each program takes a block of columns of one
// row of the contiguous input seen as [batch * rows, cols]; the row and column block come from the
// program id (two scalar divisions per program, none per element) and the kept columns (c - r <= k
// for tril, >= k for triu) are the only ones loaded, the others stored as zero. (A `where` against
// a broadcast mask cost a materialised [rows, cols] mask, two aranges and an add: five launches.)
#include <algorithm>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/shape.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;

Kernel& triangle_kernel() {
  static Kernel k = tritium::kernel(
      "tril_triu",
      [](P x, P out, tl::i64 rows, tl::i64 cols, tl::i64 col_blocks, tl::i64 diagonal, bool LOWER, int BLOCK) {
        auto pid = tl::program_id(0).to(tl::int64);
        auto row = pid / col_blocks;  // over batch * rows
        auto r = row % rows;
        auto c = (pid % col_blocks) * BLOCK + tl::arange(0, BLOCK).to(tl::int64);
        auto in = c < cols;
        auto keep = LOWER ? (c - r <= diagonal) : (c - r >= diagonal);
        auto off = row * cols + c;
        tl::store(out + off, tl::load(x + off, in & keep, 0), in);
      },
      {"x", "out", "rows", "cols", "col_blocks", "diagonal", "LOWER", "BLOCK"});
  return k;
}

Tensor triangle(const char* op, const Tensor& x_in, int64_t diagonal, bool lower) {
  if (!x_in.defined()) fail("{}: the tensor is undefined", op);
  if (x_in.dim() < 2) fail("{}: input tensor must have at least 2 dimensions, got {}", op, x_in.str());
  const Tensor x = contiguous(x_in);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  const int64_t rows = x.size(-2), cols = x.size(-1);
  const int64_t block = std::clamp<int64_t>(next_power_of_2(cols), 16, 1024);
  const int64_t col_blocks = cdiv(cols, block);
  triangle_kernel()[{x.numel() / cols * col_blocks}](x, out, rows, cols, col_blocks, diagonal, lower,
                                                      static_cast<int>(block));
  return out;
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle("tril", x, diagonal, true); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle("triu", x, diagonal, false); }

}  // namespace tritium::ops
