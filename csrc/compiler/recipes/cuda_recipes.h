// Schedules that map the built-in operator kernels onto a GPU, applied once
// the sizes that matter are known (the first call).
//
//  - csrmm (sum / max / min): a CSR row per group of `lanes` threads (a warp
//    when the feature width is 32 or more), the group's threads over
//    consecutive features, so every non-zero's dense row is read with one
//    coalesced load per warp; rows of a block along threadIdx.y, feature
//    tiles of 32 along blockIdx.y; the output element a thread owns is
//    accumulated in a register (cache_write to local scope).
//  - csrmm_segments (sum over row segments): the same mapping with a row
//    segment in place of a row, so that a long row is the work of many
//    thread groups; each group publishes its partial output row with one
//    atomic add per element into an output zeroed before the launch.
//  - csrmm_mean: csrmm's mapping with the division merged into the row's
//    loops, done in registers before the store.
//  - sddmm (sddmm_dot): the non-zeros fused into one loop (the row found by
//    binary search, sparse_fuse); below 32 features a thread per non-zero,
//    from 32 a warp per non-zero whose lanes combine their parts of the dot
//    product with shuffles (lower_lane_reductions).
//  - csrmm_heads: the csrmm mapping with the heads over blockIdx.z.
//  - sddmm_heads, sddmm_add, sddmm_mul: the sddmm mapping, the heads (or
//    features) over blockIdx.y.
//  - edge_softmax, edge_softmax_backward: a warp per row, the row's passes
//    merged, each pass's non-zeros over the lanes and the row's max / sum /
//    dot combined by shuffles; gat_attention: a thread per row.
//  - bsrmm: a block row per blockIdx.x, a row of the block per blockIdx.z,
//    features over lanes; for 16-bit blocks of multiples of 16 (and features
//    of 8), tensor cores instead: a warp per 16 x 32 output tile, one
//    mma.sync per 16 x 8 x 16 (tensorize, lower_mma_fragments).
//  - bsr_linear: batch rows over blockIdx.x and threadIdx.y, weight block rows
//    over blockIdx.y, the block's rows over lanes; bsr_linear_tiles (the
//    batch in tiles of 16 rows): the tensor-core mapping of bsrmm.
//  - bsr_linear_grad_blocks: a stored block per blockIdx.x, a thread per
//    element of the block summing over the batch; bsr_linear_grad_blocks_tiles
//    (the batch in tiles of 16 rows): a warp per 16 x 32 of the block on
//    tensor cores.
// Threads exchange data only through the shuffles of lane reductions and
// mmas, which synchronize the lanes they name.
// Recipes of this file are the one source of the cuda schedules;
// st.explain(..., device="cuda") prints their traces.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/dtype.h"
#include "schedule/schedule.h"

namespace sparsetir {

// A recipe parameter that may ride in the sizes of ScheduleForCuda (it is no
// size of the script): the features a csrmm / csrmm_segments thread owns,
// consecutive ones in a tile of 32 x that many (fewer where 32 x that many do
// not divide the feature width; 0 or absent: the recipe's choice).
extern const char* const kFeaturesPerThread;

// Schedules `f`, a built-in kernel named by `recipe` ("csrmm", "csrmm_segments",
// "sddmm", "csrmm_heads", "sddmm_heads", "sddmm_add", "sddmm_mul",
// "edge_softmax", "edge_softmax_backward", "bsrmm", "bsr_linear",
// "bsr_linear_tiles", "bsr_linear_grad_blocks", "bsr_linear_grad_blocks_tiles", "csrmm_mean",
// "gat_attention"), for
// the given sizes (specialized into the kernel). A recipe that has no cuda
// schedule yet raises a UserError naming it.
Schedule ScheduleForCuda(const PrimFunc& f, const std::string& recipe, const std::map<std::string, int64_t>& sizes);

// True if `recipe` has a cuda schedule.
bool HasCudaRecipe(const std::string& recipe);

// The rows of a batch tile of bsr_linear_tiles (one tensor-core tile).
constexpr int64_t kBsrLinearTileRows = 16;
// True if bsr_linear_tiles runs on tensor cores for these blocks (the
// operator then calls it for batches that are a multiple of
// kBsrLinearTileRows): 16-bit blocks whose rows (the outputs, the tile's
// columns) are a multiple of 8 and columns (the reduction) of 16.
bool BsrLinearOnTensorCores(DataType values, int64_t block_h, int64_t block_w);
// The same for bsr_linear_grad_blocks_tiles (the blocks' gradient, summed
// over batch tiles of kBsrLinearTileRows): 16-bit blocks of a multiple of 16
// rows and 8 columns.
bool BsrLinearGradBlocksOnTensorCores(DataType values, int64_t block_h, int64_t block_w);

// The features a csrmm / csrmm_segments thread owns for a feature width of
// `feat` and `values` of that dtype: `requested` (0: the recipe's choice),
// halved until 32 x that many divide the width.
int64_t CudaFeaturesPerThread(int64_t feat, int64_t requested, DataType values);

// The register tile of the SIMT bsrmm (blocks that do not take tensor
// cores): a thread owns `rows` rows x `features` outputs and steps through a
// block `columns` columns at a time; `lanes` threads (threadIdx.x) cover a
// window of lanes x features outputs, `row_threads` (threadIdx.y) a slice of
// row_threads x rows rows, and `row_slices` slices (blockIdx.z) the block's
// rows. rows == 0: one output per thread (the earlier kernel; the other
// fields unused).
struct BsrmmTile {
  int64_t rows, features, columns, lanes, row_threads, row_slices;
};
// The size that asks bsrmm's cuda recipe for `rows` rows per thread: 0 the
// earlier kernel, -1 (also when absent) the recipe's choice.
extern const char* const kBsrmmRowsPerThread;
// The tile for blocks of block_h x block_w `values` and `feat` features;
// `requested` rows per thread (-1: the recipe's choice, 4 or the block's
// rows if fewer; 0: one output per thread).
BsrmmTile CudaBsrmmTile(DataType values, int64_t block_h, int64_t block_w, int64_t feat, int64_t requested);

// The register tile of the SIMT bsr_linear (Y = X W^T with blocks that do
// not take tensor cores): a thread owns `features` consecutive outputs of a
// block row for one batch row and steps through a block `columns` columns at
// a time; `lanes` threads (threadIdx.x) cover a window of lanes x features
// outputs (blockIdx.z over the windows), `batch_threads` (threadIdx.y) as
// many batch rows. features == 0: a thread per output element (the earlier
// kernel; `requested` == 0, from $SPARSETIR_CUDA_BSRMM_ROWS, asks for it).
struct BsrLinearTile {
  int64_t features, columns, lanes, batch_threads;
};
BsrLinearTile CudaBsrLinearTile(DataType values, int64_t block_h, int64_t block_w, int64_t requested);

// The thread groups of kernels/csrmm_segments.py (a stage-III script whose
// sizes the recipe specializes and the operator passes): `lanes` threads
// over a segment's features (as csrmm's rows: CudaRowLanes), each owning
// `per_thread` consecutive ones (CudaFeaturesPerThread with `requested`),
// and `group` segments a block.
struct SegmentGroups {
  int64_t lanes, per_thread, group;
};
SegmentGroups CudaSegmentGroups(int64_t feat, int64_t requested, DataType values);

// Threads of a csrmm row group: the feature width rounded up to a power of
// two, at most a warp (32).
int64_t CudaRowLanes(int64_t feat);

}  // namespace sparsetir
