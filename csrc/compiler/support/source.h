// Source text and spans: every node built by the parser remembers where it came
// from, so verifier and lowering errors can show the offending line.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace sparsetir {

struct SourceFile {
  std::string name;  // "<script>" or a file path
  std::string text;
  std::vector<size_t> line_starts;  // byte offset of each line's first character

  SourceFile(std::string name, std::string text);
  // The text of 1-based line `line` without its newline ("" if out of range).
  std::string Line(int line) const;
};

struct Span {
  std::shared_ptr<const SourceFile> file;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based
  int length = 1;  // caret width

  bool defined() const { return file != nullptr && line > 0; }
};

}  // namespace sparsetir
