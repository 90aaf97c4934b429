#include "schedule/trace_format.h"

namespace sparsetir {

std::string PyStr(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string PyList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + PyStr(items[i]);
  return out + "]";
}

std::string PyTuple(const std::vector<std::string>& names) {
  if (names.empty()) return "_";
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return names.size() == 1 ? out + "," : out;
}

std::string PyFactors(const std::vector<std::optional<int64_t>>& factors) {
  std::string out = "[";
  for (size_t i = 0; i < factors.size(); ++i) {
    out += (i ? ", " : "") + (factors[i] ? std::to_string(*factors[i]) : std::string("None"));
  }
  return out + "]";
}

}  // namespace sparsetir
