// Python spelling of trace arguments (the trace is replayable Python).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sparsetir {

std::string PyStr(const std::string& s);
std::string PyList(const std::vector<std::string>& quoted_items);  // ["a", "b"]
// Unpacking targets: "a, b" ("a," for one, "_" for none) — variable names are
// the loop names themselves, so later lines can use them.
std::string PyTuple(const std::vector<std::string>& names);
std::string PyFactors(const std::vector<std::optional<int64_t>>& factors);

}  // namespace sparsetir
