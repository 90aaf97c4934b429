#include "recipes/cuda_recipes.h"

#include <algorithm>
#include <vector>

#include "support/error.h"

namespace sparsetir {
namespace {

constexpr int64_t kWarp = 32;
// Threads per block: enough warps to hide a gather's latency, few enough
// that a block's rows are a small tail on the last block.
constexpr int64_t kBlockThreads = 128;
// Non-zeros of a row whose loads a thread issues together (csrmm).
constexpr int64_t kNonZerosInFlight = 4;
// Features a csrmm thread owns where the width allows (CudaFeaturesPerThread).
// Two: one index and value load feeds two products and two gathers are in
// flight (H100, float32, K = 128: cuSPARSE time / ours 1.10 -> 1.21 by
// geometric mean over the benchmark matrices); four gave 1.05, with scalar
// loads 16 bytes apart across the lanes (benchmarks/bench_cuda_segments.py).
// The features are a vectorized loop, so a lane moves them with one vector
// load; 16-bit values take four, the same 8 bytes a lane as float32's two.
constexpr int64_t kDefaultFeaturesPerThread = 2;
constexpr int64_t kDefaultFeaturesPerThread16 = 4;
// Rows of a block a bsrmm thread owns (BsrmmTile): with four features and
// four columns a step, 4 x 4 x 4 multiply-adds for 8 vector loads and 16
// accumulators, and a 32 x 32 block's rows spread over 8 threads (two warps
// of 4 row groups), so that a 4096-row matrix at 256 features has some 16
// warps a multiprocessor.
constexpr int64_t kBsrmmRowsPerThreadDefault = 4;
// Non-zeros per block of the fused sddmm loop (a thread per non-zero).
constexpr int64_t kSddmmBlock = 128;
// Features from which a warp computes each sddmm dot product (Sddmm).
constexpr int64_t kSddmmLanesFrom = 32;
// The most blocks along gridDim.y or gridDim.z, and threads in a block.
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxBlockThreads = 1024;
// The shared memory the tensor-core recipes' tiles may take per block: a
// quarter of what a block may declare statically (48 KiB), so that several
// blocks fit on a multiprocessor. Larger tiles stay in global memory.
constexpr int64_t kSharedTileBytes = 12 * 1024;

int64_t Size(const std::map<std::string, int64_t>& sizes, const char* name) {
  auto found = sizes.find(name);
  ICHECK(found != sizes.end()) << "recipe needs the size '" << name << "'";
  return found->second;
}

// The dtype of the script's buffer `name`.
DataType BufferDtype(const PrimFunc& f, const char* name) {
  for (const Buffer& b : f->buffers) {
    if (b->name == name) return b->dtype;
  }
  ICHECK(false) << "recipe needs the buffer '" << name << "'";
  return DataType::kFloat32;
}

// Splits `loop` into a block index and a thread index of `threads`.
void BindSplit(Schedule& sch, const std::string& loop, int64_t threads, const char* block_axis,
               const char* thread_axis) {
  auto parts = sch.Split(loop, {std::nullopt, threads});
  sch.Bind(parts[0], block_axis);
  sch.Bind(parts[1], thread_axis);
}

// Splits the feature loop `k` into a tile over blockIdx.y, the lanes over
// threadIdx.x and, with `per_thread` > 1, the lane's consecutive features of
// a tile of lanes * per_thread: vectorized, so that the lane moves them with
// vector loads and stores, once the caller has made that loop innermost
// (`innermost`: it is already). Returns the parts.
std::vector<std::string> BindFeatures(Schedule& sch, const std::string& k, int64_t lanes, int64_t per_thread,
                                      bool innermost = true) {
  auto parts = per_thread > 1 ? sch.Split(k, {std::nullopt, lanes, per_thread}) : sch.Split(k, {std::nullopt, lanes});
  sch.Bind(parts[0], "blockIdx.y");
  sch.Bind(parts[1], "threadIdx.x");
  if (per_thread > 1 && innermost) sch.Vectorize(parts[2]);
  return parts;
}

// BindFeatures on the feature loop `k` of `block`, which lies outside the
// block's innermost loop, the non-zeros: a lane's own features then go inside
// that loop, vectorized, so that per non-zero the lane moves them with one
// vector load. Returns the parts.
std::vector<std::string> BindFeaturesAroundNonZeros(Schedule& sch, const std::string& block, const std::string& k,
                                                    int64_t lanes, int64_t per_thread) {
  auto parts = BindFeatures(sch, k, lanes, per_thread, /*innermost=*/false);
  if (per_thread > 1) {
    sch.Reorder({sch.GetLoops(block).back(), parts[2]});  // j before the lane's features
    sch.Vectorize(parts[2]);
  }
  return parts;
}

// Rows (csrmm) over blockIdx.x and threadIdx.y, features over blockIdx.y
// and threadIdx.x, the non-zeros j serial inside a thread. The iteration's
// loops are the row loop first and the feature loop last. With
// `per_thread` > 1 a thread owns that many
// consecutive features: one index and value load feeds per_thread products,
// and their gathers are in flight together.
//
// `epilogue`, when given, names an iteration over (row, feature) whose row
// loop is already merged into the block's (csrmm_mean's row_div): its
// feature loop is merged into the block's, so that a thread runs it on the
// output elements it summed, in registers, before they are stored.
void RowGroups(Schedule& sch, const std::string& block, int64_t feat, int64_t per_thread,
               const std::string& epilogue = "") {
  const int64_t lanes = CudaRowLanes(feat);
  auto loops = sch.GetLoops(block);
  BindSplit(sch, loops[0], kBlockThreads / lanes, "blockIdx.x", "threadIdx.y");
  loops = sch.GetLoops(block);  // r_0, r_1, [i,] j, k
  const size_t k_at = loops.size() - 1, j_at = loops.size() - 2;
  sch.Reorder({loops[k_at], loops[j_at]});
  loops = sch.GetLoops(block);  // r_0, r_1, [i,] k, j
  if (!epilogue.empty()) {
    ICHECK(per_thread == 1) << "an epilogue's feature loop has no per-thread split";
    sch.Merge({loops[j_at], sch.GetLoops(epilogue)[j_at]});
  }
  auto k = BindFeaturesAroundNonZeros(sch, block, loops[j_at], lanes, per_thread);
  // A row's non-zeros in unrolled groups: the gathers of a group are in
  // flight together instead of one dependent load after another.
  auto j = sch.Split(sch.GetLoops(block)[j_at + 2], {std::nullopt, kNonZerosInFlight});  // after tile and lane
  sch.Unroll(j[1]);
  // The output elements a thread owns sum in registers; a segment publishes
  // them with one atomic add each.
  sch.CacheWrite(k[1], "C", "local");
}

// Loops of csrmm: i, j, k (init: i, k_init, bound like k).
void Csrmm(Schedule& sch, int64_t feat, int64_t per_thread) {
  RowGroups(sch, "csrmm", feat, per_thread);
  BindFeatures(sch, sch.GetLoops("csrmm_init")[2], CudaRowLanes(feat), per_thread);  // i_0, i_1, k_init
}

// csrmm_mean: csrmm's mapping, with the division by the row's length (the
// row_div iteration, loops i, k) merged into its row loop and then its
// feature loop: a thread divides the sums it owns in registers, so 16-bit
// rows are rounded once, after the division, and the output is written
// once. A thread owns one feature (the division has no per-thread split).
void CsrmmMean(Schedule& sch, int64_t feat) {
  sch.Merge({sch.GetLoops("csrmm")[0], sch.GetLoops("row_div")[0]});
  RowGroups(sch, "csrmm", feat, 1, "row_div");
  BindFeatures(sch, sch.GetLoops("csrmm_init")[2], CudaRowLanes(feat), 1);  // i_0, i_1, k_init
}

// The widest run of consecutive features, at most `widest`, that each of a
// warp's 32 lanes can own across a width of `feat`: `widest` halved until
// 32 runs of it divide the width (1 where none does).
int64_t LaneRun(int64_t feat, int64_t widest) {
  int64_t v = widest;
  while (v > 1 && feat % (kWarp * v) != 0) v /= 2;
  return std::max<int64_t>(v, 1);
}

// The consecutive features of X[i] and Y[j] a lane of the warp-per-non-zero
// sddmm reads per round: one 16-byte vector load of each (fewer where 32 x
// that many do not divide the width).
int64_t SddmmFeaturesPerLane(int64_t feat, DataType values) { return LaneRun(feat, 16 / BytesOf(values)); }

// A warp per non-zero's dot product over the feature loop `k_loop`, whose
// output is cached in registers at loop `out_at`: its lanes read
// consecutive features of X[i] and Y[j] (one coalesced load per warp, where
// a thread per non-zero reads `feat` apart), each sums a part in a
// register, and the lanes combine their parts with shuffles
// (lower_lane_reductions). Where the width allows, a lane reads a round's
// features of X[i] and Y[j] into registers with one vector load each (local
// caches, whose copies are vectorized) and sums them.
void WarpDotProduct(Schedule& sch, const std::string& out_at, const std::string& k_loop, int64_t feat,
                    DataType values) {
  const int64_t per_lane = SddmmFeaturesPerLane(feat, values);
  if (per_lane == 1) {
    auto k = sch.Split(k_loop, {std::nullopt, kWarp});
    sch.Bind(k[1], "threadIdx.x");
    sch.CacheWrite(out_at, "O", "local");
    return;
  }
  auto k = sch.Split(k_loop, {std::nullopt, kWarp, per_lane});  // rounds, lanes, a lane's features
  sch.Reorder({k[1], k[0]});
  sch.Bind(k[1], "threadIdx.x");
  sch.Unroll(k[2]);
  sch.CacheWrite(out_at, "O", "local");
  sch.CacheRead(k[0], "X", "local");
  sch.CacheRead(k[0], "Y", "local");
}

// sddmm_dot: the (i, j) pairs fused into one loop over the non-zeros. Below
// kSddmmLanesFrom features a thread computes a non-zero's dot product alone;
// from there a warp does (WarpDotProduct).
void Sddmm(Schedule& sch, int64_t feat, DataType values) {
  sch.SparseFuse("sddmm", {"I", "J"});
  auto loops = sch.GetLoops("sddmm");  // ij, k
  if (feat < kSddmmLanesFrom) {
    BindSplit(sch, loops[0], kSddmmBlock, "blockIdx.x", "threadIdx.x");
    loops = sch.GetLoops("sddmm");  // ij_0, ij_1, k
    sch.CacheWrite(loops[1], "O", "local");
    return;
  }
  BindSplit(sch, loops[0], kBlockThreads / kWarp, "blockIdx.x", "threadIdx.y");
  loops = sch.GetLoops("sddmm");  // ij_0, ij_1, k
  WarpDotProduct(sch, loops[1], loops[2], feat, values);
}

// Binds `loop` of `extent` iterations to a grid axis (y or z) where the grid
// allows that many blocks; otherwise the loop stays serial in every thread.
void BindGridOrSerial(Schedule& sch, const std::string& loop, int64_t extent, const char* axis) {
  if (extent <= kMaxGridYZ) sch.Bind(loop, axis);
}

// A segment's non-zeros (loop `j_at` of `block`, the features right after
// it) in unrolled groups, so that the gathers of a group are in flight
// together, each dot product over the warp's lanes (WarpDotProduct).
void SegmentDotProducts(Schedule& sch, const std::string& block, size_t j_at, int64_t feat, DataType values) {
  sch.Unroll(sch.Split(sch.GetLoops(block)[j_at], {std::nullopt, kNonZerosInFlight})[1]);
  auto loops = sch.GetLoops(block);  // ..., j_0, j_1, k
  WarpDotProduct(sch, loops[j_at + 1], loops[j_at + 2], feat, values);
}

// sddmm_segments: loops s, i (one slot), j, k. A warp per row segment: the
// segment's row comes with it (seg_row), where the fused loop's warp per
// non-zero searched indptr for it, a chain of dependent loads that bound the
// kernel at any width.
void SddmmSegments(Schedule& sch, int64_t feat, DataType values) {
  BindSplit(sch, sch.GetLoops("sddmm_segments")[0], kBlockThreads / kWarp, "blockIdx.x", "threadIdx.y");
  SegmentDotProducts(sch, "sddmm_segments", 3, feat, values);  // s_0, s_1, i, j, k
}

// sddmm_heads_segments: loops s, i (one slot), j, h, k. sddmm_segments'
// mapping with the heads moved out of the non-zero loop onto blockIdx.y
// (as sddmm_heads'), so that a warp walks its segment for one head.
void SddmmHeadsSegments(Schedule& sch, int64_t heads, int64_t feat, DataType values) {
  const std::string block = "sddmm_heads_segments";
  BindSplit(sch, sch.GetLoops(block)[0], kBlockThreads / kWarp, "blockIdx.x", "threadIdx.y");
  auto loops = sch.GetLoops(block);  // s_0, s_1, i, j, h, k
  sch.Reorder({loops[4], loops[3]});
  BindGridOrSerial(sch, sch.GetLoops(block)[3], heads, "blockIdx.y");
  SegmentDotProducts(sch, block, 4, feat, values);  // s_0, s_1, i, h, j, k
}

// csrmm_heads: loops i, j, h, k. The csrmm mapping with the heads over
// blockIdx.z: a row per thread group, the group's lanes over consecutive
// features of one head (one coalesced load of that head's slice of B[j] per
// non-zero), a lane's features (as csrmm's: one vector load where the width
// allows) in registers.
void CsrmmHeads(Schedule& sch, int64_t heads, int64_t feat, DataType values) {
  const int64_t lanes = CudaRowLanes(feat);
  const int64_t per_thread = CudaFeaturesPerThread(feat, 0, values);
  auto loops = sch.GetLoops("csrmm_heads");
  BindSplit(sch, loops[0], kBlockThreads / lanes, "blockIdx.x", "threadIdx.y");
  loops = sch.GetLoops("csrmm_heads");  // i_0, i_1, j, h, k
  sch.Reorder({loops[3], loops[4], loops[2]});
  loops = sch.GetLoops("csrmm_heads");  // i_0, i_1, h, k, j
  BindGridOrSerial(sch, loops[2], heads, "blockIdx.z");
  auto k = BindFeaturesAroundNonZeros(sch, "csrmm_heads", loops[3], lanes, per_thread);
  auto j = sch.Split(sch.GetLoops("csrmm_heads")[5], {std::nullopt, kNonZerosInFlight});  // i_0, i_1, h, k_0, k_1, j
  sch.Unroll(j[1]);
  sch.CacheWrite(k[1], "C", "local");
  auto init = sch.GetLoops("csrmm_heads_init");  // i_0, i_1, h, k
  BindGridOrSerial(sch, init[2], heads, "blockIdx.z");
  BindFeatures(sch, init[3], lanes, per_thread);
}

// sddmm_heads: loops i, j, h, k. The sddmm mapping (the row found by binary
// search) with the heads over blockIdx.y: below kSddmmLanesFrom features per
// head a thread per non-zero computes one head's dot product in a register;
// from there a warp per non-zero does, over the head's features
// (WarpDotProduct, vector rounds included).
void SddmmHeads(Schedule& sch, int64_t heads, int64_t feat, DataType values) {
  sch.SparseFuse("sddmm_heads", {"I", "J"});
  auto loops = sch.GetLoops("sddmm_heads");  // ij, h, k
  const bool lanes = feat >= kSddmmLanesFrom;
  if (lanes) {
    BindSplit(sch, loops[0], kBlockThreads / kWarp, "blockIdx.x", "threadIdx.y");
  } else {
    BindSplit(sch, loops[0], kSddmmBlock, "blockIdx.x", "threadIdx.x");
  }
  loops = sch.GetLoops("sddmm_heads");  // ij_0, ij_1, h, k
  BindGridOrSerial(sch, loops[2], heads, "blockIdx.y");
  if (lanes) {
    WarpDotProduct(sch, loops[2], loops[3], feat, values);
  } else {
    sch.CacheWrite(loops[2], "O", "local");
  }
}

// sddmm_add / sddmm_mul: loops i, j, f, all spatial. A thread per non-zero
// and feature: the non-zeros fused over blockIdx.x and threadIdx.x, the
// features over blockIdx.y.
void SddmmElementwise(Schedule& sch, const std::string& block, int64_t feat) {
  sch.SparseFuse(block, {"I", "J"});
  auto loops = sch.GetLoops(block);  // ij, f
  BindSplit(sch, loops[0], kSddmmBlock, "blockIdx.x", "threadIdx.x");
  loops = sch.GetLoops(block);  // ij_0, ij_1, f
  BindGridOrSerial(sch, loops[2], feat, "blockIdx.y");
}

// bsrmm: loops i, j, bi, bj, f. A block row per blockIdx.x and a row of the
// block per blockIdx.z, its features over lanes (as csrmm's row groups): a
// thread sums its output element over the row's blocks j and their columns
// bj in a register; the block's value is the same for every lane and the
// dense row's features are read with one coalesced load per warp.
void Bsrmm(Schedule& sch, int64_t block_h, int64_t feat) {
  const int64_t lanes = CudaRowLanes(feat);
  auto loops = sch.GetLoops("bsrmm");  // i, j, bi, bj, f
  sch.Reorder({loops[2], loops[4], loops[1], loops[3]});
  loops = sch.GetLoops("bsrmm");  // i, bi, f, j, bj
  sch.Bind(loops[0], "blockIdx.x");
  BindGridOrSerial(sch, loops[1], block_h, "blockIdx.z");
  auto f = BindFeatures(sch, loops[2], lanes, 1);
  sch.CacheWrite(f[1], "C", "local");
  auto init = sch.GetLoops("bsrmm_init");  // i, bi, f
  BindGridOrSerial(sch, init[1], block_h, "blockIdx.z");
  BindFeatures(sch, init[2], lanes, 1);
}

// bsrmm in register tiles (BsrmmTile): loops i, j, bi, bj, f. A block row
// per blockIdx.x, a window of lanes x `features` outputs per blockIdx.y and
// a slice of its rows per blockIdx.z; a thread owns `rows` rows x
// `features` outputs (threadIdx.y over the slice's row groups, threadIdx.x
// over the window's feature groups), summed in registers over the row's
// blocks j. Per `columns` columns of a block it loads its rows' values, one
// vector per row (the same address across a warp's lanes: one broadcast),
// and the B rows' features, one vector each, then makes rows x columns x
// features multiply-adds from registers: where one output per thread made
// two loads per multiply-add, a 4 x 4 x 4 step makes 8 vector loads for 64.
// The init is merged into the thread's loops, so the tile starts from zero
// in registers and reaches C with one vector store per row. Windows or
// slices past the grid's 65,535 stay serial in every thread.
void BsrmmTiles(Schedule& sch, const BsrmmTile& tile, int64_t feat) {
  auto loops = sch.GetLoops("bsrmm");  // i, j, bi, bj, f
  auto f = sch.Split(loops[4], {std::nullopt, tile.lanes, tile.features});
  auto bi = sch.Split(loops[2], {std::nullopt, tile.row_threads, tile.rows});
  auto bj = sch.Split(loops[3], {std::nullopt, tile.columns});
  sch.Reorder({bi[0], bi[1], f[0], f[1], loops[1], bj[0], bi[2], bj[1], f[2]});
  auto init = sch.GetLoops("bsrmm_init");  // i, bi, f
  auto init_bi = sch.Split(init[1], {std::nullopt, tile.row_threads, tile.rows});
  auto init_f = sch.Split(init[2], {std::nullopt, tile.lanes, tile.features});
  sch.Reorder({init_bi[0], init_bi[1], init_f[0], init_f[1], init_bi[2], init_f[2]});
  const std::string row_slice = sch.Merge({init_bi[0], bi[0]});
  const std::string row_threads = sch.Merge({init_bi[1], bi[1]});
  const std::string window = sch.Merge({init_f[0], f[0]});
  const std::string lanes = sch.Merge({init_f[1], f[1]});
  sch.Bind(loops[0], "blockIdx.x");
  const int64_t window_outputs = tile.lanes * tile.features;
  BindGridOrSerial(sch, window, (feat + window_outputs - 1) / window_outputs, "blockIdx.y");
  BindGridOrSerial(sch, row_slice, tile.row_slices, "blockIdx.z");
  sch.Bind(row_threads, "threadIdx.y");
  sch.Bind(lanes, "threadIdx.x");
  sch.Unroll(init_bi[2]);
  sch.Vectorize(init_f[2]);
  sch.Unroll(bi[2]);
  sch.Unroll(bj[1]);
  sch.Vectorize(f[2]);
  sch.CacheWrite(lanes, "C", "local");
  sch.CacheRead(bj[0], "A", "local");
  sch.CacheRead(bj[0], "B", "local");
}

// The tensor-core tile (T.sp.mma_sync: 16 rows, 8 columns, 16 deep) and the
// most 8-column tiles a warp accumulates side by side: four share each
// 16 x 16 tile of A it loads, and the accumulators take 16 registers.
constexpr int64_t kMmaRows = 16, kMmaColumns = 8, kMmaDepth = 16;
constexpr int64_t kMmaTilesPerWarp = 4;

// Caches the tiles of 16-bit `buffers` (elements each) that one iteration
// of `loop` reads in shared memory, if they fit kSharedTileBytes together:
// the block's threads copy them with coalesced loads, and the mmas read
// their fragments from there instead of element by element from memory.
void SharedTiles(Schedule& sch, const std::string& loop,
                 const std::vector<std::pair<const char*, int64_t>>& buffers) {
  int64_t bytes = 0;
  for (const auto& [buffer, elements] : buffers) bytes += 2 * elements;
  if (bytes > kSharedTileBytes) return;
  for (const auto& [buffer, elements] : buffers) sch.CacheRead(loop, buffer, "shared");
}

// The 8-column tiles a warp accumulates side by side for `columns` columns
// (a multiple of 8): the most, up to kMmaTilesPerWarp, that divide them.
int64_t MmaTilesPerWarp(int64_t columns) {
  int64_t tiles = kMmaTilesPerWarp;
  while ((columns / kMmaColumns) % tiles != 0) tiles /= 2;
  return tiles;
}

// True if bsrmm runs on tensor cores: 16-bit blocks whose sides are
// multiples of 16 and features a multiple of 8.
bool BsrmmOnTensorCores(DataType values, int64_t block_h, int64_t block_w, int64_t feat) {
  return (values == DataType::kFloat16 || values == DataType::kBFloat16) && block_h % kMmaRows == 0 &&
         block_w % kMmaDepth == 0 && feat % kMmaColumns == 0 && block_h / kMmaRows * kWarp <= kMaxBlockThreads;
}

// bsrmm on tensor cores: loops i, j, bi, bj, f. A block row per blockIdx.x,
// a warp per 16 rows of it (threadIdx.y) and per `tiles` x 8 features
// (blockIdx.y). The warp accumulates its 16 x (8 tiles) outputs in a float32
// fragment (cache_write; lower_mma_fragments) over the row's blocks j and
// their 16-column slices, one T.sp.mma_sync per 8 features (tensorize); the
// init is merged into the warp's loops so that it zeroes the fragment, and
// the output is rounded once when the fragment is stored.
void BsrmmMma(Schedule& sch, int64_t block_h, int64_t block_w, int64_t feat) {
  const int64_t tiles = MmaTilesPerWarp(feat);
  auto loops = sch.GetLoops("bsrmm");  // i, j, bi, bj, f
  auto bi = sch.Split(loops[2], {std::nullopt, kMmaRows});
  auto bj = sch.Split(loops[3], {std::nullopt, kMmaDepth});
  // Two splits, so that a warp's features are one window f_0 * (8 tiles) + t:
  // the cache holds that window, not the whole row.
  auto f = sch.Split(loops[4], {std::nullopt, kMmaColumns * tiles});
  auto f_tile = sch.Split(f[1], {std::nullopt, kMmaColumns});
  sch.Reorder({bi[0], f[0], loops[1], bj[0], f_tile[0], bi[1], f_tile[1], bj[1]});
  auto init = sch.GetLoops("bsrmm_init");  // i, bi, f
  auto init_bi = sch.Split(init[1], {std::nullopt, kMmaRows});
  auto init_f = sch.Split(init[2], {std::nullopt, kMmaColumns * tiles});
  sch.Reorder({init_bi[0], init_f[0], init_bi[1], init_f[1]});
  const std::string warp_rows = sch.Merge({init_bi[0], bi[0]});
  const std::string warp_features = sch.Merge({init_f[0], f[0]});
  sch.Bind(loops[0], "blockIdx.x");
  sch.Bind(warp_rows, "threadIdx.y");
  sch.Bind(warp_features, "blockIdx.y");
  sch.CacheWrite(warp_features, "C", "local");
  // Per block j: its values and the window of B's rows it multiplies.
  SharedTiles(sch, loops[1], {{"A", block_h * block_w}, {"B", block_w * kMmaColumns * tiles}});
  sch.Tensorize(bi[1], "mma_m16n8k16");
}

// bsr_linear_tiles: loops i, n, j, r, bj, bi (init: i, n, r, bi). A batch
// tile of 16 rows per blockIdx.x and a block row of the weight per
// blockIdx.y; a warp per `tiles` x 8 outputs of the block row (threadIdx.y).
// The warp's 16 x (8 tiles) outputs sum in a float32 fragment over the row's
// blocks and their 16-column slices, one T.sp.mma_sync (X's rows times WT's
// columns) per 8 outputs, as in BsrmmMma.
void BsrLinearMma(Schedule& sch, int64_t block_h, int64_t block_w) {
  const int64_t tiles = MmaTilesPerWarp(block_h);
  auto loops = sch.GetLoops("bsr_linear");  // i, n, j, r, bj, bi
  auto bj = sch.Split(loops[4], {std::nullopt, kMmaDepth});
  auto bi = sch.Split(loops[5], {std::nullopt, kMmaColumns * tiles});
  auto bi_tile = sch.Split(bi[1], {std::nullopt, kMmaColumns});
  sch.Reorder({bi[0], loops[2], bj[0], bi_tile[0], loops[3], bi_tile[1], bj[1]});
  auto init = sch.GetLoops("bsr_linear_init");  // i, n, r, bi
  auto init_bi = sch.Split(init[3], {std::nullopt, kMmaColumns * tiles});
  sch.Reorder({init_bi[0], init[2], init_bi[1]});
  const std::string warp = sch.Merge({init_bi[0], bi[0]});
  sch.Bind(loops[0], "blockIdx.y");
  sch.Bind(loops[1], "blockIdx.x");
  sch.Bind(warp, "threadIdx.y");
  sch.CacheWrite(warp, "Y", "local");
  // Per block j: the batch tile's columns it multiplies and its values.
  SharedTiles(sch, loops[2], {{"X", kMmaRows * block_w}, {"WT", block_w * block_h}});
  sch.Tensorize(loops[3], "mma_m16n8k16");
}

// bsr_linear_grad_blocks_tiles: loops ij (the stored blocks, fused), n, bi,
// bj, r (init: ij, bi, bj). A stored block per blockIdx.x, a warp per 16 of
// its rows (threadIdx.y) and per `tiles` x 8 of its columns (blockIdx.y). The
// warp's 16 x (8 tiles) gradients sum in a float32 fragment over the batch
// tiles, one T.sp.mma_sync per 8 columns: dY's tile is read transposed (its
// rows are the block's rows), X's as it is.
void BsrLinearGradBlocksMma(Schedule& sch, int64_t block_h, int64_t block_w) {
  const int64_t tiles = MmaTilesPerWarp(block_w);
  sch.SparseFuse("grad_blocks", {"I", "J"});
  auto loops = sch.GetLoops("grad_blocks");  // ij, n, bi, bj, r
  auto bi = sch.Split(loops[2], {std::nullopt, kMmaRows});
  auto bj = sch.Split(loops[3], {std::nullopt, kMmaColumns * tiles});
  auto bj_tile = sch.Split(bj[1], {std::nullopt, kMmaColumns});
  sch.Reorder({bi[0], bj[0], loops[1], bj_tile[0], bi[1], bj_tile[1], loops[4]});
  auto init = sch.GetLoops("grad_blocks_init");  // ij, bi, bj
  auto init_bi = sch.Split(init[1], {std::nullopt, kMmaRows});
  auto init_bj = sch.Split(init[2], {std::nullopt, kMmaColumns * tiles});
  sch.Reorder({init_bi[0], init_bj[0], init_bi[1], init_bj[1]});
  const std::string warp_rows = sch.Merge({init_bi[0], bi[0]});
  const std::string warp_columns = sch.Merge({init_bj[0], bj[0]});
  sch.Bind(loops[0], "blockIdx.x");
  sch.Bind(warp_rows, "threadIdx.y");
  sch.Bind(warp_columns, "blockIdx.y");
  sch.CacheWrite(warp_columns, "DW", "local");
  // Per batch tile n: dY's rows of the block and X's window of its columns.
  SharedTiles(sch, loops[1], {{"DY", kMmaDepth * block_h}, {"X", kMmaDepth * kMmaColumns * tiles}});
  sch.Tensorize(bi[1], "mma_m16n8k16");
}

// Splits a block's row loop `bi` (block_h rows) into lanes over threadIdx.x
// (and, beyond kBlockThreads rows, blockIdx.z). Returns the parts.
std::vector<std::string> BindBlockRows(Schedule& sch, const std::string& bi, int64_t block_h) {
  const int64_t lanes = std::min(block_h, kBlockThreads);
  auto parts = sch.Split(bi, {std::nullopt, lanes});
  BindGridOrSerial(sch, parts[0], (block_h + lanes - 1) / lanes, "blockIdx.z");
  sch.Bind(parts[1], "threadIdx.x");
  return parts;
}

// bsr_linear: loops i, n, j, bj, bi (Y[n, i, bi] = sum over j, bj of
// X[n, j, bj] WT[i, j, bj, bi]). Batch rows over blockIdx.x (the long axis:
// tokens) and threadIdx.y, a block row of the weight per blockIdx.y, the
// block's rows bi over threadIdx.x: the lanes read a transposed block's row
// WT[i, j, bj, :] together and share X[n, j, bj]; a thread's output element
// sums in a register.
// The init block shares the loops i and n and has its own bi.
void BsrLinear(Schedule& sch, int64_t block_h) {
  auto loops = sch.GetLoops("bsr_linear");  // i, n, j, bj, bi
  sch.Reorder({loops[4], loops[2], loops[3]});
  loops = sch.GetLoops("bsr_linear");  // i, n, bi, j, bj
  sch.Bind(loops[0], "blockIdx.y");
  BindSplit(sch, loops[1], std::max<int64_t>(kBlockThreads / std::min(block_h, kBlockThreads), 1), "blockIdx.x",
            "threadIdx.y");
  auto bi = BindBlockRows(sch, sch.GetLoops("bsr_linear")[3], block_h);  // i, n_0, n_1, bi
  sch.CacheWrite(bi[1], "Y", "local");
  BindBlockRows(sch, sch.GetLoops("bsr_linear_init").back(), block_h);
}

// bsr_linear in register tiles (BsrLinearTile): loops i, n, j, bj, bi. A
// block row of the weight per blockIdx.y, `batch_threads` batch rows per
// block (threadIdx.y, blockIdx.x beyond), a window of lanes x `features`
// outputs of the block row per blockIdx.z; a thread owns `features`
// consecutive outputs of one batch row, summed in registers over the row's
// blocks. Per `columns` columns of a block it loads the batch row's values,
// one vector (the same address across the lanes), and WT's rows of its
// outputs, one vector each, then makes columns x features multiply-adds
// from registers: 5 vector loads for 16 where a thread per output made two
// loads per multiply-add. The init is merged into the thread's loops. The
// windows stay serial in every thread past the grid's 65,535.
void BsrLinearTiles(Schedule& sch, const BsrLinearTile& tile, int64_t block_h) {
  auto loops = sch.GetLoops("bsr_linear");  // i, n, j, bj, bi
  auto n = sch.Split(loops[1], {std::nullopt, tile.batch_threads});
  auto bi = sch.Split(loops[4], {std::nullopt, tile.lanes, tile.features});
  auto bj = sch.Split(loops[3], {std::nullopt, tile.columns});
  sch.Reorder({bi[0], bi[1], loops[2], bj[0], bj[1], bi[2]});
  auto init = sch.GetLoops("bsr_linear_init");  // i, n_0, n_1, bi
  auto init_bi = sch.Split(init.back(), {std::nullopt, tile.lanes, tile.features});
  const std::string window = sch.Merge({init_bi[0], bi[0]});
  const std::string lanes = sch.Merge({init_bi[1], bi[1]});
  sch.Bind(loops[0], "blockIdx.y");
  sch.Bind(n[0], "blockIdx.x");
  sch.Bind(n[1], "threadIdx.y");
  const int64_t window_outputs = tile.lanes * tile.features;
  BindGridOrSerial(sch, window, (block_h + window_outputs - 1) / window_outputs, "blockIdx.z");
  sch.Bind(lanes, "threadIdx.x");
  sch.Vectorize(init_bi[2]);
  sch.Unroll(bj[1]);
  sch.Vectorize(bi[2]);
  sch.CacheWrite(lanes, "Y", "local");
  sch.CacheRead(bj[0], "X", "local");
  sch.CacheRead(bj[0], "WT", "local");
}

// The block loops (bi, bj) of one stored block: bj over threadIdx.x (and
// blockIdx.y beyond a warp), bi over threadIdx.y (and blockIdx.z beyond the
// kMaxBlockThreads a block of threads may have). Returns the innermost part
// of bj.
std::string BindBlockElements(Schedule& sch, const std::string& bi, const std::string& bj, int64_t block_h,
                              int64_t block_w) {
  const int64_t lanes = std::min(block_w, kWarp);
  const int64_t rows = std::min(block_h, kMaxBlockThreads / lanes);
  auto x = sch.Split(bj, {std::nullopt, lanes});
  BindGridOrSerial(sch, x[0], (block_w + lanes - 1) / lanes, "blockIdx.y");
  sch.Bind(x[1], "threadIdx.x");
  auto y = sch.Split(bi, {std::nullopt, rows});
  BindGridOrSerial(sch, y[0], (block_h + rows - 1) / rows, "blockIdx.z");
  sch.Bind(y[1], "threadIdx.y");
  return x[1];
}

// bsr_linear_grad_blocks: loops i, j, n, bi, bj (DW[i, j, bi, bj] = sum over
// n of DY[n, i, bi] X[n, j, bj]). A stored block per blockIdx.x (the
// non-zero blocks fused, the block row found by binary search), a thread per
// element of the block summing over the batch in a register: the lanes read
// X[n, j, :] together and share DY[n, i, bi].
void BsrLinearGradBlocks(Schedule& sch, int64_t block_h, int64_t block_w) {
  sch.SparseFuse("grad_blocks", {"I", "J"});
  auto loops = sch.GetLoops("grad_blocks");  // ij, n, bi, bj
  sch.Reorder({loops[2], loops[3], loops[1]});
  loops = sch.GetLoops("grad_blocks");  // ij, bi, bj, n
  sch.Bind(loops[0], "blockIdx.x");
  const std::string lane = BindBlockElements(sch, loops[1], loops[2], block_h, block_w);
  sch.CacheWrite(lane, "DW", "local");
  // The init's elements go to the threads that sum them: one thread zeroing
  // the whole block would race with the others' sums.
  auto init = sch.GetLoops("grad_blocks_init");  // ij, bi, bj
  BindBlockElements(sch, init[1], init[2], block_h, block_w);
}

// gat_attention (the scores, the softmax passes and the weighted sum of
// neighbour rows): a thread per row runs every pass of its row, the row loops
// merged, so the passes need no synchronization (each reads only what the
// same thread wrote) and a row's per-head max and sum stay with that thread.
// sparse_attention has no recipe of its own here: on cuda the operator
// composes the multi-head sddmm, edge_softmax and spmm, which spread a row's
// dot products, softmax and weighted sum over lanes (op_sparse_attention.cc).
void RowPassesPerThread(Schedule& sch, const std::vector<std::string>& blocks) {
  std::vector<std::string> rows;
  for (const std::string& block : blocks) rows.push_back(sch.GetLoops(block)[0]);
  BindSplit(sch, sch.Merge(rows), kBlockThreads, "blockIdx.x", "threadIdx.x");
}

// edge_softmax (row_max, row_exp, row_sum, row_div) and its backward
// (row_dot, grad_scores): a warp per row, four rows per block. The row loops
// are merged; in each pass the row's non-zeros are spread over the lanes
// (j split by 32, the lanes innermost, the heads outside them), so that a
// warp reads a row's scores with coalesced loads where a thread per row
// read them one by one. The per-head max, sum or dot of a row (`reduced`)
// is cached in registers for the whole row: each lane reduces its non-zeros
// and the lanes combine their parts with shuffles (lower_lane_reductions)
// before the next pass reads the result.
void RowPassesPerWarp(Schedule& sch, const std::vector<std::string>& blocks, const std::vector<std::string>& reduced) {
  std::vector<std::string> rows;
  for (const std::string& block : blocks) rows.push_back(sch.GetLoops(block)[0]);
  BindSplit(sch, sch.Merge(rows), kBlockThreads / kWarp, "blockIdx.x", "threadIdx.y");
  for (const std::string& block : blocks) {
    auto loops = sch.GetLoops(block);  // r_0, r_1, j, h
    sch.Reorder({loops[3], loops[2]});
    auto j = sch.Split(loops[2], {std::nullopt, kWarp});  // r_0, r_1, h, j_0, j_1
    sch.Bind(j[1], "threadIdx.x");
  }
  const std::string row = sch.GetLoops(blocks[0])[1];
  for (const std::string& buffer : reduced) sch.CacheWrite(row, buffer, "local");
}

}  // namespace

int64_t CudaRowLanes(int64_t feat) {
  int64_t lanes = 1;
  while (lanes < feat && lanes < kWarp) lanes *= 2;
  return lanes;
}

bool BsrLinearOnTensorCores(DataType values, int64_t block_h, int64_t block_w) {
  if ((values != DataType::kFloat16 && values != DataType::kBFloat16) || block_h % kMmaColumns != 0 ||
      block_w % kMmaDepth != 0) {
    return false;
  }
  const int64_t warps = block_h / (kMmaColumns * MmaTilesPerWarp(block_h));
  return warps * kWarp <= kMaxBlockThreads;
}

bool BsrLinearGradBlocksOnTensorCores(DataType values, int64_t block_h, int64_t block_w) {
  return (values == DataType::kFloat16 || values == DataType::kBFloat16) && block_h % kMmaRows == 0 &&
         block_w % kMmaColumns == 0 && block_h / kMmaRows * kWarp <= kMaxBlockThreads;
}

const char* const kFeaturesPerThread = "features_per_thread";

const char* const kBsrmmRowsPerThread = "rows_per_thread";

namespace {

// The largest divisor of n (> 0) that is at most `most` (>= 1).
int64_t LargestDivisorUpTo(int64_t n, int64_t most) {
  int64_t d = std::min(n, most);
  while (n % d != 0) --d;
  return d;
}

// The elements of a register tile's vector: a 16-byte one of float64 or
// float32 (two, four), and four 16-bit values (8 bytes, as spmm's threads
// read them).
int64_t VectorElements(DataType values) { return values == DataType::kFloat64 ? 2 : 4; }

// The largest power of two up to `vector` (one) that divides `width`: a
// vector that a row of `width` elements holds whole at every step.
int64_t WidestDividing(int64_t vector, int64_t width) {
  while (width % vector != 0) vector /= 2;
  return vector;
}

}  // namespace

BsrmmTile CudaBsrmmTile(DataType values, int64_t block_h, int64_t block_w, int64_t feat, int64_t requested) {
  if (requested == 0) return BsrmmTile{0, 1, 1, CudaRowLanes(feat), 1, block_h};
  // One 16-byte vector of features a thread (two float64, four of the
  // others: 16-bit values read 8 bytes, as spmm's threads do) and of a
  // block row's columns, narrowed until it divides the width.
  const int64_t vector = VectorElements(values);
  BsrmmTile tile;
  tile.features = WidestDividing(vector, feat);
  tile.columns = WidestDividing(vector, block_w);
  // The block's rows split exactly (rows, row threads and slices divide
  // them): a split that does not leaves a guard between the loops, which
  // would keep the init's loops and the update's apart.
  tile.rows = LargestDivisorUpTo(block_h, requested > 0 ? requested : kBsrmmRowsPerThreadDefault);
  tile.lanes = CudaRowLanes((feat + tile.features - 1) / tile.features);
  const int64_t row_groups = block_h / tile.rows;
  tile.row_threads = LargestDivisorUpTo(row_groups, std::max<int64_t>(1, kBlockThreads / tile.lanes));
  tile.row_slices = row_groups / tile.row_threads;
  return tile;
}

BsrLinearTile CudaBsrLinearTile(DataType values, int64_t block_h, int64_t block_w, int64_t requested) {
  if (requested == 0) return BsrLinearTile{0, 1, 1, 1};
  const int64_t vector = VectorElements(values);
  BsrLinearTile tile;
  tile.features = WidestDividing(vector, block_h);
  tile.columns = WidestDividing(vector, block_w);
  tile.lanes = CudaRowLanes(block_h / tile.features);
  tile.batch_threads = std::max<int64_t>(1, kBlockThreads / tile.lanes);
  return tile;
}

SegmentGroups CudaSegmentGroups(int64_t feat, int64_t requested, DataType values) {
  SegmentGroups groups;
  groups.lanes = CudaRowLanes(feat);
  groups.per_thread = CudaFeaturesPerThread(feat, requested, values);
  groups.group = kBlockThreads / groups.lanes;
  return groups;
}

int64_t CudaFeaturesPerThread(int64_t feat, int64_t requested, DataType values) {
  const bool narrow = values == DataType::kFloat16 || values == DataType::kBFloat16;
  return LaneRun(feat, requested > 0 ? requested : narrow ? kDefaultFeaturesPerThread16 : kDefaultFeaturesPerThread);
}

bool HasCudaRecipe(const std::string& recipe) {
  return recipe == "csrmm" || recipe == "csrmm_mean" || recipe == "csrmm_segments" || recipe == "sddmm" ||
         recipe == "sddmm_segments" || recipe == "sddmm_heads_segments" || recipe == "csrmm_heads" ||
         recipe == "sddmm_heads" || recipe == "sddmm_add" || recipe == "sddmm_mul" ||
         recipe == "edge_softmax" || recipe == "edge_softmax_backward" || recipe == "bsrmm" || recipe == "bsr_linear" ||
         recipe == "bsr_linear_tiles" || recipe == "bsr_linear_grad_blocks_tiles" ||
         recipe == "bsr_linear_grad_blocks" || recipe == "gat_attention" || recipe == "sparse_attention_online" ||
         recipe == "sparse_attention_online_columns" || recipe == "sparse_attention_tiles" ||
         recipe == "sparse_attention_backward_online" ||
         recipe == "sparse_attention_backward_online_columns";
}

Schedule ScheduleForCuda(const PrimFunc& f, const std::string& recipe, const std::map<std::string, int64_t>& sizes) {
  if (!HasCudaRecipe(recipe)) {
    throw UserError(UserErrorKind::kSchedule, "the '" + recipe + "' kernel has no cuda schedule yet");
  }
  std::map<std::string, int64_t> script_sizes = sizes;
  int64_t requested = 0, rows_per_thread = -1;
  if (auto found = script_sizes.find(kFeaturesPerThread); found != script_sizes.end()) {
    requested = found->second;
    script_sizes.erase(found);
  }
  if (auto found = script_sizes.find(kBsrmmRowsPerThread); found != script_sizes.end()) {
    rows_per_thread = found->second;
    script_sizes.erase(found);
  }
  Schedule sch(f);
  sch.Specialize(script_sizes);
  if (recipe == "csrmm") {
    const int64_t feat = Size(sizes, "feat_size");
    Csrmm(sch, feat, CudaFeaturesPerThread(feat, requested, BufferDtype(f, "A")));
  } else if (recipe == "csrmm_segments") {
    // A stage-III script that binds its own loops: the recipe sizes its
    // thread groups as csrmm's.
    const SegmentGroups groups = CudaSegmentGroups(Size(sizes, "feat_size"), requested, BufferDtype(f, "A"));
    sch.Specialize({{"lanes", groups.lanes}, {"per_thread", groups.per_thread}, {"group", groups.group}});
  } else if (recipe == "csrmm_mean") {
    CsrmmMean(sch, Size(sizes, "feat_size"));
  } else if (recipe == "csrmm_heads") {
    CsrmmHeads(sch, Size(sizes, "heads"), Size(sizes, "feat_size"), BufferDtype(f, "A"));
  } else if (recipe == "sddmm_heads") {
    SddmmHeads(sch, Size(sizes, "heads"), Size(sizes, "feat_size"), BufferDtype(f, "X"));
  } else if (recipe == "bsrmm") {
    const int64_t block_h = Size(sizes, "block_h"), feat = Size(sizes, "feat_size");
    const int64_t block_w = Size(sizes, "block_w");
    const DataType values = BufferDtype(f, "A");
    const BsrmmTile tile = CudaBsrmmTile(values, block_h, block_w, feat, rows_per_thread);
    if (BsrmmOnTensorCores(values, block_h, block_w, feat)) {
      BsrmmMma(sch, block_h, block_w, feat);
    } else if (tile.rows > 0) {
      BsrmmTiles(sch, tile, feat);
    } else {
      Bsrmm(sch, block_h, feat);
    }
  } else if (recipe == "bsr_linear") {
    const BsrLinearTile tile = CudaBsrLinearTile(BufferDtype(f, "X"), Size(sizes, "block_h"),
                                                 Size(sizes, "block_w"), rows_per_thread);
    if (tile.features > 0) {
      BsrLinearTiles(sch, tile, Size(sizes, "block_h"));
    } else {
      BsrLinear(sch, Size(sizes, "block_h"));
    }
  } else if (recipe == "bsr_linear_tiles") {
    if (!BsrLinearOnTensorCores(BufferDtype(f, "X"), Size(sizes, "block_h"), Size(sizes, "block_w")) ||
        Size(sizes, "tile_rows") != kMmaRows) {
      throw UserError(UserErrorKind::kSchedule, "bsr_linear_tiles runs on tensor cores only: 16-bit blocks of a "
                                                "multiple of 8 rows and 16 columns, in tiles of 16 batch rows");
    }
    BsrLinearMma(sch, Size(sizes, "block_h"), Size(sizes, "block_w"));
  } else if (recipe == "bsr_linear_grad_blocks_tiles") {
    if (!BsrLinearGradBlocksOnTensorCores(BufferDtype(f, "X"), Size(sizes, "block_h"), Size(sizes, "block_w")) ||
        Size(sizes, "tile_rows") != kMmaDepth) {
      throw UserError(UserErrorKind::kSchedule, "bsr_linear_grad_blocks_tiles runs on tensor cores only: 16-bit "
                                                "blocks of a multiple of 16 rows and 8 columns, in tiles of 16 batch "
                                                "rows");
    }
    BsrLinearGradBlocksMma(sch, Size(sizes, "block_h"), Size(sizes, "block_w"));
  } else if (recipe == "bsr_linear_grad_blocks") {
    BsrLinearGradBlocks(sch, Size(sizes, "block_h"), Size(sizes, "block_w"));
  } else if (recipe == "edge_softmax") {
    RowPassesPerWarp(sch, {"row_max", "row_exp", "row_sum", "row_div"}, {"MX", "SM"});
  } else if (recipe == "edge_softmax_backward") {
    RowPassesPerWarp(sch, {"row_dot", "grad_scores"}, {"RD"});
  } else if (recipe == "gat_attention") {
    RowPassesPerThread(sch, {"row_score", "row_max", "row_exp", "row_sum", "row_div", "aggregate"});
  } else if (recipe == "sparse_attention_online" || recipe == "sparse_attention_online_columns" ||
             recipe == "sparse_attention_tiles" || recipe == "sparse_attention_backward_online" ||
             recipe == "sparse_attention_backward_online_columns") {
    // Stage-III scripts that bind their own loops: specialized, nothing more.
  } else if (recipe == "sddmm_segments") {
    SddmmSegments(sch, Size(sizes, "feat_size"), BufferDtype(f, "X"));
  } else if (recipe == "sddmm_heads_segments") {
    SddmmHeadsSegments(sch, Size(sizes, "heads"), Size(sizes, "feat_size"), BufferDtype(f, "X"));
  } else if (recipe == "sddmm_add" || recipe == "sddmm_mul") {
    SddmmElementwise(sch, recipe, Size(sizes, "feat_size"));
  } else {
    auto feat = sizes.find("feat_size");
    Sddmm(sch, feat == sizes.end() ? 0 : feat->second, BufferDtype(f, "X"));
  }
  return sch;
}

}  // namespace sparsetir
