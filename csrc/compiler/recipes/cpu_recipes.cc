#include "recipes/cpu_recipes.h"

#include "support/error.h"

namespace sparsetir {
namespace {

// Unrolling more than this many vectors of a row runs out of SIMD registers.
constexpr int64_t kMaxUnrolledVectors = 16;
// Largest local output tile (elements) kept on the stack by cache_write.
constexpr int64_t kMaxLocalTile = 8192;

// Splits `loop` (extent `extent`) into vectors: the inner loop vectorized, the
// outer one unrolled when it is short. Returns false when no vector fits.
bool VectorizeInner(Schedule& sch, const std::string& loop, int64_t extent) {
  int64_t lanes = VectorLanes(extent);
  if (lanes <= 1) return false;
  auto parts = sch.Split(loop, {std::nullopt, lanes});
  if (extent / lanes <= kMaxUnrolledVectors) sch.Unroll(parts[0]);
  sch.Vectorize(parts[1]);
  return true;
}

void RowsInParallel(Schedule& sch, const std::string& block) { sch.Parallel(sch.GetLoops(block)[0]); }

// csrmm / csrmm_max / csrmm_min: loops i, j, k.
void Csrmm(Schedule& sch, int64_t feat) {
  auto loops = sch.GetLoops("csrmm");
  VectorizeInner(sch, loops[2], feat);
  if (feat <= kMaxLocalTile) sch.CacheWrite(loops[0], "C", "local");
  sch.Parallel(loops[0]);
}

// sddmm_dot: loops i, j, k; k is the reduction, accumulated in a register.
void Sddmm(Schedule& sch) {
  auto loops = sch.GetLoops("sddmm");
  sch.CacheWrite(loops[1], "O", "local");
  sch.Parallel(loops[0]);
}

// bsrmm: loops i, j, bi, bj, f; the block row's output tile stays local.
void Bsrmm(Schedule& sch, int64_t block_h, int64_t feat) {
  auto loops = sch.GetLoops("bsrmm");
  VectorizeInner(sch, loops[4], feat);
  if (block_h * feat <= kMaxLocalTile) sch.CacheWrite(loops[0], "C", "local");
  sch.Parallel(loops[0]);
}

// sparse_attention: six row-parallel iterations; the weighted sum of value
// rows is an SpMM and is scheduled like one.
void SparseAttention(Schedule& sch, int64_t value_dim) {
  for (const char* block : {"scores", "row_max", "row_exp", "row_sum", "row_div"}) {
    if (std::string(block) == "scores") sch.CacheWrite(sch.GetLoops(block)[1], "P", "local");
    RowsInParallel(sch, block);
  }
  auto loops = sch.GetLoops("weighted_sum");
  VectorizeInner(sch, loops[2], value_dim);
  if (value_dim <= kMaxLocalTile) sch.CacheWrite(loops[0], "O", "local");
  sch.Parallel(loops[0]);
}

void AttentionGradScores(Schedule& sch) {
  RowsInParallel(sch, "row_dot");
  RowsInParallel(sch, "grad_scores");
}

int64_t Size(const std::map<std::string, int64_t>& sizes, const char* name) {
  auto found = sizes.find(name);
  ICHECK(found != sizes.end()) << "recipe needs the size '" << name << "'";
  return found->second;
}

}  // namespace

int64_t VectorLanes(int64_t extent) {
  int64_t lanes = 16;
  while (lanes > 1 && (extent % lanes != 0 || extent < lanes)) lanes /= 2;
  return lanes;
}

Schedule ScheduleForCpu(const PrimFunc& f, const std::string& recipe, const std::map<std::string, int64_t>& sizes) {
  Schedule sch(f);
  sch.Specialize(sizes);
  if (recipe == "csrmm") {
    Csrmm(sch, Size(sizes, "feat_size"));
  } else if (recipe == "sddmm") {
    Sddmm(sch);
  } else if (recipe == "bsrmm") {
    Bsrmm(sch, Size(sizes, "block_h"), Size(sizes, "feat_size"));
  } else if (recipe == "sparse_attention") {
    SparseAttention(sch, Size(sizes, "value_dim"));
  } else if (recipe == "attention_probs") {
    for (const char* block : {"scores", "row_max", "row_exp", "row_sum", "row_div"}) {
      if (std::string(block) == "scores") sch.CacheWrite(sch.GetLoops(block)[1], "P", "local");
      RowsInParallel(sch, block);
    }
  } else if (recipe == "attention_grad_scores") {
    AttentionGradScores(sch);
  } else {
    ICHECK(false) << "no CPU recipe named '" << recipe << "'";
  }
  return sch;
}

}  // namespace sparsetir
