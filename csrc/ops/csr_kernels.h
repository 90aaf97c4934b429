// Calls of the built-in CSR kernels on checked, contiguous CPU tensors of one
// value dtype. The operators (and their backward passes) are built from these.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "runtime/csr_structure.h"

namespace sparsetir::ops {

// out (rows, K) = reduce over the non-zeros of values * dense[j, :], with
// `script` one of "csrmm" (sum), "csrmm_max", "csrmm_min". Rows without
// non-zeros keep the reduction's identity (0, -inf, +inf).
// `prefetch`: see PrefetchPays.
void RunCsrmm(const std::string& script, const at::Tensor& indptr, const at::Tensor& indices,
              const at::Tensor& values, const at::Tensor& dense, const at::Tensor& out, bool prefetch = true);

// out (rows, K) = sum over the non-zeros of values * dense[j, :], the rows cut
// into the segments (seg_row, seg_ptr) of GraphInfo::Segments; `out` is zeroed
// here, then each segment adds into its row (atomically: the order of a long
// row's partial sums varies from run to run). A cuda kernel: CUDA tensors, or
// CPU tensors under EmulateCuda().
void RunCsrmmSegments(const at::Tensor& seg_row, const at::Tensor& seg_ptr, const at::Tensor& indices,
                      const at::Tensor& values, const at::Tensor& dense, const at::Tensor& out);

// The row segment length of the cuda spmm (sum, mean) on this structure, or 0
// when its rows are kept whole: split when some row is longer than a segment,
// the values are float32 / float64 (a 16-bit output would round at every
// segment's addition), and torch's deterministic algorithms are off.
// $SPARSETIR_CUDA_ROW_SEGMENT sets the length (0: never split).
int64_t CudaRowSegmentLength(const CsrSummary& structure, const at::Tensor& values);

// out (nnz,) = x[i, :] . y[j, :] for every non-zero (i, j).
void RunSddmmDot(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x, const at::Tensor& y,
                 const at::Tensor& out, bool prefetch = true);

// Whether prefetching the dense rows a structure gathers (`dense` with
// `rows` x `width` elements) pays: not when the operand fits in L2 with room
// to spare, nor when the structure is banded enough that the rows near the
// diagonal it gathers from stay cached and the hardware prefetcher follows
// them (bench_spmm: bcsstk16 and banded33 run 1.2-1.3x faster without).
bool PrefetchPays(const CsrSummary& structure, const at::Tensor& dense);
// The same for a dense operand of `dense_rows` rows of `row_bytes` bytes.
bool PrefetchPays(const CsrSummary& structure, int64_t dense_rows, int64_t row_bytes);

}  // namespace sparsetir::ops
