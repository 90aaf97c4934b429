// SPARSETIR_DUMP_IR=<dir>: the IR of a function after every step of its build,
// one file a step, <function>.<NN>_<step>.py, numbered in the order the steps
// ran. A scope numbers one build: the pipeline opens one, and so does the
// kernel library around an operator kernel's recipe and pipeline, so that
// the whole build (stage-I script, lower_atomic, lower_sparse_iter, every
// schedule primitive, the stage-III passes) is one sequence.
#pragma once

#include <string>

#include "ir/function.h"

namespace sparsetir {

// The directory the IR is dumped into; empty when dumping is off (read at
// every call, so a test may set it in-process).
std::string IrDumpDirectory();

class IrDumpScope {
 public:
  // Joins the scope open on this thread, if any; otherwise starts a new
  // numbering at 00.
  IrDumpScope();
  ~IrDumpScope();
  IrDumpScope(const IrDumpScope&) = delete;
  IrDumpScope& operator=(const IrDumpScope&) = delete;

 private:
  bool owner_ = false;
};

// Writes `f` as the next step of the open scope (nothing when dumping is off
// or no scope is open).
void DumpStep(const PrimFunc& f, const std::string& step);
// DumpStep when no step of the open scope has been written yet (the input of
// a build, which a build that dumped earlier steps has written already).
void DumpFirstStep(const PrimFunc& f, const std::string& step);

}  // namespace sparsetir
