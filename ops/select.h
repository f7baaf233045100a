// k-th smallest element by radix selection (ops/select.cpp), under ops/sort.h's kthvalue and
// median: the element's order-preserving integer key is narrowed digit by digit (counting, never
// sorting), as PyTorch's CUDA kthvalue/median (aten/src/ATen/native/cuda/SortingRadixSelect.cuh).
#pragma once
#include "dsl/kernel.h"
#include "ops/reduce_rows.h"
#include "ops/reduce_stats.h"

namespace tritium::ops::detail {

// Whether select_rows takes rows of R elements of dtype d (else the sort does): every dtype but
// fp8, rows under 2^31.
bool row_selectable(DType d, int64_t R);

// The k-th smallest (1-based, NaN largest) of each row of `rows` (elements of dtype d on device),
// or with k = 0 the lower median (a row holding NaN: its first NaN). [O, 1] values and i64
// indices; ties give the k-th in position order (torch.sort(stable=True)'s k-th). Rows of up to
// 4096 are one program's registers (one launch); longer rows go through the digit passes of
// select_median_all per row, then a pass that counts each chunk's elements equal to the selected
// one and a program per row that finds the k-th of them.
ValuesIndices select_rows(const Rows& rows, DType d, int64_t k);

// Whether select_median_all takes n contiguous elements of dtype d.
bool all_selectable(DType d, int64_t n);

// The lower median of the n contiguous elements of flat (NaN if any is NaN), a 0-dim tensor;
// several programs count digit histograms into a small global array, no host sync.
Tensor select_median_all(const Tensor& flat);

// The kernels (tests compile them for the GPU without one). select_rows: (x, values, indices, O,
// R, k, BITS, BR, N); select_count: (x, counts, R, k, chunk, nchunks, BITS, PASS, MERGE_ZERO,
// BLOCK) adds pass PASS's digit counts of each (row, chunk); select_value: (counts, out, n, BITS,
// dtype) stores the median of one row from its counts; select_find: (x, counts, found, R, k, chunk,
// nchunks, BITS, BLOCK) counts each chunk's selected keys; select_index: (x, counts, found, values,
// indices, R, k, chunk, nchunks, BITS, NC, BLOCK) a program per row.
Kernel& select_rows_kernel();
Kernel& select_count_kernel();
Kernel& select_value_kernel();
Kernel& select_find_kernel();
Kernel& select_index_kernel();

}  // namespace tritium::ops::detail
