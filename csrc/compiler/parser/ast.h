// The syntax tree of a script: a small Python AST. The parser builds it; the
// builder (builder.cc) turns it into IR, resolving names and checking types.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/source.h"

namespace sparsetir::parser {

struct AstExpr;
using AstExprPtr = std::shared_ptr<const AstExpr>;

struct AstExpr {
  enum class Kind {
    kName, kInt, kFloat, kString, kBool, kNone,
    kAttribute,  // children[0].name
    kCall,       // children[0](children[1..], keywords)
    kSubscript,  // children[0][children[1..]]
    kTuple, kList, kDict,  // dict: keys[i]: children[i]
    kBinary,     // children[0] op children[1]
    kUnary,      // op children[0]  ("-", "+", "not")
    kCompare,    // children[0] op children[1]
    kBoolOp,     // children joined by op ("and", "or")
    kLambda,     // lambda params: children[0]
    kIfExp,      // children[1] if children[0] else children[2]
  };
  Kind kind;
  Span span;
  std::string text;  // name, attribute, operator or string value
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::vector<AstExprPtr> children;
  std::vector<AstExprPtr> keys;                            // dict keys
  std::vector<std::pair<std::string, AstExprPtr>> keywords;  // call keywords
  std::vector<std::string> params;                         // lambda parameters
};

struct AstStmt;
using AstStmtPtr = std::shared_ptr<const AstStmt>;

struct AstParam {
  std::string name;
  AstExprPtr annotation;  // may be null
  Span span;
};

struct AstStmt {
  enum class Kind { kFunctionDef, kAssign, kAugAssign, kExpr, kWith, kFor, kIf, kPass, kReturn };
  Kind kind;
  Span span;
  // FunctionDef
  std::string name;
  std::vector<AstExprPtr> decorators;
  std::vector<AstParam> params;
  // Assign / AugAssign (text = operator) / Expr / With / For / If / Return
  std::string text;
  AstExprPtr target;      // Assign, AugAssign, With "as" target, For target
  AstExprPtr annotation;  // `x: T.int32 = ...`
  AstExprPtr value;       // Assign value, Expr, With item, For iterable, If condition, Return
  std::vector<AstStmtPtr> body;
  std::vector<AstStmtPtr> orelse;
};

// Parses a whole script into top-level statements. Throws ScriptError.
std::vector<AstStmtPtr> ParseModule(const std::shared_ptr<const SourceFile>& file);

}  // namespace sparsetir::parser
