// Recursive-descent parser from tokens to the AST of ast.h. It follows Python's
// grammar for the constructs scripts use; anything else is a ScriptError that
// points at the offending token.
#include <set>

#include "parser/ast.h"
#include "parser/lexer.h"
#include "support/error.h"

namespace sparsetir::parser {
namespace {

using Kind = AstExpr::Kind;

class SyntaxParser {
 public:
  explicit SyntaxParser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  std::vector<AstStmtPtr> Module() {
    std::vector<AstStmtPtr> stmts;
    while (!At(TokenKind::kEnd)) {
      if (At(TokenKind::kNewline)) { Next(); continue; }
      stmts.push_back(Statement());
    }
    return stmts;
  }

 private:
  // ---- token helpers
  const Token& Cur() const { return tokens_[pos_]; }
  bool At(TokenKind kind) const { return Cur().kind == kind; }
  bool AtOp(const char* op) const { return Cur().kind == TokenKind::kOp && Cur().text == op; }
  bool AtName(const char* name) const { return Cur().kind == TokenKind::kName && Cur().text == name; }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool AcceptOp(const char* op) {
    if (!AtOp(op)) return false;
    Next();
    return true;
  }
  bool AcceptName(const char* name) {
    if (!AtName(name)) return false;
    Next();
    return true;
  }
  [[noreturn]] void Fail(const std::string& message) const {
    ThrowScriptError(message, Cur().span);
  }
  std::string Describe(const Token& t) const {
    switch (t.kind) {
      case TokenKind::kNewline: return "end of line";
      case TokenKind::kIndent: return "an indented block";
      case TokenKind::kDedent: return "the end of a block";
      case TokenKind::kEnd: return "end of script";
      case TokenKind::kString: return "a string";
      default: return "'" + t.text + "'";
    }
  }
  void ExpectOp(const char* op) {
    if (!AcceptOp(op)) Fail(std::string("expected '") + op + "' but found " + Describe(Cur()));
  }
  std::string ExpectName(const char* what) {
    if (!At(TokenKind::kName) || IsKeyword(Cur().text)) {
      Fail(std::string("expected ") + what + " but found " + Describe(Cur()));
    }
    return Next().text;
  }
  static bool IsKeyword(const std::string& s) {
    static const std::set<std::string> kKeywords = {"def", "with", "as", "pass", "return", "for", "in",
                                                    "if", "else", "elif", "not", "and", "or", "lambda",
                                                    "True", "False", "None"};
    return kKeywords.count(s) > 0;
  }

  static std::shared_ptr<AstExpr> NewExpr(Kind kind, const Span& span) {
    auto e = std::make_shared<AstExpr>();
    e->kind = kind;
    e->span = span;
    return e;
  }
  static std::shared_ptr<AstStmt> NewStmt(AstStmt::Kind kind, const Span& span) {
    auto s = std::make_shared<AstStmt>();
    s->kind = kind;
    s->span = span;
    return s;
  }

  // ---- statements
  AstStmtPtr Statement() {
    if (AtOp("@") || AtName("def")) return FunctionDef();
    if (AtName("with")) return With();
    if (AtName("for")) return For();
    if (AtName("if")) return If();
    AstStmtPtr s = SimpleStatement();
    if (!At(TokenKind::kNewline)) Fail("expected end of line but found " + Describe(Cur()));
    Next();
    return s;
  }

  std::vector<AstStmtPtr> Block() {
    ExpectOp(":");
    std::vector<AstStmtPtr> body;
    if (!At(TokenKind::kNewline)) {  // `with x: pass` on one line
      body.push_back(SimpleStatement());
      if (!At(TokenKind::kNewline)) Fail("expected end of line but found " + Describe(Cur()));
      Next();
      return body;
    }
    Next();
    if (!At(TokenKind::kIndent)) Fail("expected an indented block");
    Next();
    while (!At(TokenKind::kDedent) && !At(TokenKind::kEnd)) body.push_back(Statement());
    if (At(TokenKind::kDedent)) Next();
    return body;
  }

