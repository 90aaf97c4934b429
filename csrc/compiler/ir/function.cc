#include "ir/function.h"

#include <set>

#include "support/error.h"

namespace sparsetir {

const char* ToString(Stage stage) {
  switch (stage) {
    case Stage::kI: return "stage I";
    case Stage::kII: return "stage II";
    case Stage::kIII: return "stage III";
  }
  return "?";
}

PrimFunc MakePrimFunc(PrimFuncNode node) {
  ICHECK(!node.name.empty()) << "function without a name";
  std::set<std::string> names;
  for (const Var& p : node.params) {
    ICHECK(p->dtype == DataType::kHandle || IsInteger(p->dtype)) << "parameter " << p->name;
    ICHECK(names.insert(p->name).second) << "duplicate parameter " << p->name;
  }
  return std::make_shared<const PrimFuncNode>(std::move(node));
}

PrimFunc WithBody(const PrimFunc& f, Stmt body) {
  PrimFuncNode copy = *f;
  copy.body = std::move(body);
  return MakePrimFunc(std::move(copy));
}

}  // namespace sparsetir
