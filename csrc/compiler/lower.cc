#include "lower.h"

#include "ir/verifier.h"
#include "ir_dump.h"
#include "support/error.h"
#include "transforms/hoist_invariants.h"
#include "transforms/lift_workspaces.h"
#include "transforms/lower_atomic.h"
#include "transforms/lower_sparse_buffer.h"
#include "transforms/lower_sparse_iter.h"
#include "transforms/simplify.h"

namespace sparsetir {

const std::vector<Pass>& Pipeline() {
  static const std::vector<Pass> passes = {
      {"lower_atomic", Stage::kI, LowerAtomic},
      {"lower_sparse_iter", Stage::kI, LowerSparseIter},
      {"lower_sparse_buffer", Stage::kII, LowerSparseBuffer},
      {"simplify", Stage::kIII, [](const PrimFunc& f) { return Simplify(f); }},
      {"hoist_invariants", Stage::kIII, HoistInvariants},
      {"lift_workspaces", Stage::kIII, LiftWorkspaces},
  };
  return passes;
}

std::vector<Pass> PipelineFrom(Stage stage) {
  std::vector<Pass> passes;
  for (const Pass& pass : Pipeline()) {
    if (pass.from >= stage) passes.push_back(pass);
  }
  return passes;
}

PrimFunc RunPipeline(const PrimFunc& f, const std::string& last) {
  bool known = last.empty();
  for (const Pass& pass : Pipeline()) known = known || pass.name == last;
  ICHECK(known) << "the pipeline has no pass named " << last;
  PrimFunc current = f;
  for (const Pass& pass : Pipeline()) {
    if (current->stage == pass.from) {
      current = pass.run(current);
      VerifyWellFormed(current);
      DumpStep(current, pass.name);
    }
    if (pass.name == last) break;
  }
  return current;
}

PrimFunc LowerToStageIII(const PrimFunc& f) {
  // A build that dumps its earlier steps (an operator kernel's recipe) has
  // opened the scope already; otherwise this run starts the numbering.
  IrDumpScope scope;
  DumpFirstStep(f, "input");
  return RunPipeline(f);
}

}  // namespace sparsetir
