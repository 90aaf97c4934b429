#include "lower.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "transforms/hoist_invariants.h"
#include "transforms/lower_atomic.h"
#include "transforms/lower_sparse_buffer.h"
#include "transforms/lower_sparse_iter.h"
#include "transforms/simplify.h"

namespace sparsetir {

std::vector<Pass> PipelineFrom(Stage stage) {
  std::vector<Pass> passes;
  if (stage == Stage::kI) passes.push_back({"lower_atomic", LowerAtomic});
  if (stage == Stage::kI) passes.push_back({"lower_sparse_iter", LowerSparseIter});
  if (stage != Stage::kIII) passes.push_back({"lower_sparse_buffer", LowerSparseBuffer});
  passes.push_back({"simplify", [](const PrimFunc& f) { return Simplify(f); }});
  passes.push_back({"hoist_invariants", HoistInvariants});
  return passes;
}

namespace {
void Dump(const char* dir, int step, const std::string& name, const PrimFunc& f) {
  std::filesystem::create_directories(dir);
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%02d_", step);
  std::ofstream(std::filesystem::path(dir) / (f->name + "." + prefix + name + ".py")) << Print(f);
}
}  // namespace

PrimFunc LowerToStageIII(const PrimFunc& f) {
  const char* dump = std::getenv("SPARSETIR_DUMP_IR");
  if (dump && *dump) Dump(dump, 0, "input", f);
  PrimFunc current = f;
  int step = 1;
  for (const Pass& pass : PipelineFrom(f->stage)) {
    current = pass.run(current);
    VerifyWellFormed(current);
    if (dump && *dump) Dump(dump, step, pass.name, current);
    ++step;
  }
  return current;
}

}  // namespace sparsetir
