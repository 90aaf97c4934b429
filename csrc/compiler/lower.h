// The compilation pipeline as one readable list of named passes. Setting
// SPARSETIR_DUMP_IR=<dir> writes the IR after every step, numbered
// (00_input.py, 01_lower_sparse_iter.py, ...).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/function.h"

namespace sparsetir {

struct Pass {
  std::string name;
  std::function<PrimFunc(const PrimFunc&)> run;
};

// The passes that take a function at `stage` down to stage III.
std::vector<Pass> PipelineFrom(Stage stage);

// Runs the pipeline, verifying after every pass; the result is at stage III.
PrimFunc LowerToStageIII(const PrimFunc& f);

}  // namespace sparsetir
