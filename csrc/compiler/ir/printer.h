// Writes IR back in the script language (the RFC's TVMScript spelling), at any
// stage. The parser reads everything the printer writes, so printing round-trips:
// Print(Parse(Print(f))) == Print(f).
#pragma once

#include <string>

#include "ir/function.h"

namespace sparsetir {

std::string Print(const PrimFunc& f);
std::string Print(const Expr& e);
std::string Print(const Stmt& s);
std::string Print(const AttrPtr& attr);

}  // namespace sparsetir