  AstStmtPtr FunctionDef() {
    std::vector<AstExprPtr> decorators;
    while (AcceptOp("@")) {
      decorators.push_back(Expression());
      if (!At(TokenKind::kNewline)) Fail("expected end of line after decorator");
      Next();
    }
    Span span = Cur().span;
    if (!AcceptName("def")) Fail("expected 'def' after decorator but found " + Describe(Cur()));
    auto s = NewStmt(AstStmt::Kind::kFunctionDef, span);
    s->decorators = std::move(decorators);
    s->name = ExpectName("a function name");
    ExpectOp("(");
    while (!AtOp(")")) {
      AstParam param;
      param.span = Cur().span;
      param.name = ExpectName("a parameter name");
      if (AcceptOp(":")) param.annotation = Expression();
      if (AcceptOp("=")) Expression();  // defaults carry no meaning in a kernel
      s->params.push_back(std::move(param));
      if (!AcceptOp(",")) break;
    }
    ExpectOp(")");
    if (AcceptOp("->")) s->value = Expression();
    s->body = Block();
    return s;
  }

  AstStmtPtr With() {
    auto s = NewStmt(AstStmt::Kind::kWith, Next().span);
    s->value = Expression();
    if (AcceptName("as")) s->target = ExpressionList();
    s->body = Block();
    return s;
  }

  AstStmtPtr For() {
    auto s = NewStmt(AstStmt::Kind::kFor, Next().span);
    s->target = TargetList();
    if (!AcceptName("in")) Fail("expected 'in' in for statement but found " + Describe(Cur()));
    s->value = Expression();
    s->body = Block();
    return s;
  }

  AstStmtPtr If() {
    auto s = NewStmt(AstStmt::Kind::kIf, Next().span);
    s->value = Expression();
    s->body = Block();
    if (AtName("elif")) {
      s->orelse.push_back(If());
    } else if (AcceptName("else")) {
      s->orelse = Block();
    }
    return s;
  }

  AstStmtPtr SimpleStatement() {
    Span span = Cur().span;
    if (AcceptName("pass")) return NewStmt(AstStmt::Kind::kPass, span);
    if (AcceptName("return")) {
      auto s = NewStmt(AstStmt::Kind::kReturn, span);
      if (!At(TokenKind::kNewline)) s->value = ExpressionList();
      return s;
    }
    AstExprPtr first = ExpressionList();
    if (AtOp(":")) {  // annotated assignment: x: T.int32 = value
      Next();
      auto s = NewStmt(AstStmt::Kind::kAssign, span);
      s->target = first;
      s->annotation = Expression();
      ExpectOp("=");
      s->value = ExpressionList();
      return s;
    }
    if (AcceptOp("=")) {
      auto s = NewStmt(AstStmt::Kind::kAssign, span);
      s->target = first;
      s->value = ExpressionList();
      if (AtOp("=")) Fail("chained assignment is not supported");
      return s;
    }
    for (const char* op : {"+=", "-=", "*=", "/="}) {
      if (AcceptOp(op)) {
        auto s = NewStmt(AstStmt::Kind::kAugAssign, span);
        s->target = first;
        s->text = std::string(op, 1);
        s->value = Expression();
        return s;
      }
    }
    auto s = NewStmt(AstStmt::Kind::kExpr, span);
    s->value = first;
    return s;
  }

  // ---- expressions
  // a, b, c (a tuple without parentheses) or a single expression.
  AstExprPtr ExpressionList() {
    Span span = Cur().span;
    AstExprPtr first = Expression();
    if (!AtOp(",")) return first;
    auto tuple = NewExpr(Kind::kTuple, span);
    tuple->children.push_back(first);
    while (AcceptOp(",")) {
      if (AtOp(")") || AtOp("]") || AtOp("=") || AtOp(":") || At(TokenKind::kNewline)) break;
      tuple->children.push_back(Expression());
    }
    return tuple;
  }

  AstExprPtr TargetList() {
    Span span = Cur().span;
    AstExprPtr first = OrTest();
    if (!AtOp(",")) return first;
    auto tuple = NewExpr(Kind::kTuple, span);
    tuple->children.push_back(first);
    while (AcceptOp(",")) {
      if (AtName("in")) break;
      tuple->children.push_back(OrTest());
    }
    return tuple;
  }

