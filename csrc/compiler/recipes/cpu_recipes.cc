#include "recipes/cpu_recipes.h"

#include <algorithm>

#include "support/error.h"

namespace sparsetir {
namespace {

// The bytes of one lane when `buffer` of `f` is computed in vectors: 16-bit
// values accumulate in float32 (the code generator widens them), so they take
// 4 bytes like float32.
int64_t ElementBytes(const PrimFunc& f, const std::string& buffer) {
  for (const Buffer& b : f->buffers) {
    if (b->name == buffer) return BytesOf(b->dtype) == 8 ? 8 : 4;
  }
  ICHECK(false) << "recipe needs the buffer '" << buffer << "' in " << f->name;
  return 4;
}

// Splits `loop` (extent `extent`) into vectors: the inner loop vectorized, the
// outer one unrolled when its vectors fit the registers. Returns false when no
// vector fits.
bool VectorizeInner(Schedule& sch, const std::string& loop, int64_t extent, int64_t element_bytes,
                    const Target& target) {
  int64_t lanes = VectorLanes(extent, element_bytes, target);
  if (lanes <= 1) return false;
  auto parts = sch.Split(loop, {std::nullopt, lanes});
  if (extent / lanes <= RegisterBudgetOf(target).max_unrolled_vectors) sch.Unroll(parts[0]);
  sch.Vectorize(parts[1]);
  return true;
}

void RowsInParallel(Schedule& sch, const std::string& block) { sch.Parallel(sch.GetLoops(block)[0]); }

// The rows of `buffer` gathered through the column indices of non-zero loop
// `j` are prefetched kGatherPrefetchDistance non-zeros ahead, into the cache
// level options.prefetch names: no hardware prefetcher predicts a gather,
// and on an operand larger than L2 its loads are what the kernel waits on.
// `ahead` counts iterations of `j` (a loop over groups of non-zeros takes
// fewer).
void PrefetchGather(Schedule& sch, const std::string& j, const std::string& buffer, const RecipeOptions& options,
                    int64_t ahead = kGatherPrefetchDistance) {
  if (options.prefetch == GatherPrefetch::kOff) return;
  sch.Prefetch(j, buffer, ahead, options.prefetch == GatherPrefetch::kToL2 ? 2 : 1);
}

// csrmm / csrmm_max / csrmm_min with rows of more vectors than the level has
// registers (float32: AVX2 at K = 256, SSE2 at K >= 128): one pass over the
// row's non-zeros per feature tile of plan.unrolled_vectors vectors, the
// tile's accumulators in registers (cache_write inside the tile loop holds
// the tile, not the row). A row kept whole in a local array runs every
// multiply-add through a load and a store. AMD EPYC Zen 4, AVX2, 1 thread,
// whole row -> tiles of 8 vectors (`bench_ops.py --isa avx2 --ops
// spmm,reduce`): at K = 256 spmm sum 1.04-1.26x and max 1.09-1.34x as fast
// on 9 of the 11 matrices (bcsstk16 0.81 / 1.00, lund_a 0.89 / 1.00, both
// cached); at K = 128, where the row is as many vectors as the registers,
// 0.66-0.93x: there GCC keeps most of the whole row in registers itself.
// (Tiles of 4 vectors ran 10-20 % slower than 8.) Structures whose gathers
// need no prefetch (the operand cached, or read in streams) keep the whole
// row: each tile's pass re-reads the row's indices and values, which is
// what costs when the gathers are cheap (bcsstk16 and lund_a above, and
// bcsstk16 at SSE2, K = 128, 2 threads: 0.91 of torch's time with tiles,
// 1.08 without).
void CsrmmFeatureTiles(Schedule& sch, const CsrmmPlan& plan, const RecipeOptions& options) {
  auto loops = sch.GetLoops("csrmm");
  const std::string &i = loops[0], &j = loops[1], &k = loops[2];
  auto parts = sch.Split(k, {std::nullopt, plan.unrolled_vectors, plan.vector_lanes});
  sch.Reorder({parts[0], j});
  sch.Unroll(parts[1]);
  sch.Vectorize(parts[2]);
  sch.CacheWrite(parts[0], "C", "local");
  PrefetchGather(sch, j, "B", options);
  sch.Parallel(i);
}

// csrmm / csrmm_max / csrmm_min: loops i, j, k. `epilogue`, when given, is
// a block of csrmm_mean's kind (loops i, k) run on each output row after its
// reduction: its row loop is merged into csrmm's first, so it runs on the row
// in the local cache, before the row is stored.
void Csrmm(Schedule& sch, int64_t feat, int64_t element_bytes, const RecipeOptions& options,
           const std::string& epilogue = "") {
  const CsrmmPlan plan = PlanCsrmm(feat, element_bytes, options.target, options.prefetch);
  if (plan.feature_tile < feat && epilogue.empty()) {
    CsrmmFeatureTiles(sch, plan, options);
    return;
  }
  if (!epilogue.empty()) {
    sch.Merge({sch.GetLoops("csrmm")[0], sch.GetLoops(epilogue)[0]});
    VectorizeInner(sch, sch.GetLoops(epilogue)[1], feat, element_bytes, options.target);
  }
  auto loops = sch.GetLoops("csrmm");
  std::string j = loops[1];
  VectorizeInner(sch, loops[2], feat, element_bytes, options.target);
  if (plan.output_row_local) {
    sch.CacheWrite(loops[0], "C", "local");
    if (plan.accumulator_sets == 2) {
      auto halves = sch.Split(loops[1], {std::nullopt, 2});
      sch.RFactor(halves[1]);
      sch.Unroll(halves[1]);
      j = halves[1];
    }
  }
  PrefetchGather(sch, j, "B", options);
  sch.Parallel(loops[0]);
}

// One ELL bucket of a hyb SpMM (csrmm_ell_<mode>: the compute part of
// csrmm decomposed onto kernels/formats/ell_rows.py; loops o, i, j, k, with
// o the ELL rows and i the one row each maps to). `mode` says how the
// bucket writes the output: "overwrite" (the buckets partition the rows),
// "add" (column parts share rows, but no two ELL rows of this bucket do, so
// its accumulation needs no atomics) or "atomic" (a long row split into
// several ELL rows: lower_atomic makes the accumulation atomic).
void CsrmmEll(Schedule& sch, const std::string& mode, int64_t feat, bool width_specialized, int64_t element_bytes,
              const RecipeOptions& options) {
  ICHECK(mode == "overwrite" || mode == "add" || mode == "atomic") << "no csrmm_ell mode '" << mode << "'";
  if (mode == "add") sch.Annotate("csrmm_ell", "atomic", MakeBoolAttr(false));
  sch.LowerSparseIter();
  const CsrmmPlan plan = PlanCsrmm(feat, element_bytes, options.target);
  auto loops = sch.GetLoops("csrmm_ell");
  const std::string &o = loops[0], &i = loops[1], &j = loops[2], &k = loops[3];
  if (plan.vector_lanes > 1) {
    auto parts = sch.Split(k, {std::nullopt, plan.vector_lanes});
    // A bucket's row runs whole: a plan in feature tiles unrolls one tile's
    // vectors, not the row's.
    if (plan.unrolled_vectors > 1 && plan.feature_tile == feat) sch.Unroll(parts[0]);
    sch.Vectorize(parts[1]);
  }
  // The ELL row's output row in registers; in an atomic bucket it sums
  // privately and is published with one atomic add per element.
  if (plan.output_row_local) sch.CacheWrite(i, "C", "local");
  // A bucket of a known (small) width runs its slots unrolled.
  if (width_specialized) sch.Unroll(j);
  // The slots ahead run on into the next ELL rows.
  PrefetchGather(sch, j, "B", options);
  sch.Parallel(o);
}

// How many partial sums a dot product of `vectors` SIMD vectors keeps. One
// sum is one chain of dependent multiply-adds; out-of-order execution hides
// its latency behind the next non-zero's chain while a chain is short, but
// not a chain of 32 or more (AVX2 at K = 256, SSE2 at K >= 128). Measured
// (the Zen 4 VM, 1 thread, cache-resident lund_a and bcsstk16, memory-bound
// horse-laplacian): 4 sums there ran 1.07-1.33x (AVX2) and 1.25-1.8x (SSE2) as
// fast as one; at 16 vectors 2 sums gained on the cached matrices and lost
// 5-10 % on horse-laplacian, so shorter dot products keep one.
// The sums take turns over whole vectors, so their count divides `vectors`.
int64_t DotPartialSums(int64_t vectors) {
  if (vectors < 32) return 1;
  return vectors % 4 == 0 ? 4 : vectors % 2 == 0 ? 2 : 1;
}

// A dot product over `k` (extent `extent`) accumulated into `buffer` inside
// loop `j`: the accumulator lives in a register (cache_write), and the
// reduction is factored into vector lanes (rfactor) so it runs as independent
// SIMD FMAs with one horizontal sum at the end; a long one into several
// vectors of lanes, consecutive vectors taking turns (DotPartialSums).
void VectorDot(Schedule& sch, const std::string& j, const std::string& k, const std::string& buffer, int64_t extent,
               int64_t element_bytes, const Target& target) {
  sch.CacheWrite(j, buffer, "local");
  int64_t lanes = VectorLanes(extent, element_bytes, target);
  if (lanes <= 1) return;
  const int64_t vectors = extent / lanes;
  const int64_t sums = DotPartialSums(vectors);
  auto parts = sch.Split(k, {std::nullopt, sums * lanes});
  sch.RFactor(parts[1]);
  if (sums > 1) {
    auto sum_lanes = sch.Split(parts[1], {sums, lanes});
    sch.Unroll(sum_lanes[0]);
    sch.Vectorize(sum_lanes[1]);
    if (sums > 2) {
      // The merge's first level adds the upper half of the sums to the lower
      // (rfactor's tree, named after the factored loop): whole registers, not
      // one vector several times as wide as the target's.
      auto halves = sch.Split(parts[1] + "_tree", {std::nullopt, lanes});
      sch.Unroll(halves[0]);
      sch.Vectorize(halves[1]);
    }
  } else {
    sch.Vectorize(parts[1]);
  }
  if (vectors <= RegisterBudgetOf(target).max_unrolled_vectors) sch.Unroll(parts[0]);
}

// sddmm_dot_groups (kernels/sddmm_dot_groups.py, a stage-III script: a
// row's non-zeros four at a time, loop g, and its last ones one at a time,
// loop t; kg and kt walk the feature vectors). Their vector loops are
// unrolled (GCC caps it at 16), the gathers prefetched as options say (the
// operators choose this kernel where they say kOff), rows in parallel.
void SddmmDotGroups(Schedule& sch, const RecipeOptions& options) {
  sch.Unroll("kg");
  sch.Unroll("kt");
  PrefetchGather(sch, "g", "Y", options, kGatherPrefetchDistance / kSddmmGroup);
  PrefetchGather(sch, "t", "Y", options);
  sch.Parallel("i");
}

// sddmm_dot: loops i, j, k; k is the reduction.
void Sddmm(Schedule& sch, int64_t feat, int64_t element_bytes, const RecipeOptions& options) {
  auto loops = sch.GetLoops("sddmm");
  VectorDot(sch, loops[1], loops[2], "O", feat, element_bytes, options.target);
  PrefetchGather(sch, loops[1], "Y", options);
  sch.Parallel(loops[0]);
}

// The aggregation of a multi-head SpMM (csrmm_heads, and the last pass of
// gat_attention): loops i, j, h, k. A non-zero's heads run unrolled when their
// vectors fit the registers, each head's features as vectors; with one
// feature per head the heads themselves are the vector (the edge values and
// the gathered row are both contiguous in h). The output row (heads x
// features) stays local while the row's non-zeros are summed.
void AggregateHeads(Schedule& sch, const std::string& block, const std::string& out, const std::string& gathered,
                    int64_t heads, int64_t feat, int64_t element_bytes, const RecipeOptions& options) {
  auto loops = sch.GetLoops(block);
  const std::string &i = loops[0], &j = loops[1], &h = loops[2], &k = loops[3];
  const bool local = heads * feat <= kMaxLocalTile;
  if (feat == 1) {
    // The cache first: its copy loops are written before the fusion renames
    // the feature index.
    if (local) sch.CacheWrite(i, out, "local");
    VectorizeInner(sch, sch.Fuse({h, k}), heads, element_bytes, options.target);
  } else {
    const int64_t lanes = VectorLanes(feat, element_bytes, options.target);
    const int64_t vectors = lanes > 1 ? feat / lanes : feat;
    VectorizeInner(sch, k, feat, element_bytes, options.target);
    if (heads * vectors <= RegisterBudgetOf(options.target).max_unrolled_vectors) sch.Unroll(h);
    if (local) sch.CacheWrite(i, out, "local");
  }
  PrefetchGather(sch, j, gathered, options);
}

// csrmm_heads: the aggregation above, rows in parallel.
void CsrmmHeads(Schedule& sch, int64_t heads, int64_t feat, int64_t element_bytes, const RecipeOptions& options) {
  AggregateHeads(sch, "csrmm_heads", "C", "B", heads, feat, element_bytes, options);
  RowsInParallel(sch, "csrmm_heads");
}

// sddmm_heads: loops i, j, h, k; a dot product per (non-zero, head), each
// head's accumulator a register, the heads unrolled when few.
void SddmmHeads(Schedule& sch, int64_t heads, int64_t feat, int64_t element_bytes, const RecipeOptions& options) {
  auto loops = sch.GetLoops("sddmm_heads");
  VectorDot(sch, loops[2], loops[3], "O", feat, element_bytes, options.target);
  if (heads <= RegisterBudgetOf(options.target).max_unrolled_vectors) sch.Unroll(loops[2]);
  PrefetchGather(sch, loops[1], "Y", options);
  sch.Parallel(loops[0]);
}

// sddmm_add / sddmm_mul: loops i, j, f; a non-zero's features as vectors.
void SddmmElementwise(Schedule& sch, const std::string& block, int64_t feat, int64_t element_bytes,
                      const RecipeOptions& options) {
  auto loops = sch.GetLoops(block);
  VectorizeInner(sch, loops[2], feat, element_bytes, options.target);
  PrefetchGather(sch, loops[1], "Y", options);
  sch.Parallel(loops[0]);
}

constexpr const char* kSoftmaxBlocks[] = {"scores", "row_max", "row_exp", "row_sum", "row_div"};

// The scores of attention (q_i . k_j): a dot product per non-zero.
void AttentionScores(Schedule& sch, int64_t head_dim, int64_t element_bytes, const RecipeOptions& options) {
  auto scores = sch.GetLoops("scores");
  VectorDot(sch, scores[1], scores[2], "P", head_dim, element_bytes, options.target);
  PrefetchGather(sch, scores[1], "K", options);
}

// The scores and softmax iterations of attention (q_i . k_j, then the row's
// max, exp, sum and division), each parallel over rows.
void AttentionProbs(Schedule& sch, int64_t head_dim, int64_t element_bytes, const RecipeOptions& options) {
  AttentionScores(sch, head_dim, element_bytes, options);
  for (const char* block : kSoftmaxBlocks) RowsInParallel(sch, block);
}

// bsrmm: loops i, j, bi, bj, f. Each output row's feature tile stays in
// registers while the block's columns bj pass (a broadcast A value times a
// vector of B per column); the block row's output stays local across its
// blocks. A row of more vectors than half the registers runs in tiles, the
// tile loop outside the block's rows, so a tile's slice of the B block
// (block_w x tile) stays in L1 for all of them. AMD EPYC Zen 4, 1 thread,
// 4096 x 4096, 32 x 32 blocks, 80 / 95 % block sparsity: SSE2 at K = 64
// (16 vectors) 1.3-1.4x as fast as the row's vector loop not unrolled;
// AVX2 at K = 256 (32 vectors) 1.25x as fast as the row unrolled whole
// (GCC then keeps the row in memory). Tiles of several rows times fewer
// vectors (4 x 2, 2 x 4) measured alike or slower: each row of a tile costs
// a broadcast, which SSE2 makes a shuffle. The slice is packed (PlanBsrmm
// says when) where its rows lie 1 KiB or more apart: such power-of-two
// strides put the slice's lines in a few L1 sets, where they evict each
// other; SSE2 at K = 256 ran 1.1-1.25x as fast packed.
void Bsrmm(Schedule& sch, int64_t block_h, int64_t feat, int64_t element_bytes, const Target& target) {
  const BsrmmPlan plan = PlanBsrmm(block_h, feat, element_bytes, target);
  auto loops = sch.GetLoops("bsrmm");
  const std::string &i = loops[0], &bi = loops[2], &bj = loops[3], &f = loops[4];
  if (plan.feature_tile < feat) {
    auto parts = sch.Split(f, {std::nullopt, plan.unrolled_vectors, plan.vector_lanes});
    sch.Reorder({parts[0], bi, bj, parts[1], parts[2]});
    sch.Unroll(parts[1]);
    sch.Vectorize(parts[2]);
    if (plan.b_tile_packed) sch.CacheRead(parts[0], "B", "local");
  } else if (plan.vector_lanes > 1) {
    auto parts = sch.Split(f, {std::nullopt, plan.vector_lanes});
    if (plan.unrolled_vectors > 1) sch.Unroll(parts[0]);
    sch.Vectorize(parts[1]);
  }
  if (plan.output_tile_local) sch.CacheWrite(i, "C", "local");
  sch.Parallel(i);
}

// bsr_linear: loops i, n, j, bj, bi. A batch row's output block (block_h
// values) stays in registers while the blocks of weight row i are
// accumulated into it, each WT row a vector operand and X[n, j, bj] a
// broadcast; output blocks are independent, so they run in parallel.
void BsrLinear(Schedule& sch, int64_t block_h, int64_t element_bytes, const Target& target) {
  auto loops = sch.GetLoops("bsr_linear");
  VectorizeInner(sch, loops[4], block_h, element_bytes, target);
  if (block_h <= kMaxLocalTile) sch.CacheWrite(loops[1], "Y", "local");
  sch.Parallel(loops[0]);
}

// bsr_linear_grad_blocks: loops i, j, n, bi, bj. The block's gradient tile
// stays local while the batch streams past; each of its rows takes a
// broadcast dY value times a vector of X.
void BsrLinearGradBlocks(Schedule& sch, int64_t block_h, int64_t block_w, int64_t element_bytes,
                         const Target& target) {
  auto loops = sch.GetLoops("grad_blocks");
  VectorizeInner(sch, loops[4], block_w, element_bytes, target);
  if (block_h * block_w <= kMaxLocalTile) sch.CacheWrite(loops[1], "DW", "local");
  sch.Parallel(loops[0]);
}

// sparse_attention: six row-parallel iterations; the weighted sum of value
// rows is an SpMM and is scheduled like one. (Merging the six row loops into
// one, sch.merge, measured no faster at L = 4096: a row then gathers key and
// value rows alike, 2 MB that no longer fit one core's L2, which costs what
// keeping the row's probabilities in L1 saves.)
void SparseAttention(Schedule& sch, int64_t head_dim, int64_t value_dim, int64_t element_bytes,
                     const RecipeOptions& options) {
  AttentionProbs(sch, head_dim, element_bytes, options);
  auto loops = sch.GetLoops("weighted_sum");
  VectorizeInner(sch, loops[2], value_dim, element_bytes, options.target);
  if (value_dim <= kMaxLocalTile) sch.CacheWrite(loops[0], "O", "local");
  PrefetchGather(sch, loops[1], "V", options);
  sch.Parallel(loops[0]);
}

void AttentionGradScores(Schedule& sch) {
  RowsInParallel(sch, "row_dot");
  RowsInParallel(sch, "grad_scores");
}

// edge_softmax / edge_softmax_backward: the row passes merged into one
// row-parallel loop. Nothing is gathered, so a row's scores are read from L1
// by every pass after the first, where separate passes would stream all nnz
// values from memory four times.
void RowPassesMerged(Schedule& sch, const std::vector<std::string>& blocks) {
  std::vector<std::string> rows;
  for (const std::string& block : blocks) rows.push_back(sch.GetLoops(block)[0]);
  sch.Parallel(sch.Merge(rows));
}

// The row passes of a multi-head edge softmax (loops i, j, h): a non-zero's
// heads are one vector in every pass (h is spatial in the max and the sum
// too, so each head's additions keep their order). Left to itself the C++
// compiler vectorizes these passes across non-zeros with gathers and masks,
// twice as slow at 4 heads (cond-mat-2005, Zen 4).
void HeadsAsVectors(Schedule& sch, const std::vector<std::string>& blocks, int64_t heads, int64_t element_bytes,
                    const Target& target) {
  for (const std::string& block : blocks) VectorizeInner(sch, sch.GetLoops(block)[2], heads, element_bytes, target);
}

// The element-wise passes of the edge softmax (exp, division) run over a
// row's non-zeros as vectors when there is one head; with several, every
// pass takes a non-zero's heads as a vector. The row's max and sum over one
// head stay scalar, as a vector sum would reorder additions.
void EdgeSoftmax(Schedule& sch, int64_t heads, int64_t element_bytes, const Target& target) {
  if (heads == 1) {
    for (const char* block : {"row_exp", "row_div"}) {
      auto loops = sch.GetLoops(block);
      sch.Vectorize(sch.Fuse({loops[1], loops[2]}));
    }
  } else {
    HeadsAsVectors(sch, {"row_max", "row_exp", "row_sum", "row_div"}, heads, element_bytes, target);
  }
  RowPassesMerged(sch, {"row_max", "row_exp", "row_sum", "row_div"});
}

// gat_attention: the five softmax passes (score, max, exp, sum, division)
// merged into one row-parallel loop, so a row's scores stay in L1 from the
// first pass to the last, each pass taking a non-zero's heads as a vector;
// the weighted sum is a second row-parallel loop, scheduled as a multi-head
// SpMM. (Merging the weighted sum into the same loop measured slower:
// email-Enron, 4 heads, Zen 4, 1 / 2 threads: 9.3 / 3.6 ms against 7.2 /
// 3.4 ms at 16 channels, 17.3 / 11.2 against 14.9 / 9.1 at 64.)
void GatAttention(Schedule& sch, int64_t heads, int64_t feat, int64_t element_bytes, const RecipeOptions& options) {
  const std::vector<std::string> softmax = {"row_score", "row_max", "row_exp", "row_sum", "row_div"};
  std::vector<std::string> rows;
  for (const std::string& block : softmax) rows.push_back(sch.GetLoops(block)[0]);
  const std::string row = sch.Merge(rows);
  HeadsAsVectors(sch, softmax, heads, element_bytes, options.target);
  sch.Parallel(row);
  AggregateHeads(sch, "aggregate", "O", "X", heads, feat, element_bytes, options);
  RowsInParallel(sch, "aggregate");
}

int64_t Size(const std::map<std::string, int64_t>& sizes, const char* name) {
  auto found = sizes.find(name);
  ICHECK(found != sizes.end()) << "recipe needs the size '" << name << "'";
  return found->second;
}

}  // namespace

int64_t VectorLanes(int64_t extent, int64_t element_bytes, const Target& target) {
  int64_t lanes = target.max_lanes(element_bytes);
  while (lanes > 1 && (extent % lanes != 0 || extent < lanes)) lanes /= 2;
  return lanes;
}

RegisterBudget RegisterBudgetOf(const Target& target) {
  // Half the register file for a row's unrolled vectors leaves the other half
  // for the gathered rows, the broadcast value and addresses. Two sets of
  // accumulators (each taking every other non-zero) hide the FMA latency that
  // one dependent chain per vector leaves exposed; they pay while both sets
  // hold at most four vectors, a quarter of a 32-register file.
  const int64_t registers = target.vector_registers();
  return {registers / 2, registers / 8};
}

int64_t SddmmGroupLanes(int64_t feat, int64_t element_bytes, const Target& target) {
  // Rows of 4 vectors or more: a row of fewer is mostly its merge of partial
  // sums. A shorter row takes narrower vectors, down to 16 bytes: AMD EPYC
  // Zen 4, AVX-512, 1 thread, K = 32 in 8 lanes against one at a time in 16,
  // ms: bcsstk16 0.27 against 0.51, horse-laplacian 0.71 against 0.83 (at
  // K = 64 8 lanes measured alike to 16). Before the four sums merged in
  // registers, groups of 2 vectors ran horse-laplacian 0.9x as fast.
  int64_t lanes = VectorLanes(feat, element_bytes, target);
  const int64_t narrowest = std::max<int64_t>(2, 16 / element_bytes);
  while (lanes > narrowest && feat < 4 * lanes) lanes /= 2;
  return lanes >= 2 && lanes <= 16 && feat >= 4 * lanes ? lanes : 0;
}

BsrmmPlan PlanBsrmm(int64_t block_h, int64_t feat, int64_t element_bytes, const Target& target) {
  BsrmmPlan plan;
  plan.vector_lanes = VectorLanes(feat, element_bytes, target);
  plan.feature_tile = feat;
  plan.unrolled_vectors = 1;
  plan.output_tile_local = block_h * feat <= kMaxLocalTile;
  plan.b_tile_packed = false;
  if (plan.vector_lanes <= 1) return plan;
  const int64_t vectors = feat / plan.vector_lanes;
  const int64_t budget = RegisterBudgetOf(target).max_unrolled_vectors;
  // The largest tile of at most `budget` vectors that divides the row; a
  // row whose only such divisors are small (a prime count of vectors) keeps
  // its vector loop rolled, as tiles of one or two vectors would leave
  // most registers idle and pay a broadcast per vector or two.
  int64_t tile = std::min(vectors, budget);
  while (vectors % tile != 0) --tile;
  if (tile == vectors || 2 * tile >= budget) {
    plan.unrolled_vectors = tile;
    plan.feature_tile = tile * plan.vector_lanes;
  }
  // Packing copies the slice once per block and tile; it pays back over 32
  // block rows (SSE2, K = 256: 16-row blocks measured alike, 8-row blocks
  // 0.8x as fast packed) and only where the rows alias in L1 (K = 64 and
  // 128 in float32 measured alike).
  plan.b_tile_packed = plan.feature_tile < feat && block_h >= 32 && feat * element_bytes >= 1024;
  return plan;
}

CsrmmPlan PlanCsrmm(int64_t feat, int64_t element_bytes, const Target& target, GatherPrefetch prefetch) {
  CsrmmPlan plan;
  plan.vector_lanes = VectorLanes(feat, element_bytes, target);
  const int64_t vectors = plan.vector_lanes > 1 ? feat / plan.vector_lanes : 0;
  const RegisterBudget budget = RegisterBudgetOf(target);
  plan.unrolled_vectors = vectors > 0 && vectors <= budget.max_unrolled_vectors ? vectors : 1;
  plan.output_row_local = feat <= kMaxLocalTile;
  plan.accumulator_sets = plan.output_row_local && vectors > 0 && vectors <= budget.max_two_accumulator_vectors ? 2 : 1;
  plan.feature_tile = feat;
  const bool wide = vectors > target.vector_registers() && vectors % budget.max_unrolled_vectors == 0;
  if (plan.output_row_local && wide && prefetch != GatherPrefetch::kOff) {
    plan.unrolled_vectors = budget.max_unrolled_vectors;
    plan.feature_tile = budget.max_unrolled_vectors * plan.vector_lanes;
  }
  return plan;
}

Schedule ScheduleForCpu(const PrimFunc& f, const std::string& recipe, const std::map<std::string, int64_t>& sizes,
                        const RecipeOptions& options) {
  Schedule sch(f);
  sch.Specialize(sizes);
  ICHECK(options.target.is_cpu()) << "a cpu recipe for a " << options.target.str() << " target";
  if (recipe == "csrmm") {
    Csrmm(sch, Size(sizes, "feat_size"), ElementBytes(f, "C"), options);
  } else if (recipe == "csrmm_mean") {
    Csrmm(sch, Size(sizes, "feat_size"), ElementBytes(f, "C"), options, "row_div");
  } else if (IsEllBucketRecipe(recipe)) {
    CsrmmEll(sch, recipe.substr(sizeof(kEllBucketRecipe) - 1), Size(sizes, "feat_size"),
             sizes.count("width_ell") > 0, ElementBytes(f, "C"), options);
  } else if (recipe == "sddmm") {
    Sddmm(sch, Size(sizes, "feat_size"), ElementBytes(f, "O"), options);
  } else if (recipe == "sddmm_dot_groups") {
    SddmmDotGroups(sch, options);
  } else if (recipe == "bsrmm") {
    Bsrmm(sch, Size(sizes, "block_h"), Size(sizes, "feat_size"), ElementBytes(f, "C"), options.target);
  } else if (recipe == "sparse_attention") {
    SparseAttention(sch, Size(sizes, "head_dim"), Size(sizes, "value_dim"), ElementBytes(f, "O"), options);
  } else if (recipe == "attention_probs") {
    AttentionProbs(sch, Size(sizes, "head_dim"), ElementBytes(f, "P"), options);
  } else if (recipe == "attention_grad_scores") {
    AttentionGradScores(sch);
  } else if (recipe == "bsr_linear") {
    BsrLinear(sch, Size(sizes, "block_h"), ElementBytes(f, "Y"), options.target);
  } else if (recipe == "bsr_linear_grad_blocks") {
    BsrLinearGradBlocks(sch, Size(sizes, "block_h"), Size(sizes, "block_w"), ElementBytes(f, "DW"), options.target);
  } else if (recipe == "csrmm_heads") {
    CsrmmHeads(sch, Size(sizes, "heads"), Size(sizes, "feat_size"), ElementBytes(f, "C"), options);
  } else if (recipe == "sddmm_heads") {
    SddmmHeads(sch, Size(sizes, "heads"), Size(sizes, "feat_size"), ElementBytes(f, "O"), options);
  } else if (recipe == "sddmm_add" || recipe == "sddmm_mul") {
    SddmmElementwise(sch, recipe, Size(sizes, "feat_size"), ElementBytes(f, "O"), options);
  } else if (recipe == "gat_attention") {
    GatAttention(sch, Size(sizes, "heads"), Size(sizes, "feat_size"), ElementBytes(f, "O"), options);
  } else if (recipe == "edge_softmax") {
    EdgeSoftmax(sch, Size(sizes, "heads"), ElementBytes(f, "P"), options.target);
  } else if (recipe == "edge_softmax_backward") {
    RowPassesMerged(sch, {"row_dot", "grad_scores"});
  } else {
    ICHECK(false) << "no CPU recipe named '" << recipe << "'";
  }
  return sch;
}

}  // namespace sparsetir
