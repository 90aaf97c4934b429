// The compilation pipeline, written once: the named passes from stage I to
// stage III in the order they run. Everything that lowers a function (the
// kernel build, Schedule's stage changes, the Python bindings of single
// passes) runs a prefix or a suffix of this list, never its own order.
//
// SPARSETIR_DUMP_IR=<dir> writes the IR after every step (ir_dump.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/function.h"

namespace sparsetir {

struct Pass {
  std::string name;
  Stage from;  // the stage of the functions the pass takes
  std::function<PrimFunc(const PrimFunc&)> run;
};

// Every pass, in pipeline order.
const std::vector<Pass>& Pipeline();

// The passes that take a function at `stage` down to stage III.
std::vector<Pass> PipelineFrom(Stage stage);

// Runs, in order, the passes that apply to the function as it goes (a pass
// applies when the function is at its `from` stage), verifying after each and
// dumping it as a step of the open dump scope, if any (ir_dump.h); stops after
// the pass named `last` ("" = run to the end). An unknown `last` is an
// internal error.
PrimFunc RunPipeline(const PrimFunc& f, const std::string& last = "");

// The whole pipeline in a dump scope of its own unless one is open (then the
// input was dumped by the build that opened it): the result is at stage III.
PrimFunc LowerToStageIII(const PrimFunc& f);

}  // namespace sparsetir
