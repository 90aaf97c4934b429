// The script parser: text -> PrimFunc, at any stage. One parser, written in
// C++, serves C++ and Python alike. Errors are ScriptErrors (UserError kScript)
// with line:column and a caret excerpt; a stage-I function is verified before it
// is returned.
#pragma once

#include <string>

#include "ir/function.h"

namespace sparsetir {

// `source_name` is shown in error messages ("<script>", a file path, ...).
PrimFunc Parse(const std::string& text, const std::string& source_name = "<script>");

}  // namespace sparsetir
