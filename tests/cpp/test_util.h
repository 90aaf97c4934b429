// Helpers shared by the C++ tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace sparsetir::testing {

// The text of tests/scripts/<name>.
inline std::string ReadScript(const std::string& name) {
  std::ifstream in(std::string(SPARSETIR_SOURCE_DIR) + "/tests/scripts/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces every occurrence of `from` in `text` with `to`.
inline std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

}  // namespace sparsetir::testing