  // Bounds recursion so that absurdly nested input is an error, not a stack
  // overflow (Python itself stops at 200 nested brackets).
  struct DepthGuard {
    explicit DepthGuard(SyntaxParser* p) : parser(p) {
      if (++parser->depth_ > kMaxDepth) parser->Fail("expression nested too deeply");
    }
    ~DepthGuard() { --parser->depth_; }
    SyntaxParser* parser;
  };
  static constexpr int kMaxDepth = 200;

  AstExprPtr Expression() {
    DepthGuard guard(this);
    if (AtName("lambda")) return Lambda();
    AstExprPtr value = OrTest();
    if (AtName("if")) {
      auto e = NewExpr(Kind::kIfExp, Next().span);
      AstExprPtr cond = OrTest();
      if (!AcceptName("else")) Fail("expected 'else' in conditional expression");
      e->children = {cond, value, Expression()};
      return e;
    }
    return value;
  }

  // `lambda i, j: e1, e2` takes every comma-separated expression up to the
  // closing bracket as its (tuple) body, as the design's index maps are written.
  AstExprPtr Lambda() {
    auto e = NewExpr(Kind::kLambda, Next().span);
    while (!AtOp(":")) {
      e->params.push_back(ExpectName("a lambda parameter"));
      if (!AcceptOp(",")) break;
    }
    ExpectOp(":");
    Span span = Cur().span;
    AstExprPtr first = Expression();
    if (!AtOp(",")) {
      e->children.push_back(first);
      return e;
    }
    auto tuple = NewExpr(Kind::kTuple, span);
    tuple->children.push_back(first);
    while (AcceptOp(",")) {
      if (AtOp(")") || AtOp("]") || AtOp("}")) break;
      tuple->children.push_back(Expression());
    }
    e->children.push_back(tuple);
    return e;
  }

  AstExprPtr OrTest() {
    AstExprPtr left = AndTest();
    while (AtName("or")) {
      auto e = NewExpr(Kind::kBoolOp, Next().span);
      e->text = "or";
      e->children = {left, AndTest()};
      left = e;
    }
    return left;
  }

  AstExprPtr AndTest() {
    AstExprPtr left = NotTest();
    while (AtName("and")) {
      auto e = NewExpr(Kind::kBoolOp, Next().span);
      e->text = "and";
      e->children = {left, NotTest()};
      left = e;
    }
    return left;
  }

  AstExprPtr NotTest() {
    DepthGuard guard(this);
    if (AtName("not")) {
      auto e = NewExpr(Kind::kUnary, Next().span);
      e->text = "not";
      e->children = {NotTest()};
      return e;
    }
    return Comparison();
  }

  AstExprPtr Comparison() {
    AstExprPtr left = Arith();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (AtOp(op)) {
        auto e = NewExpr(Kind::kCompare, Next().span);
        e->text = op;
        e->children = {left, Arith()};
        for (const char* again : {"==", "!=", "<=", ">=", "<", ">"}) {
          if (AtOp(again)) Fail("chained comparisons are not supported; use 'and'");
        }
        return e;
      }
    }
    return left;
  }

  AstExprPtr Arith() {
    AstExprPtr left = Term();
    while (AtOp("+") || AtOp("-")) {
      auto e = NewExpr(Kind::kBinary, Cur().span);
      e->text = Next().text;
      e->children = {left, Term()};
      left = e;
    }
    return left;
  }

  AstExprPtr Term() {
    AstExprPtr left = Factor();
    while (AtOp("*") || AtOp("/") || AtOp("//") || AtOp("%")) {
      auto e = NewExpr(Kind::kBinary, Cur().span);
      e->text = Next().text;
      e->children = {left, Factor()};
      left = e;
    }
    return left;
  }

  AstExprPtr Factor() {
    DepthGuard guard(this);
    if (AtOp("-") || AtOp("+")) {
      auto e = NewExpr(Kind::kUnary, Cur().span);
      e->text = Next().text;
      e->children = {Factor()};
      return e;
    }
    AstExprPtr base = Postfix();
    if (AtOp("**")) {
      auto e = NewExpr(Kind::kBinary, Next().span);
      e->text = "**";
      e->children = {base, Factor()};
      return e;
    }
    return base;
  }

