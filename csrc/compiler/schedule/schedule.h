// Schedule: transforms a function by named primitives. Each primitive returns
// new IR (the old function is untouched), records itself in the trace, and
// fails with a ScheduleError that names the loop or iterator and prints the IR
// around it.
//
// Stage-I primitives work on sparse iterations by name (sparse_reorder,
// sparse_fuse, annotate). Loop primitives work at stages II/III on loops named
// by their variable; applying one to a stage-I function first lowers it with
// lower_sparse_iter (recorded in the trace like any primitive).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/function.h"

namespace sparsetir {

[[noreturn]] void ThrowScheduleError(const std::string& message, const std::string& context);

class Schedule {
 public:
  // Dumps `f` as the input step when it starts a dump scope's build.
  explicit Schedule(PrimFunc f);

  const PrimFunc& mod() const { return func_; }
  // One line of Python per primitive; exec'd with `sch` bound, it replays.
  const std::vector<std::string>& trace() const { return trace_; }
  std::string TraceText() const;

  // ---- stage I
  void SparseReorder(const std::string& iteration, const std::vector<std::string>& order);
  void Annotate(const std::string& iteration, const std::string& key, const AttrPtr& value);
  // Fuses a dense_fixed parent and its varied child into one loop over non-zeros.
  void SparseFuse(const std::string& iteration, const std::vector<std::string>& iterators);
  void LowerSparseIter();  // explicit; loop primitives call it when needed
  // Any stage: binds scalar parameters to constants (transforms/specialize.h).
  void Specialize(const std::map<std::string, int64_t>& values);

  // ---- stages II / III
  std::vector<std::string> GetBlocks();
  std::vector<std::string> GetLoops(const std::string& block);
  // factors: at most one unknown (nullopt), inferred as ceil(extent / product).
  std::vector<std::string> Split(const std::string& loop, const std::vector<std::optional<int64_t>>& factors);
  std::string Fuse(const std::vector<std::string>& loops);
  // Stage II. Consecutive sibling loops over one range become one loop running
  // their bodies in order (schedule/merge.cc); returns its name (the first's).
  std::string Merge(const std::vector<std::string>& loops);
  void Reorder(const std::vector<std::string>& loops);
  void Parallel(const std::string& loop);
  void Vectorize(const std::string& loop);
  void Unroll(const std::string& loop);
  void Bind(const std::string& loop, const std::string& thread_axis);
  // Stage III. Inside `loop`, `buffer` is read from / written to a copy in
  // `scope` ("local" or "shared") covering what one iteration of `loop`
  // touches; returns the cache's name.
  std::string CacheRead(const std::string& loop, const std::string& buffer, const std::string& scope);
  std::string CacheWrite(const std::string& loop, const std::string& buffer, const std::string& scope);
  // Factors the reduction carried by `loop` into per-iteration partials (a
  // local buffer) combined after the reduction; returns the buffer's name.
  std::string RFactor(const std::string& loop);
  // Stage III. At the top of `loop`'s body, prefetches the span of `buffer`
  // that iteration `loop + offset` reads into cache level `cache_level` (1 or
  // 2; schedule/prefetch.cc).
  void Prefetch(const std::string& loop, const std::string& buffer, int64_t offset, int cache_level = 1);
  // Stage III. The nest of three loops from `loop` that multiply-accumulates
  // one tile becomes `intrinsic` ("mma_m16n8k16": a warp's tensor-core
  // instruction, T.sp.mma_sync; schedule/tensorize.cc).
  void Tensorize(const std::string& loop, const std::string& intrinsic);
  void LowerSparseBuffer();  // explicit; stage-III primitives call it when needed

 private:
  // Adds `line` to the trace and dumps the IR as a step of the open dump
  // scope (ir_dump.h), named sch_<primitive>.
  void Record(const std::string& line);
  void EnsureStageII(const char* primitive);
  void EnsureStageIII(const char* primitive);

  PrimFunc func_;
  std::vector<std::string> trace_;
};

}  // namespace sparsetir
