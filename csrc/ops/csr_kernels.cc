#include "csr_kernels.h"

#include <map>
#include <string>

#include "cuda_launch.h"
#include "env_setting.h"
#include "kernel_library.h"
#include "recipes/cuda_recipes.h"
#include "support/error.h"
#include "tensor_args.h"

namespace sparsetir::ops {

namespace {

// Below this many bytes a dense operand stays in L2 (2 MiB per core here)
// with room for the output rows and the structure.
constexpr double kPrefetchMinBytes = 1 << 20;
// A structure whose non-zeros lie this close to the diagonal, in bytes of
// dense rows, gathers from a window that stays in L1/L2.
constexpr double kLocalWindowBytes = 256 << 10;
// A gather within this many bytes of dense rows of the one before it
// (CountNearGathers) continues a stream the hardware prefetcher
// already follows: a page.
constexpr int64_t kStreamBytes = 4096;
// With at least this share of such gathers the kernel runs without software
// prefetches. An arrow (all of them) ran 1.02-1.29x faster without them
// (spmm and sddmm, K = 32-256, 1 and 2 threads, AMD EPYC Zen 4 at the AVX-512
// level); a mesh with 81 % of them gained at K = 256 and lost at K = 128,
// and the scattered graphs (9-48 %) lost up to 15 % without them.
constexpr double kStreamingShare = 0.9;
// Prefetches go to L2 rather than L1 when the rows ahead span this many bytes
// (half an L1 of 32 KiB: more would evict the rows in use) or the operand
// has this many (more than a core's share of most L3s: it streams from
// DRAM, and a core keeps more L2 misses than L1 misses in flight). AMD EPYC
// Zen 4, AVX-512, 1 thread, sddmm / spmm sum, L1 -> L2 time in ms: at K = 256
// (32 KiB ahead) email-Enron 11.9 -> 8.5 / 12.4 -> 8.5, copter2 22.7 ->
// 17.3 / 23.0 -> 15.0, mdual 90.7 -> 54.4 / 101 -> 63.6; at K = 128 (16 KiB)
// cond-mat-2005 5.15 -> 4.08 / 4.68 -> 3.83, horse-laplacian alike; mdual
// (32 MiB at K = 32) at K = 32 10.6 -> 7.0 / 10.1 -> 7.1; R-MAT 2^17 (17 MiB
// at K = 32) 7.8 -> 7.5. Below both, L1 is faster: copter2 at K = 64 (14
// MiB, 8 KiB ahead) 2.6 -> 3.0 / 2.7 -> 2.9.
constexpr int64_t kL1PrefetchSpanBytes = 16 << 10;
constexpr double kFarOperandBytes = 16 << 20;

// Non-zeros of a row segment on the GPU (csrmm_segments): a segment is one
// thread group's serial work.
constexpr int64_t kCudaRowSegment = 64;
// Rows are cut when the longest is longer than two segments and than this
// many times the work each resident warp gets on average (non-zeros x
// feature tiles / resident warps): its one warp, waiting on one gather after
// another, would still be busy when the others are done. Other structures
// keep their rows whole, which saves zeroing the output and the atomic adds.
// H100, float32 (benchmarks/bench_cuda_segments.py), longest row / average
// work and cuSPARSE time / ours, whole -> cut: R-MAT 2^20 at K = 512 2.6,
// 0.50 -> 1.03; email-Enron at K = 512 4.0, 0.45 -> 0.96; cond-mat-2005 at
// K = 32 6.7, 1.63 -> 2.10, at K = 128 3.3, 1.24 -> 1.14 (the one case that
// loses), at K = 512 0.8, 1.29 whole; bcsstk16 (longest row 81) 2.46 whole,
// 2.13 cut at K = 32. 16-bit values take the same rule: their segments read
// the 16-bit operands and add into a float32 output, which costs one more
// pass over the output than float32's cut. (When the cut widened the
// operands to float32 first, it lost on cond-mat-2005 at K = 128, float16,
// 1.26 whole and 0.65 cut, and 16-bit rows were cut only at 4 x the average.)
constexpr int64_t kLongRowFactor = 2;
// Non-zeros of a row segment of the cuda sddmm (sddmm_segments): a warp's
// serial work, each non-zero one dot product over its lanes. H200, float32,
// sampled_addmm time / ours by geometric mean over the 12 benchmark matrices
// at K = 32 / 128 (benchmarks/results/cuda_h200_sddmm_segment_sweep.csv):
// 4: 2.16 / 3.56, 8: 2.39 / 3.88, 16: 2.45 / 3.93, 32: 2.32 / 3.72,
// 64: 2.16 / 3.49, 128: 1.95 / 3.10; the fused loop (a warp per non-zero, its
// row searched in indptr) 0.54 / 1.03. Shorter segments spread a long row
// over more warps; the shortest leave a warp too little work per launch.
constexpr int64_t kSddmmSegment = 16;
// Features from which the cuda sddmm takes a warp per row segment; narrower
// rows keep the fused loop's thread per non-zero, which has 32 times the
// warps' non-zeros in flight.
constexpr int64_t kSddmmSegmentsFrom = 32;
// The bytes of a k row a lane of the one-pass cuda attention reads per
// column when a group of lanes scores it (q's run in registers as many
// features). Heads of 64 take groups of 4 lanes in float32 (16 features, 8
// columns a step) and of 2 in 16-bit (32 features, 16 columns a step). On an
// H200 (batch 1, 4 heads, L = 4096, 10 % density) the float32 forward took
// 0.41 ms in groups of 4 and 0.61 ms in groups of 2 (128 bytes a lane), and
// float16 0.38 ms in groups of 4 (32 bytes a lane) and 0.32 ms in groups of
// 2 (64 bytes): the bytes decide, not the registers (78 and 79 on sm_90 in
// groups of 2).
constexpr int64_t kAttentionBytesPerLane = 64;
// The largest group: two columns a step (a group of 32 would be the warp,
// one column a step, which the warp-per-column kernels do better).
constexpr int64_t kMaxAttentionColumnLanes = 16;
// sparse_attention_tiles.py: warps a block (0: the column-group kernel,
// until the tiles are timed on a GPU), and the most a block may have: 512
// threads may take up to 128 registers each (the kernels take 64-128 on
// sm_90), where 1024 would fail to launch past 64.
constexpr int64_t kAttentionTileRowsDefault = 0;
constexpr int64_t kMaxAttentionTileRows = 16;
// Columns a tile: the most, halved until the k and v rows fit the shared
// memory a block declares statically, and the fewest worth a barrier pair.
constexpr int64_t kMaxAttentionTileColumns = 64;
constexpr int64_t kMinAttentionTileColumns = 8;
constexpr int64_t kAttentionTileSharedBytes = 48 * 1024;
// A vector load's bytes (a tile's pieces), a warp's lanes and the bytes of
// shared memory's 32 banks.
constexpr int64_t kPieceBytes = 16;
constexpr int64_t kWarpLanes = 32;
constexpr int64_t kBankBytes = 128;
// The resident warps of the device the emulator stands for (an H100: 132
// multiprocessors x 64 warps).
constexpr int64_t kEmulatedResidentWarps = 132 * 64;

// $SPARSETIR_CUDA_FEATURES_PER_THREAD: 1-8, or 0 (also when unset) for the
// recipe's choice.
int64_t FeaturesPerThreadSetting() {
  return EnvSetting("SPARSETIR_CUDA_FEATURES_PER_THREAD", 0, 8,
                    "a number of features from 1 to 8 (0: the recipe's choice)");
}

// The sizes of a csrmm kernel for `dense`: the feature width, and on a cuda
// target the features per thread asked for, part of the kernel's key.
std::map<std::string, int64_t> CsrmmSizes(const at::Tensor& dense, const Target& target) {
  std::map<std::string, int64_t> sizes{{"feat_size", dense.size(1)}};
  if (target.is_cuda()) sizes[kFeaturesPerThread] = FeaturesPerThreadSetting();
  return sizes;
}

}  // namespace

int64_t CudaFeaturesPerThreadFor(int64_t feat, at::ScalarType dtype) {
  return CudaFeaturesPerThread(feat, FeaturesPerThreadSetting(), FromTorch(dtype));
}

int64_t CudaBsrmmRowsSetting() {
  return EnvSetting("SPARSETIR_CUDA_BSRMM_ROWS", -1, 16,
                    "a number of rows per thread from 1 to 16, or 0 (one output per thread)");
}

namespace {

// A quarter of the device's resident warps: below that, a bsrmm whose
// threads wait on their loads one step after another leaves too few warps
// to cover the wait, so its tiles take fewer rows (more threads).
constexpr int64_t kBsrmmOccupancyShare = 4;

// The warps a bsrmm launch of `tile` over `block_rows` block rows runs.
int64_t BsrmmWarps(const BsrmmTile& tile, int64_t block_rows, int64_t feat) {
  const int64_t window = tile.lanes * tile.features, threads = tile.lanes * tile.row_threads;
  return block_rows * ((feat + window - 1) / window) * tile.row_slices * ((threads + 31) / 32);
}

}  // namespace

int64_t CudaBsrmmRowsFor(int64_t block_rows, int64_t block_h, int64_t block_w, int64_t feat, at::ScalarType dtype,
                         const c10::Device& device) {
  const int64_t set = CudaBsrmmRowsSetting();
  if (set >= 0 || block_rows <= 0) return set;
  const int64_t resident = device.is_cuda() ? ResidentWarps(device.index()) : kEmulatedResidentWarps;
  for (const int64_t rows : {4, 2}) {
    const BsrmmTile tile = CudaBsrmmTile(FromTorch(dtype), block_h, block_w, feat, rows);
    if (BsrmmWarps(tile, block_rows, feat) * kBsrmmOccupancyShare >= resident) return rows;
  }
  return 1;
}

BsrmmTile CudaBsrmmTileFor(int64_t block_rows, int64_t block_h, int64_t block_w, int64_t feat, at::ScalarType dtype,
                           const c10::Device& device) {
  return CudaBsrmmTile(FromTorch(dtype), block_h, block_w, feat,
                       CudaBsrmmRowsFor(block_rows, block_h, block_w, feat, dtype, device));
}

int64_t CudaRowSegmentLength(const CsrSummary& structure, int64_t feat, at::ScalarType dtype,
                             const c10::Device& device) {
  if (at::globalContext().deterministicAlgorithms()) return 0;
  const int64_t longest = structure.max_row_length;
  const int64_t set = EnvSetting("SPARSETIR_CUDA_ROW_SEGMENT", -1, 1LL << 30,
                                 "a non-negative number of non-zeros (0: rows stay whole)");
  if (set >= 0) return set > 0 && longest > set ? set : 0;
  const int64_t tile = CudaRowLanes(feat) * CudaFeaturesPerThreadFor(feat, dtype);
  const int64_t work = structure.nnz * ((feat + tile - 1) / tile);
  const int64_t warps = device.is_cuda() ? ResidentWarps(device.index()) : kEmulatedResidentWarps;
  const bool cut = longest > 2 * kCudaRowSegment && longest > kLongRowFactor * (work / std::max<int64_t>(warps, 1));
  return cut ? kCudaRowSegment : 0;
}

bool GathersStayCached(const CheckedCsr& csr, int64_t dense_rows, int64_t row_bytes) {
  const double bytes = static_cast<double>(row_bytes), operand = static_cast<double>(dense_rows) * bytes;
  return operand < kPrefetchMinBytes || csr.info->summary().mean_distance * bytes < kLocalWindowBytes;
}

GatherPrefetch GatherPrefetchFor(const CheckedCsr& csr, int64_t dense_rows, int64_t row_bytes) {
  const CsrSummary& structure = csr.info->summary();
  const double bytes = static_cast<double>(row_bytes), operand = static_cast<double>(dense_rows) * bytes;
  if (GathersStayCached(csr, dense_rows, row_bytes)) return GatherPrefetch::kOff;
  if (csr.indptr.is_cuda()) return GatherPrefetch::kToL1;  // the cuda recipes take no prefetches
  // Counted once per graph, and only for the structures this far: the
  // near gathers for a window of the rows that fill kStreamBytes.
  int bits = 0;
  while (bits + 1 < kNearBits && (row_bytes << (bits + 1)) <= kStreamBytes) ++bits;
  const double near = static_cast<double>(csr.info->NearGathers(csr.indptr, csr.indices)[bits]);
  if (near / static_cast<double>(structure.nnz) >= kStreamingShare) return GatherPrefetch::kOff;
  const bool far = kGatherPrefetchDistance * row_bytes >= kL1PrefetchSpanBytes || operand >= kFarOperandBytes;
  return far ? GatherPrefetch::kToL2 : GatherPrefetch::kToL1;
}

GatherPrefetch GatherPrefetchFor(const CheckedCsr& csr, const at::Tensor& dense) {
  return GatherPrefetchFor(csr, dense.size(0), dense.size(1) * dense.element_size());
}

namespace {

// A csrmm kernel (`script`, scheduled by `recipe`) on a CPU or cuda target;
// `lengths`, when defined, is csrmm_mean's row lengths.
void RunCsrmmKernel(const std::string& script, const std::string& recipe, const at::Tensor& indptr,
                    const at::Tensor& indices, const at::Tensor& values, const at::Tensor& dense,
                    const at::Tensor& lengths, const at::Tensor& out, GatherPrefetch prefetch) {
  const int64_t rows = indptr.numel() - 1, feat = dense.size(1), nnz = indices.numel();
  if (rows == 0 || feat == 0) return;
  const Target target = TargetFor(dense, recipe);
  // (A max or min takes one of its products: nothing to round.)
  if (script != "csrmm_max" && script != "csrmm_min" &&
      AccumulatesInNarrowOutput(values.scalar_type(), target, feat)) {
    at::Tensor sums = at::empty(out.sizes(), out.options().dtype(at::kFloat));
    RunCsrmmKernel(script, recipe, indptr, indices, values.to(at::kFloat), dense.to(at::kFloat), lengths, sums,
                   prefetch);
    out.copy_(sums);
    return;
  }
  auto kernel = GetOpKernel(
      {script, recipe, values.scalar_type(), indptr.scalar_type(), CsrmmSizes(dense, target), prefetch, target});
  KernelCall call(*kernel);
  if (lengths.defined()) call.Set("lengths", lengths);
  call.Set("a", values)
      .Set("b", dense)
      .Set("c", out)
      .Set("indptr", indptr)
      .Set("indices", indices)
      .Set("m", rows)
      .Set("n", dense.size(0))
      .Set("feat_size", feat)
      .Set("nnz", nnz)
      .Run(2 * nnz * feat + rows * feat);
}

}  // namespace

void RunCsrmm(const std::string& script, const at::Tensor& indptr, const at::Tensor& indices,
              const at::Tensor& values, const at::Tensor& dense, const at::Tensor& out, GatherPrefetch prefetch) {
  RunCsrmmKernel(script, "csrmm", indptr, indices, values, dense, at::Tensor(), out, prefetch);
}

void RunCsrmmMean(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                  const at::Tensor& dense, const at::Tensor& lengths, const at::Tensor& out, GatherPrefetch prefetch) {
  RunCsrmmKernel("csrmm_mean", "csrmm_mean", indptr, indices, values, dense, lengths, out, prefetch);
}

void RunCsrmmSegments(const RowSegments& segments, const at::Tensor& indices, const at::Tensor& values,
                      const at::Tensor& dense, const at::Tensor& lengths, bool divide, const at::Tensor& out) {
  const int64_t count = segments.row.numel(), feat = dense.size(1), split = segments.split_rows.numel();
  at::Tensor workspace = at::zeros({split, feat}, dense.options().dtype(lengths.scalar_type()));
  if (segments.empty_rows.numel() > 0) out.index_fill_(0, segments.empty_rows, 0);  // rows no segment writes
  if (count == 0 || feat == 0) return;
  const Target target = TargetFor(dense, "csrmm_segments");
  std::map<std::string, int64_t> sizes = CsrmmSizes(dense, target);
  sizes["divide"] = divide ? 1 : 0;
  auto kernel = GetOpKernel({"csrmm_segments", "csrmm_segments", values.scalar_type(), segments.ptr.scalar_type(),
                             sizes, GatherPrefetch::kOff, target});
  ICHECK(kernel->kernel().target().is_cuda()) << "csrmm_segments has only a cuda schedule";
  const SegmentGroups groups =
      CudaSegmentGroups(feat, FeaturesPerThreadSetting(), FromTorch(values.scalar_type()));
  KernelCall(*kernel)
      .Set("a", values)
      .Set("b", dense)
      .Set("c", out)
      .Set("w", workspace)
      .Set("lengths", lengths)
      .Set("seg_row", segments.row)
      .Set("seg_ptr", segments.ptr)
      .Set("seg_slot", segments.slot)
      .Set("indices", indices)
      .Set("segs", count)
      .Set("m", out.size(0))
      .Set("n", dense.size(0))
      .Set("slots", split)
      .Set("feat_size", feat)
      .Set("nnz", indices.numel())
      .Set("divide", divide ? 1 : 0)
      .Set("lanes", groups.lanes)
      .Set("per_thread", groups.per_thread)
      .Set("group", groups.group)
      .Run(2 * indices.numel() * feat);
  if (split == 0) return;
  if (divide) workspace.div_(lengths.index_select(0, segments.split_rows).unsqueeze(1));
  out.index_copy_(0, segments.split_rows, workspace.to(out.scalar_type()));
}

int64_t SddmmGroupLanesFor(const at::Tensor& x, const Target& target, bool gathers_cached) {
  // Four dot products sharing each load of X pay where those loads are what
  // a dot product waits on: Y's rows cached. AMD EPYC Zen 4, AVX2, 1 thread,
  // one at a time -> four (the four sums merged in registers), ms: bcsstk16
  // (banded) at K = 32 / 128 0.47 -> 0.28, 1.61 -> 1.21. Where the rows
  // stream from DRAM (an arrow's) they ran 0.75x as fast, and where they are
  // prefetched from L3 or DRAM from 1.1x as fast (copter2, K = 32) to 0.85x
  // (R-MAT 2^17, K = 64), with no rule that separates the two.
  // 16-bit values keep the one-at-a-time kernel, which sums them in float32.
  const bool wide = x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble;
  if (!target.is_cpu() || !gathers_cached || !wide || x.dim() != 2) return 0;
  return SddmmGroupLanes(x.size(1), x.element_size(), target);
}

void RunSddmmDot(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x, const at::Tensor& y,
                 const at::Tensor& out, GatherPrefetch prefetch, int64_t lanes) {
  const int64_t rows = indptr.numel() - 1, feat = x.size(1), nnz = indices.numel();
  if (nnz == 0) return;
  if (feat == 0) {
    out.zero_();
    return;
  }
  const Target target = TargetFor(x, "sddmm");
  const KernelRequest request =
      lanes > 0 ? KernelRequest{"sddmm_dot_groups", "sddmm_dot_groups", x.scalar_type(), indptr.scalar_type(),
                                {{"feat_size", feat}, {"lanes", lanes}}, prefetch, target}
                : KernelRequest{"sddmm_dot", "sddmm", x.scalar_type(), indptr.scalar_type(), {{"feat_size", feat}},
                                prefetch, target};
  auto kernel = GetOpKernel(request);
  KernelCall call(*kernel);
  call.Set("x", x)
      .Set("y", y)
      .Set("out", out)
      .Set("indptr", indptr)
      .Set("indices", indices)
      .Set("m", rows)
      .Set("n", y.size(0))
      .Set("feat_size", feat)
      .Set("nnz", nnz);
  if (lanes > 0) call.Set("lanes", lanes);
  call.Run(2 * nnz * feat);
}

void RunSddmmSegments(const at::Tensor& seg_row, const at::Tensor& seg_ptr, const at::Tensor& indices,
                      const at::Tensor& x, const at::Tensor& y, const at::Tensor& out) {
  const bool per_head = x.dim() == 3;
  const int64_t segments = seg_row.numel(), heads = per_head ? x.size(1) : 1, feat = x.size(x.dim() - 1);
  if (segments == 0 || heads == 0) return;
  const std::string script = per_head ? "sddmm_heads_segments" : "sddmm_segments";
  std::map<std::string, int64_t> sizes = {{"feat_size", feat}};
  if (per_head) sizes["heads"] = heads;
  auto kernel = GetOpKernel({script, script, x.scalar_type(), seg_ptr.scalar_type(), sizes, GatherPrefetch::kOff,
                             TargetFor(x, script)});
  ICHECK(kernel->kernel().target().is_cuda()) << script << " has only a cuda schedule";
  KernelCall call(*kernel);
  call.Set("x", x)
      .Set("y", y)
      .Set("out", out)
      .Set("seg_row", seg_row)
      .Set("seg_ptr", seg_ptr)
      .Set("indices", indices)
      .Set("segs", segments)
      .Set("m", x.size(0))
      .Set("n", y.size(0))
      .Set("feat_size", feat)
      .Set("nnz", indices.numel());
  if (per_head) call.Set("heads", heads);
  call.Run(2 * indices.numel() * heads * feat);
}

int64_t CudaAttentionColumnLanes(int64_t head_dim, int64_t element_bytes) {
  const char* name = "SPARSETIR_CUDA_ATTENTION_COLUMN_LANES";
  const char* what = "a power of two from 1 to 16 (lanes per column), or 0 (a warp per column)";
  const int64_t set = EnvSetting(name, -1, kMaxAttentionColumnLanes, what);
  if (set > 0 && (set & (set - 1)) != 0) {
    throw UserError(UserErrorKind::kArgument,
                    std::string(name) + " must be " + what + ", got '" + std::to_string(set) + "'");
  }
  if (set >= 0) return set;
  if (element_bytes < 1 || element_bytes > kAttentionBytesPerLane) {
    throw UserError(UserErrorKind::kArgument, "cuda_attention_column_lanes: element_bytes must be from 1 to " +
                                                  std::to_string(kAttentionBytesPerLane) + ", got " +
                                                  std::to_string(element_bytes));
  }
  const int64_t per_lane = kAttentionBytesPerLane / element_bytes;
  int64_t lanes = 1;
  while (lanes < kMaxAttentionColumnLanes && lanes * per_lane < head_dim) lanes *= 2;
  return lanes;
}

AttentionTile CudaAttentionTile(int64_t head_dim, int64_t value_dim, int64_t element_bytes, int64_t column_lanes,
                                int64_t requested) {
  const int64_t rows = requested >= 0 ? requested
                                      : EnvSetting("SPARSETIR_CUDA_ATTENTION_TILE_ROWS", kAttentionTileRowsDefault,
                                                   kMaxAttentionTileRows, "warps a block (1-16), or 0 (no tiles)");
  if (rows > kMaxAttentionTileRows) {
    throw UserError(UserErrorKind::kArgument, "cuda_attention_tile: rows must be from 0 to " +
                                                  std::to_string(kMaxAttentionTileRows) + ", got " +
                                                  std::to_string(rows));
  }
  AttentionTile tile;
  if (rows == 0 || column_lanes <= 0 || element_bytes < 1 || kPieceBytes % element_bytes != 0) return tile;
  const int64_t piece = kPieceBytes / element_bytes;
  if (head_dim % (column_lanes * piece) != 0 || value_dim % kWarpLanes != 0 || value_dim % piece != 0) return tile;
  // Rows 128 bytes apart (or a multiple) would put every k row's first
  // bytes in the same banks; half the banks further on, the two rows a
  // quarter-warp reads at once (two groups of 4 lanes, 64 bytes each) fall
  // on different banks as often as not.
  const int64_t pad = head_dim * element_bytes % kBankBytes == 0 ? kBankBytes / 2 / element_bytes : 0;
  const int64_t column_bytes = (head_dim + pad + value_dim) * element_bytes;
  int64_t columns = kMaxAttentionTileColumns;
  while (columns >= kMinAttentionTileColumns && columns * column_bytes > kAttentionTileSharedBytes) columns /= 2;
  if (columns < kMinAttentionTileColumns) return tile;
  tile.rows = rows;
  tile.columns = columns;
  tile.piece = piece;
  tile.k_stride = head_dim + pad;
  return tile;
}

AttentionForwardPlan CudaAttentionForward(int64_t head_dim, int64_t value_dim, int64_t element_bytes,
                                          bool rows_sorted) {
  const int64_t lanes = CudaAttentionColumnLanes(head_dim, element_bytes);
  if (lanes == 0) return {"sparse_attention_online", {}};
  // The tiles find a row's columns in a tile by binary search: sorted rows only.
  const AttentionTile tile = CudaAttentionTile(head_dim, value_dim, element_bytes, lanes);
  if (tile.rows == 0 || !rows_sorted) return {"sparse_attention_online_columns", {{"column_lanes", lanes}}};
  return {"sparse_attention_tiles",
          {{"column_lanes", lanes}, {"piece", tile.piece}, {"tile_rows", tile.rows}, {"tile_columns", tile.columns},
           {"k_stride", tile.k_stride}}};
}

int64_t CudaSddmmSegmentLength(int64_t feat) {
  const int64_t set = EnvSetting("SPARSETIR_CUDA_SDDMM_SEGMENT", -1, 1LL << 30,
                                 "a non-negative number of non-zeros (0: a thread per non-zero)");
  if (set >= 0) return set;
  return feat >= kSddmmSegmentsFrom ? kSddmmSegment : 0;
}

void RunCsrmmHeads(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                   const at::Tensor& dense, const at::Tensor& out, GatherPrefetch prefetch) {
  const int64_t rows = indptr.numel() - 1, heads = dense.size(1), feat = dense.size(2);
  if (out.numel() == 0) return;
  const Target target = TargetFor(dense, "csrmm_heads");
  if (AccumulatesInNarrowOutput(values.scalar_type(), target, heads * feat)) {
    at::Tensor sums = at::empty(out.sizes(), out.options().dtype(at::kFloat));
    RunCsrmmHeads(indptr, indices, values.to(at::kFloat), dense.to(at::kFloat), sums, prefetch);
    out.copy_(sums);
    return;
  }
  auto kernel = GetOpKernel({"csrmm_heads", "csrmm_heads", values.scalar_type(), indptr.scalar_type(),
                             {{"heads", heads}, {"feat_size", feat}}, prefetch, target});
  KernelCall(*kernel)
      .Set("a", values)
      .Set("b", dense)
      .Set("c", out)
      .Set("indptr", indptr)
      .Set("indices", indices)
      .Set("m", rows)
      .Set("n", dense.size(0))
      .Set("heads", heads)
      .Set("feat_size", feat)
      .Set("nnz", indices.numel())
      .Run(2 * indices.numel() * heads * feat + out.numel());
}

void RunSddmmHeads(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x, const at::Tensor& y,
                   const at::Tensor& out, GatherPrefetch prefetch) {
  const int64_t rows = indptr.numel() - 1, heads = x.size(1), feat = x.size(2), nnz = indices.numel();
  if (out.numel() == 0) return;
  if (feat == 0) {
    out.zero_();
    return;
  }
  auto kernel = GetOpKernel({"sddmm_heads", "sddmm_heads", x.scalar_type(), indptr.scalar_type(),
                             {{"heads", heads}, {"feat_size", feat}}, prefetch, TargetFor(x, "sddmm_heads")});
  KernelCall(*kernel)
      .Set("x", x)
      .Set("y", y)
      .Set("out", out)
      .Set("indptr", indptr)
      .Set("indices", indices)
      .Set("m", rows)
      .Set("n", y.size(0))
      .Set("heads", heads)
      .Set("feat_size", feat)
      .Set("nnz", nnz)
      .Run(2 * nnz * heads * feat);
}

void RunSddmmElementwise(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices,
                         const at::Tensor& x, const at::Tensor& y, const at::Tensor& out, GatherPrefetch prefetch) {
  const std::string script = "sddmm_" + op;
  const int64_t rows = indptr.numel() - 1, feat = x.size(1), nnz = indices.numel();
  if (out.numel() == 0) return;
  auto kernel = GetOpKernel(
      {script, script, x.scalar_type(), indptr.scalar_type(), {{"feat_size", feat}}, prefetch, TargetFor(x, script)});
  KernelCall(*kernel)
      .Set("x", x)
      .Set("y", y)
      .Set("out", out)
      .Set("indptr", indptr)
      .Set("indices", indices)
      .Set("m", rows)
      .Set("n", y.size(0))
      .Set("feat_size", feat)
      .Set("nnz", nnz)
      .Run(nnz * feat);
}

}  // namespace sparsetir::ops