  AstExprPtr Postfix() {
    AstExprPtr e = Atom();
    while (true) {
      if (AtOp(".")) {
        Next();
        auto attr = NewExpr(Kind::kAttribute, Cur().span);
        attr->text = ExpectName("an attribute name");
        attr->children = {e};
        e = attr;
      } else if (AtOp("(")) {
        auto call = NewExpr(Kind::kCall, e->span);
        Next();
        call->children.push_back(e);
        while (!AtOp(")")) {
          if (At(TokenKind::kName) && tokens_[pos_ + 1].kind == TokenKind::kOp && tokens_[pos_ + 1].text == "=") {
            std::string key = Next().text;
            Next();
            call->keywords.emplace_back(key, Expression());
          } else {
            if (!call->keywords.empty()) Fail("positional argument follows keyword argument");
            call->children.push_back(Expression());
          }
          if (!AcceptOp(",")) break;
        }
        ExpectOp(")");
        e = call;
      } else if (AtOp("[")) {
        auto sub = NewExpr(Kind::kSubscript, e->span);
        Next();
        sub->children.push_back(e);
        while (!AtOp("]")) {
          sub->children.push_back(Expression());
          if (!AcceptOp(",")) break;
        }
        ExpectOp("]");
        e = sub;
      } else {
        return e;
      }
    }
  }

  AstExprPtr Atom() {
    const Token& t = Cur();
    switch (t.kind) {
      case TokenKind::kName: {
        if (t.text == "True" || t.text == "False") {
          auto e = NewExpr(Kind::kBool, Next().span);
          e->bool_value = t.text == "True";
          return e;
        }
        if (t.text == "None") return NewExpr(Kind::kNone, Next().span);
        if (IsKeyword(t.text)) Fail("expected an expression but found '" + t.text + "'");
        auto e = NewExpr(Kind::kName, t.span);
        e->text = Next().text;
        return e;
      }
      case TokenKind::kInt: {
        auto e = NewExpr(Kind::kInt, t.span);
        try {
          e->int_value = std::stoll(t.text);
        } catch (const std::exception&) {
          Fail("integer literal " + t.text + " is out of range");
        }
        Next();
        return e;
      }
      case TokenKind::kFloat: {
        auto e = NewExpr(Kind::kFloat, t.span);
        try {
          e->float_value = std::stod(t.text);
        } catch (const std::exception&) {
          Fail("float literal " + t.text + " is out of range");
        }
        Next();
        return e;
      }
      case TokenKind::kString: {
        auto e = NewExpr(Kind::kString, t.span);
        while (At(TokenKind::kString)) e->text += Next().text;  // implicit concatenation
        return e;
      }
      case TokenKind::kOp:
        if (t.text == "(") return Parenthesized();
        if (t.text == "[") return ListDisplay();
        if (t.text == "{") return DictDisplay();
        break;
      default:
        break;
    }
    Fail("expected an expression but found " + Describe(t));
  }

  AstExprPtr Parenthesized() {
    Span span = Next().span;
    if (AcceptOp(")")) return NewExpr(Kind::kTuple, span);
    AstExprPtr first = Expression();
    if (AcceptOp(")")) return first;
    auto tuple = NewExpr(Kind::kTuple, span);
    tuple->children.push_back(first);
    while (AcceptOp(",")) {
      if (AtOp(")")) break;
      tuple->children.push_back(Expression());
    }
    ExpectOp(")");
    return tuple;
  }

  AstExprPtr ListDisplay() {
    auto list = NewExpr(Kind::kList, Next().span);
    while (!AtOp("]")) {
      list->children.push_back(Expression());
      if (!AcceptOp(",")) break;
    }
    ExpectOp("]");
    return list;
  }

  AstExprPtr DictDisplay() {
    auto dict = NewExpr(Kind::kDict, Next().span);
    while (!AtOp("}")) {
      dict->keys.push_back(Expression());
      ExpectOp(":");
      dict->children.push_back(Expression());
      if (!AcceptOp(",")) break;
    }
    ExpectOp("}");
    return dict;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<AstStmtPtr> ParseModule(const std::shared_ptr<const SourceFile>& file) {
  return SyntaxParser(Tokenize(file)).Module();
}

}  // namespace sparsetir::parser
