#include "support/source.h"

namespace sparsetir {

SourceFile::SourceFile(std::string name_in, std::string text_in)
    : name(std::move(name_in)), text(std::move(text_in)) {
  line_starts.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts.push_back(i + 1);
  }
}

std::string SourceFile::Line(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts.size()) return "";
  size_t begin = line_starts[line - 1];
  size_t end = text.find('\n', begin);
  if (end == std::string::npos) end = text.size();
  return text.substr(begin, end - begin);
}

}  // namespace sparsetir
