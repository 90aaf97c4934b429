// Helpers shared by the loop primitives: finding a loop or block by name and
// rebuilding the function with one statement replaced.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/function.h"

namespace sparsetir {

// The loop whose variable is named `name`; ScheduleError if none.
const ForNode* FindLoop(const PrimFunc& f, const std::string& name, const char* primitive);

// The loops enclosing block `name`, outermost first; ScheduleError if no block.
std::vector<const ForNode*> LoopsAround(const PrimFunc& f, const std::string& block, const char* primitive);

// All block names, in program order.
std::vector<std::string> BlockNames(const PrimFunc& f);

// The function with statement `target` replaced by `replacement`.
PrimFunc ReplaceStmt(const PrimFunc& f, const StmtNode* target, Stmt replacement);

// A name not used by any variable, iterator, buffer or parameter of `f`.
std::string FreshName(const PrimFunc& f, const std::string& base);

// A few lines of the printed statement, for error messages.
std::string Excerpt(const Stmt& s);
std::string Excerpt(const StmtNode* s);

}  // namespace sparsetir
