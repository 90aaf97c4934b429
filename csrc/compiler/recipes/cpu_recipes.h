// Schedules that make the built-in operator kernels (kernels/*.py) fast on a
// CPU, applied once the sizes that matter are known (the first call).
//
// They follow ARCHITECTURE.md's performance method: specialize the feature
// width, keep the output row in SIMD registers (cache_write to a local
// buffer), walk the feature dimension in 16-lane vectors, and split rows
// across threads by non-zeros (the codegen balances a parallel loop over CSR
// rows by nnz).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "schedule/schedule.h"

namespace sparsetir {

// Choices a caller makes per call site (the graph decides them, not the kernel).
struct RecipeOptions {
  // Software prefetch of the gathered dense rows some non-zeros ahead: pays
  // when those rows come from beyond L2, costs instructions when they are
  // cached anyway (a small or a banded operand).
  bool prefetch = true;
};

// Schedules `f`, a built-in kernel named by `recipe` ("csrmm", "sddmm",
// "bsrmm", "sparse_attention", "attention_grad_scores"), for the given sizes
// (script parameter -> value; each is specialized into the kernel).
// Unknown recipes raise an internal error: recipes and scripts ship together.
Schedule ScheduleForCpu(const PrimFunc& f, const std::string& recipe, const std::map<std::string, int64_t>& sizes,
                        const RecipeOptions& options = {});

// The widest vector (at most 16 lanes) that divides `extent`; 1 if none.
int64_t VectorLanes(int64_t extent);

}  // namespace sparsetir
