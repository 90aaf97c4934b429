// Tokenizer for the script language: the subset of Python that scripts use, with
// Python's rules for indentation (INDENT / DEDENT), implicit line joining inside
// brackets, comments and string escapes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/source.h"

namespace sparsetir::parser {

enum class TokenKind { kName, kInt, kFloat, kString, kOp, kNewline, kIndent, kDedent, kEnd };

struct Token {
  TokenKind kind;
  std::string text;  // names, operators, string contents (unescaped), number text
  Span span;
};

// Throws a ScriptError (with line:column and caret) on a malformed token or an
// inconsistent dedent.
std::vector<Token> Tokenize(const std::shared_ptr<const SourceFile>& file);

}  // namespace sparsetir::parser
