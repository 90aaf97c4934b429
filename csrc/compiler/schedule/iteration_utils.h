// Shared by the stage-I primitives: edit one sparse iteration by name.
#pragma once

#include <functional>
#include <string>

#include "ir/function.h"

namespace sparsetir {

// Applies `edit` to iteration `name` of a stage-I function; ScheduleError if
// the function is not at stage I or has no such iteration.
PrimFunc EditIteration(const PrimFunc& f, const std::string& name, const char* primitive,
                       std::function<Stmt(const SparseIterationNode*)> edit);

}  // namespace sparsetir
