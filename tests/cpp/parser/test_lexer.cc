// Lexer tests: Python's indentation rules, implicit line joining and token
// positions, on tiny inputs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "parser/lexer.h"
#include "support/error.h"

namespace sparsetir::parser {
namespace {

std::vector<Token> Lex(const std::string& text) {
  return Tokenize(std::make_shared<const SourceFile>("<test>", text));
}

std::vector<TokenKind> Kinds(const std::string& text) {
  std::vector<TokenKind> kinds;
  for (const Token& t : Lex(text)) kinds.push_back(t.kind);
  return kinds;
}

using K = TokenKind;

TEST(Lexer, IndentedBlockGetsIndentAndDedent) {
  EXPECT_EQ(Kinds("with a:\n    b\nc\n"),
            (std::vector<TokenKind>{K::kName, K::kName, K::kOp, K::kNewline, K::kIndent, K::kName, K::kNewline,
                                    K::kDedent, K::kName, K::kNewline, K::kEnd}));
}

TEST(Lexer, BlankAndCommentLinesDoNotChangeIndentation) {
  EXPECT_EQ(Kinds("with a:\n    b\n\n  # a comment\n    c\n"),
            (std::vector<TokenKind>{K::kName, K::kName, K::kOp, K::kNewline, K::kIndent, K::kName, K::kNewline,
                                    K::kName, K::kNewline, K::kDedent, K::kEnd}));
}

TEST(Lexer, NewlinesInsideBracketsAreNotTokens) {
  EXPECT_EQ(Kinds("f(a,\n  b)\n"),
            (std::vector<TokenKind>{K::kName, K::kOp, K::kName, K::kOp, K::kName, K::kOp, K::kNewline, K::kEnd}));
}

TEST(Lexer, TokensKnowTheirLineAndColumn) {
  std::vector<Token> tokens = Lex("x = 1\n    \ny = 2.5\n");
  const Token& y = tokens[4];  // x = 1 NEWLINE y
  EXPECT_EQ(y.text, "y");
  EXPECT_EQ(y.span.line, 3);
  EXPECT_EQ(y.span.column, 1);
  const Token& number = tokens[6];
  EXPECT_EQ(number.kind, K::kFloat);
  EXPECT_EQ(number.span.column, 5);
  EXPECT_EQ(number.span.length, 3);
}

TEST(Lexer, LongestOperatorWins) {
  std::vector<Token> tokens = Lex("a // b ** c\n");
  EXPECT_EQ(tokens[1].text, "//");
  EXPECT_EQ(tokens[3].text, "**");
}

TEST(Lexer, UnderscoresInNumbersAreDropped) {
  std::vector<Token> tokens = Lex("1_000\n");
  EXPECT_EQ(tokens[0].kind, K::kInt);
  EXPECT_EQ(tokens[0].text, "1000");
}

TEST(Lexer, BadDedentIsAUserErrorAtTheLine) {
  try {
    Lex("with a:\n    b\n  c\n");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unindent does not match any outer indentation level"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("<test>:3:3"), std::string::npos) << e.what();
  }
}

TEST(Lexer, UnterminatedStringIsAUserError) { EXPECT_THROW(Lex("s = \"abc\n"), UserError); }

TEST(Lexer, UnmatchedClosingBracketIsAUserError) { EXPECT_THROW(Lex("a)\n"), UserError); }

}  // namespace
}  // namespace sparsetir::parser
