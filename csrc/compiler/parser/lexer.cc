#include "parser/lexer.h"

#include <algorithm>

#include <cctype>

#include "support/error.h"

namespace sparsetir::parser {
namespace {

// Longest operators first so that "//" wins over "/".
const char* const kOperators[] = {
    "**", "//", "==", "!=", "<=", ">=", "->", "+=", "-=", "*=", "/=",
    "(", ")", "[", "]", "{", "}", ",", ":", ".", "=", "+", "-", "*", "/", "%", "<", ">", "@",
};

class Lexer {
 public:
  explicit Lexer(std::shared_ptr<const SourceFile> file) : file_(std::move(file)), text_(file_->text) {}

  std::vector<Token> Run() {
    indents_.push_back(0);
    bool at_line_start = true;
    while (pos_ < text_.size()) {
      if (at_line_start && depth_ == 0) {
        if (HandleIndentation()) continue;  // blank or comment-only line consumed
        at_line_start = false;
      }
      char c = text_[pos_];
      if (c == '\n') {
        if (depth_ == 0) Emit(TokenKind::kNewline, "\\n", 1);
        Advance();
        at_line_start = depth_ == 0;  // inside brackets a newline is only whitespace
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') { Advance(); continue; }
      if (c == '#') { SkipComment(); continue; }
      if (c == '\\' && Peek(1) == '\n') { Advance(); Advance(); continue; }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') { LexName(); continue; }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && std::isdigit(static_cast<unsigned char>(Peek(1))))) {
        LexNumber();
        continue;
      }
      if (c == '"' || c == '\'') { LexString(); continue; }
      LexOperator();
    }
    if (!tokens_.empty() && tokens_.back().kind != TokenKind::kNewline) Emit(TokenKind::kNewline, "\\n", 0);
    while (indents_.size() > 1) {
      indents_.pop_back();
      Emit(TokenKind::kDedent, "", 0);
    }
    Emit(TokenKind::kEnd, "", 0);
    return std::move(tokens_);
  }

 private:
  char Peek(size_t ahead) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  Span HereSpan(int length) const { return Span{file_, line_, column_, length}; }

  void Emit(TokenKind kind, std::string text, int length) {
    tokens_.push_back(Token{kind, std::move(text), HereSpan(length)});
  }

  [[noreturn]] void Fail(const std::string& message, int length = 1) {
    ThrowScriptError(message, HereSpan(length));
  }

  // At the start of a logical line: measures indentation and emits INDENT /
  // DEDENT. Returns true when the line was blank (and has been skipped).
  bool HandleIndentation() {
    int width = 0;
    size_t p = pos_;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) {
      width += text_[p] == '\t' ? 8 - (width % 8) : 1;
      ++p;
    }
    char next = p < text_.size() ? text_[p] : '\n';
    if (next == '\n' || next == '#' || next == '\r') {
      while (pos_ < p) Advance();
      if (pos_ < text_.size() && text_[pos_] == '#') SkipComment();
      if (pos_ < text_.size() && text_[pos_] == '\r') Advance();
      if (pos_ < text_.size()) Advance();  // the newline
      return true;
    }
    while (pos_ < p) Advance();
    if (width > indents_.back()) {
      indents_.push_back(width);
      Emit(TokenKind::kIndent, "", 1);
    } else {
      while (width < indents_.back()) {
        indents_.pop_back();
        Emit(TokenKind::kDedent, "", 1);
      }
      if (width != indents_.back()) Fail("unindent does not match any outer indentation level");
    }
    return false;
  }

  void SkipComment() {
    while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
  }

  void LexName() {
    size_t start = pos_;
    Span span = HereSpan(1);
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      Advance();
    }
    span.length = static_cast<int>(pos_ - start);
    tokens_.push_back(Token{TokenKind::kName, text_.substr(start, pos_ - start), span});
  }

  void LexNumber() {
    size_t start = pos_;
    Span span = HereSpan(1);
    bool is_float = false;
    auto digits = [&] {
      while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        Advance();
      }
    };
    digits();
    if (Peek(0) == '.') { is_float = true; Advance(); digits(); }
    if (Peek(0) == 'e' || Peek(0) == 'E') {
      is_float = true;
      Advance();
      if (Peek(0) == '+' || Peek(0) == '-') Advance();
      if (!std::isdigit(static_cast<unsigned char>(Peek(0)))) Fail("malformed number: exponent without digits");
      digits();
    }
    if (std::isalpha(static_cast<unsigned char>(Peek(0)))) Fail("malformed number");
    std::string text;
    for (size_t i = start; i < pos_; ++i) {
      if (text_[i] != '_') text += text_[i];
    }
    span.length = static_cast<int>(pos_ - start);
    tokens_.push_back(Token{is_float ? TokenKind::kFloat : TokenKind::kInt, text, span});
  }

  void LexString() {
    Span span = HereSpan(1);
    size_t start = pos_;
    char quote = text_[pos_];
    bool triple = Peek(1) == quote && Peek(2) == quote;
    for (int i = 0; i < (triple ? 3 : 1); ++i) Advance();
    std::string value;
    while (true) {
      if (pos_ >= text_.size()) ThrowScriptError("unterminated string literal", span);
      char c = text_[pos_];
      if (!triple && c == '\n') ThrowScriptError("unterminated string literal", span);
      if (c == quote && (!triple || (Peek(1) == quote && Peek(2) == quote))) {
        for (int i = 0; i < (triple ? 3 : 1); ++i) Advance();
        break;
      }
      if (c == '\\') {
        Advance();
        char e = Peek(0);
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        Advance();
        continue;
      }
      value += c;
      Advance();
    }
    span.length = static_cast<int>(pos_ - start);
    tokens_.push_back(Token{TokenKind::kString, value, span});
  }

  void LexOperator() {
    for (const char* op : kOperators) {
      size_t n = std::char_traits<char>::length(op);
      if (text_.compare(pos_, n, op) == 0) {
        Emit(TokenKind::kOp, op, static_cast<int>(n));
        char c = op[0];
        if (n == 1 && (c == '(' || c == '[' || c == '{')) ++depth_;
        if (n == 1 && (c == ')' || c == ']' || c == '}')) {
          if (depth_ == 0) Fail(std::string("unmatched '") + c + "'");
          --depth_;
        }
        for (size_t i = 0; i < n; ++i) Advance();
        return;
      }
    }
    const unsigned char lead = static_cast<unsigned char>(text_[pos_]);
    if (lead >= 0x80) {
      // The whole UTF-8 sequence, so the message stays valid text.
      const size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      Fail("non-ASCII character '" + text_.substr(pos_, std::min(length, text_.size() - pos_)) +
           "' outside a string or comment; names and operators are ASCII");
    }
    Fail(std::string("unexpected character '") + text_[pos_] + "'");
  }

  std::shared_ptr<const SourceFile> file_;
  const std::string& text_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
  int depth_ = 0;  // bracket nesting: newlines inside brackets are not tokens
  std::vector<int> indents_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Tokenize(const std::shared_ptr<const SourceFile>& file) { return Lexer(file).Run(); }

}  // namespace sparsetir::parser
