// Schedules that make the built-in operator kernels (kernels/*.py) fast on a
// CPU, applied once the sizes that matter are known (the first call).
//
// They follow ARCHITECTURE.md's performance method: specialize the feature
// width, keep the output row in SIMD registers (cache_write to a local
// buffer; a row wider than the register file in feature tiles, one pass over
// the row's non-zeros each), walk the feature dimension in vectors as wide as
// the target's registers (16 float32 lanes on AVX-512, 8 on AVX2, 4 on SSE2
// and NEON), unroll and duplicate accumulators only as far as its register
// file holds them, prefetch gathered rows into L1 or L2 as the operators say,
// and split rows across threads by non-zeros (the codegen balances a parallel
// loop over CSR rows by nnz).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "schedule/schedule.h"
#include "target.h"

namespace sparsetir {

// Largest output tile (elements) a recipe keeps local, on the stack, while it
// accumulates (cache_write). A larger one accumulates in the output itself:
// for 16-bit values that rounds at every step, so the operators run such
// calls on float32 copies (AccumulatesInNarrowOutput in the kernel library).
constexpr int64_t kMaxLocalTile = 8192;

// Software prefetch of the gathered dense rows some non-zeros ahead: pays
// when those rows come from beyond L2, costs instructions when they are
// cached anyway (a small or a banded operand). kToL1 brings them into L1,
// kToL2 into L2 only: for spans of the rows ahead too long for L1 (they
// would evict the rows in use), and for operands out in DRAM, where a core
// has more L2 misses than L1 misses in flight (the operators choose per call:
// GatherPrefetchFor in csrc/ops/csr_kernels.cc).
enum class GatherPrefetch { kOff, kToL1, kToL2 };

// How many non-zeros ahead the dense rows they gather are prefetched
// (ARCHITECTURE.md: 16 to 64 measure alike; under 12 is too late when the
// dense operand is not in L2).
constexpr int64_t kGatherPrefetchDistance = 32;

// Non-zeros of a row whose dot products kernels/sddmm_dot_groups.py computes
// together (each vector of X[i] loaded once for all of them).
constexpr int64_t kSddmmGroup = 4;

// The lanes sddmm_dot_groups takes for rows of `feat` elements of
// `element_bytes` bytes on `target` (its `lanes` parameter); 0 where the
// script does not apply: no vector divides the row, or one of more than 16
// lanes (its merge of partial sums halves 16 lanes at most), or the row is
// fewer than 4 vectors.
int64_t SddmmGroupLanes(int64_t feat, int64_t element_bytes, const Target& target);

// Choices a caller makes per call site (the graph decides them, not the kernel).
struct RecipeOptions {
  // The cpu target whose registers size the vectors and tiles (the
  // operators pass Target::HostCpu()).
  Target target;
  GatherPrefetch prefetch = GatherPrefetch::kToL1;
};

// The recipes of hyb's ELL buckets are this prefix followed by the mode
// ("overwrite", "add" or "atomic"): they schedule kernels/csrmm.py decomposed
// onto one bucket (kernels/formats/ell_rows.py), which the kernel library
// builds for them.
constexpr char kEllBucketRecipe[] = "csrmm_ell_";
inline bool IsEllBucketRecipe(const std::string& recipe) { return recipe.rfind(kEllBucketRecipe, 0) == 0; }

// Schedules `f`, a built-in kernel named by `recipe` ("csrmm", "csrmm_mean", "sddmm",
// "bsrmm", "sparse_attention", "attention_grad_scores", ...; "csrmm_ell_<mode>"
// for an ELL bucket of hyb, mode "overwrite", "add" or "atomic"), for the given
// sizes (script parameter -> value; each is specialized into the kernel).
// Unknown recipes raise an internal error: recipes and scripts ship together.
Schedule ScheduleForCpu(const PrimFunc& f, const std::string& recipe, const std::map<std::string, int64_t>& sizes,
                        const RecipeOptions& options = {});

// The widest vector of `element_bytes`-byte lanes, at most one of `target`'s
// registers, that divides `extent`; 1 if none.
int64_t VectorLanes(int64_t extent, int64_t element_bytes, const Target& target);

// The register budget of a recipe on `target`, in vectors: how many vectors
// of a row are unrolled, and up to how many a row may have for two
// accumulator sets to fit.
struct RegisterBudget {
  int64_t max_unrolled_vectors;
  int64_t max_two_accumulator_vectors;
};
RegisterBudget RegisterBudgetOf(const Target& target);

// What ScheduleForCpu chooses for an SpMM row of `feat` elements of
// `element_bytes` bytes on `target` with gathers prefetched as `prefetch`
// says (st.explain prints it).
struct CsrmmPlan {
  int64_t vector_lanes;       // 1: scalar
  int64_t unrolled_vectors;   // 1: the vector loop is not unrolled
  bool output_row_local;      // cache_write of the output row (or of its feature tile)
  int64_t accumulator_sets;   // 1 or 2
  // Elements of the output row one pass over the row's non-zeros computes:
  // the whole row, or a tile of unrolled_vectors vectors when the row has
  // more vectors than the target has registers and its gathers are
  // prefetched (then each pass keeps its tile in registers instead of a row
  // in memory).
  int64_t feature_tile;
};
CsrmmPlan PlanCsrmm(int64_t feat, int64_t element_bytes, const Target& target,
                    GatherPrefetch prefetch = GatherPrefetch::kToL1);

// What ScheduleForCpu chooses for bsrmm's output rows of `feat` elements of
// `element_bytes` bytes on `target`, for blocks of `block_h` rows.
struct BsrmmPlan {
  int64_t vector_lanes;  // 1: scalar
  // Elements of an output row held in registers while a block's columns
  // pass (the whole row, or a tile of unrolled_vectors vectors when the row
  // has more vectors than half the registers).
  int64_t feature_tile;
  int64_t unrolled_vectors;  // 1: the vector loop is not unrolled
  bool output_tile_local;    // cache_write of the block row's output (block_h x feat)
  // cache_read of a tile's slice of the B block (block_w x feature_tile)
  // into a packed local buffer before the block's rows run over it.
  bool b_tile_packed;
};
BsrmmPlan PlanBsrmm(int64_t block_h, int64_t feat, int64_t element_bytes, const Target& target);

}  // namespace sparsetir
