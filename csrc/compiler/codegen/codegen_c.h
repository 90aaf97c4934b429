// CPU code generation: a stage-III PrimFunc -> one C++ translation unit with an
// `extern "C"` entry over raw pointers and integers (codegen/abi.h). The code
// includes no torch header and links nothing: parallel loops go through the
// launcher that the host passes in. A GPU backend derives from CodegenC and
// overrides only what differs (signature, thread binding, atomics).
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "ir/function.h"

namespace sparsetir {

// The C type a buffer element of `dtype` is stored as (float16 -> uint16_t).
const char* StorageType(DataType dtype);
// The C type an expression of `dtype` is computed in (float16 -> float).
const char* ValueType(DataType dtype);

class CodegenC {
 public:
  virtual ~CodegenC() = default;
  // The whole translation unit.
  std::string Generate(const PrimFunc& f);

 protected:
  virtual void EmitPrelude();
  virtual void EmitEntry(const PrimFunc& f);
  void EmitStmt(const Stmt& s);
  virtual void EmitFor(const ForNode* loop);
  std::string Expr2C(const Expr& e);
  std::string Index(const Buffer& b, const std::vector<Expr>& indices);
  std::string Name(const void* key, const std::string& wanted);
  void Line(const std::string& text);

  std::ostringstream out_;
  int indent_ = 0;
  std::map<const void*, std::string> names_;  // IR object -> C identifier
  std::set<std::string> taken_;
};

std::string CodegenCpu(const PrimFunc& f);

}  // namespace sparsetir
