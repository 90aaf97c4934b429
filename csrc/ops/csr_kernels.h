// Calls of the built-in CSR kernels on checked, contiguous CPU tensors of one
// value dtype. The operators (and their backward passes) are built from these.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>

#include "graph_cache.h"
#include "op_checks.h"
#include "recipes/cpu_recipes.h"
#include "recipes/cuda_recipes.h"
#include "runtime/csr_structure.h"

namespace sparsetir::ops {

// out (rows, K) = reduce over the non-zeros of values * dense[j, :], with
// `script` one of "csrmm" (sum), "csrmm_max", "csrmm_min". Rows without
// non-zeros keep the reduction's identity (0, -inf, +inf).
// `prefetch`: see GatherPrefetchFor.
void RunCsrmm(const std::string& script, const at::Tensor& indptr, const at::Tensor& indices,
              const at::Tensor& values, const at::Tensor& dense, const at::Tensor& out,
              GatherPrefetch prefetch = GatherPrefetch::kToL1);

// out (rows, K) = the mean over each row's non-zeros of values * dense[j, :]:
// the sum divided by `lengths` (rows,), the row lengths (at least 1) in the
// values' accumulator dtype (float32 for 16-bit values), in the same pass
// (csrmm_mean, a CPU kernel: a cuda target finds no recipe).
void RunCsrmmMean(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                  const at::Tensor& dense, const at::Tensor& lengths, const at::Tensor& out,
                  GatherPrefetch prefetch = GatherPrefetch::kToL1);

// out (rows, K) = sum over the non-zeros of values * dense[j, :] (divided
// by the row's length in `lengths`, (rows,) in the accumulator's dtype, where
// `divide`), the rows cut into the segments of GraphInfo::Segments
// (kernels/csrmm_segments.py): a row of one segment is written as it is; the
// segments of a split row add into a zeroed float32 (float64) workspace
// atomically, in an order that varies from run to run, and the workspace's
// rows are divided, rounded and copied into `out` once; rows without
// non-zeros are zeroed. A cuda kernel: CUDA tensors, or CPU tensors under
// EmulateCuda().
void RunCsrmmSegments(const RowSegments& segments, const at::Tensor& indices, const at::Tensor& values,
                      const at::Tensor& dense, const at::Tensor& lengths, bool divide, const at::Tensor& out);

// The row segment length of the cuda spmm (sum, mean) of this structure with
// a dense operand of `feat` columns of `dtype` on `device` (a CPU device:
// under the emulator), or 0 when its rows stay whole: rows are cut when the longest one
// would outlast the work of the other warps; never under torch's
// deterministic algorithms (the atomic additions of a row's partial sums
// come in any order). $SPARSETIR_CUDA_ROW_SEGMENT sets the length and cuts
// every row longer (0: never cut).
int64_t CudaRowSegmentLength(const CsrSummary& structure, int64_t feat, at::ScalarType dtype,
                             const c10::Device& device);

// The features a thread of the cuda csrmm kernels owns at width `feat` for
// values of `dtype`, with $SPARSETIR_CUDA_FEATURES_PER_THREAD applied.
int64_t CudaFeaturesPerThreadFor(int64_t feat, at::ScalarType dtype);

// $SPARSETIR_CUDA_BSRMM_ROWS: the rows per thread asked of the cuda bsrmm
// (1-16; 0: one output per thread, the earlier kernels of bsrmm and
// bsr_linear), or -1 when unset.
int64_t CudaBsrmmRowsSetting();

// The rows a thread of the cuda bsrmm owns for `block_rows` block rows of
// block_h x block_w values of `dtype` and `feat` features on `device` (a CPU
// device: under the emulator, standing for an H100):
// $SPARSETIR_CUDA_BSRMM_ROWS where set, else 4, or 2, or 1 where fewer rows
// are needed for the launch to fill a quarter of the device's resident
// warps. -1 (the recipe's choice) for block_rows <= 0 (no structure given).
int64_t CudaBsrmmRowsFor(int64_t block_rows, int64_t block_h, int64_t block_w, int64_t feat, at::ScalarType dtype,
                         const c10::Device& device);

// The register tile of the cuda bsrmm with those rows (rows == 0: one output
// per thread). Blocks that take tensor cores (16-bit, sides of multiples of
// 16) do not use it.
BsrmmTile CudaBsrmmTileFor(int64_t block_rows, int64_t block_h, int64_t block_w, int64_t feat, at::ScalarType dtype,
                           const c10::Device& device);

// The lanes of the cpu sddmm that computes four of a row's dot products at
// a time (kernels/sddmm_dot_groups.py) for x on `target`, when the rows of y
// it gathers stay cached (GathersStayCached); 0 where the one-at-a-time
// kernel runs.
int64_t SddmmGroupLanesFor(const at::Tensor& x, const Target& target, bool gathers_cached);

// out (nnz,) = x[i, :] . y[j, :] for every non-zero (i, j). With
// group_lanes > 0, four non-zeros of a row at a time in vectors of that many
// lanes (SddmmGroupLanesFor).
void RunSddmmDot(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x, const at::Tensor& y,
                 const at::Tensor& out, GatherPrefetch prefetch = GatherPrefetch::kToL1, int64_t group_lanes = 0);

// RunSddmmDot (x (m, D), y (n, D), out (nnz,)), or per head RunSddmmHeads
// (x (m, H, D), y (n, H, D), out (nnz, H)), over the row segments (seg_row,
// seg_ptr) of GraphInfo::Segments (kernels/sddmm_segments.py,
// kernels/sddmm_heads_segments.py), each output element written once. A cuda
// kernel: CUDA tensors, or CPU tensors under EmulateCuda().
void RunSddmmSegments(const at::Tensor& seg_row, const at::Tensor& seg_ptr, const at::Tensor& indices,
                      const at::Tensor& x, const at::Tensor& y, const at::Tensor& out);

// The row segment length of the cuda sddmm (dot; per head too) of operands
// of `feat` columns (a head's), or 0 where the fused loop over the non-zeros
// (a thread per non-zero, its row found by binary search) serves: narrow
// rows.
// $SPARSETIR_CUDA_SDDMM_SEGMENT sets the length at every width (0: never).
int64_t CudaSddmmSegmentLength(int64_t feat);

// The lanes of a group that scores one column in the one-pass cuda attention
// of heads of `head_dim` features whose k rows hold elements of
// `element_bytes` (kernels/sparse_attention_online_columns.py and its
// backward: a power of two up to 16, each lane reading at most 64 bytes of a
// k row where that suffices), or 0 for a warp per column
// (kernels/sparse_attention_online.py, four columns at a time).
// $SPARSETIR_CUDA_ATTENTION_COLUMN_LANES sets it at every width.
int64_t CudaAttentionColumnLanes(int64_t head_dim, int64_t element_bytes);

// The tiles of kernels/sparse_attention_tiles.py (the column-group forward
// with the k and v rows of a tile of columns in shared memory): `rows` warps
// a block, one row each; `columns` columns a tile; `piece` elements in 16
// bytes; k rows `k_stride` elements apart in shared memory. rows == 0 where
// the kernel does not serve: the setting is 0 (the default), no column
// groups (`column_lanes` 0), head_dim not a multiple of column_lanes x
// piece, value_dim not of 32 and of piece, or fewer than 8 columns fitting
// the block's 48 KiB. $SPARSETIR_CUDA_ATTENTION_TILE_ROWS (1-16) sets the
// rows, 0 turns the tiles off; `requested` >= 0 stands for it.
struct AttentionTile {
  int64_t rows = 0, columns = 0, piece = 0, k_stride = 0;
};
AttentionTile CudaAttentionTile(int64_t head_dim, int64_t value_dim, int64_t element_bytes, int64_t column_lanes,
                                int64_t requested = -1);

// The one-pass cuda forward of sparse_attention: its script and the sizes it
// is specialized and called with besides head_dim and value_dim (the column
// groups' lanes, the tiles'), for k elements of `element_bytes` and a
// pattern whose rows are all in column order (`rows_sorted`) or not. The
// operator runs it and st.explain reports it.
struct AttentionForwardPlan {
  std::string script;
  std::map<std::string, int64_t> sizes;
};
AttentionForwardPlan CudaAttentionForward(int64_t head_dim, int64_t value_dim, int64_t element_bytes,
                                          bool rows_sorted);

// out (rows, H, D) = sum over the non-zeros e = (i, j) of
// values[e, h] * dense[j, h, :], every head in one kernel (csrmm_heads).
void RunCsrmmHeads(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                   const at::Tensor& dense, const at::Tensor& out, GatherPrefetch prefetch = GatherPrefetch::kToL1);

// out (nnz, H) = x[i, h, :] . y[j, h, :] for every non-zero (i, j) and head h.
void RunSddmmHeads(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x, const at::Tensor& y,
                   const at::Tensor& out, GatherPrefetch prefetch = GatherPrefetch::kToL1);

// out (nnz, F) = x[i, :] op y[j, :] element-wise for every non-zero (i, j),
// op "add" or "mul" (kernels sddmm_add, sddmm_mul).
void RunSddmmElementwise(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices,
                         const at::Tensor& x, const at::Tensor& y, const at::Tensor& out,
                         GatherPrefetch prefetch = GatherPrefetch::kToL1);

// Whether and where to prefetch the dense rows a structure gathers (`dense`
// with `rows` x `width` elements). Off when the operand fits in L2 with room
// to spare, when the structure is banded enough that the rows near the
// diagonal it gathers from stay cached and the hardware prefetcher follows
// them (bench_spmm: bcsstk16 and banded33 run 1.2-1.3x faster without), and
// when its gathers mostly follow the one before as streams (an arrow). Into
// L2 when the rows ahead would not fit L1 beside the ones in use, or the
// operand is too large for a core's share of L3; else into L1.
GatherPrefetch GatherPrefetchFor(const CheckedCsr& csr, const at::Tensor& dense);
// The same for a dense operand of `dense_rows` rows of `row_bytes` bytes.
GatherPrefetch GatherPrefetchFor(const CheckedCsr& csr, int64_t dense_rows, int64_t row_bytes);

// True where the rows a structure gathers from such an operand stay cached:
// the operand fits in L2, or the structure is banded (the first two reasons
// GatherPrefetchFor gives for no prefetch; an arrow's streams are not).
bool GathersStayCached(const CheckedCsr& csr, int64_t dense_rows, int64_t row_bytes);

}  // namespace sparsetir::ops
