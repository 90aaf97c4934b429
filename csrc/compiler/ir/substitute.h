// Replaces variables by expressions (loop transformations rewrite a loop
// variable in terms of new ones).
#pragma once

#include <map>
#include <set>

#include "ir/expr.h"
#include "ir/functor.h"
#include "ir/stmt.h"

namespace sparsetir {

using VarMap = std::map<const VarNode*, Expr>;

Expr Substitute(const Expr& e, const VarMap& map);
Stmt Substitute(const Stmt& s, const VarMap& map);
// True if `e` (or `s`) mentions `var`.
bool Uses(const Expr& e, const VarNode* var);
bool Uses(const Stmt& s, const VarNode* var);
// `var` and every let variable under `body` whose value is computed from it
// (directly or through another such let): what an index depends on `var`
// through. Loop variables are not included: a loop whose bounds use `var`
// does not make the elements its iterations touch disjoint across `var`.
std::set<const VarNode*> VarsComputedFrom(const Stmt& body, const VarNode* var);
// True if `e` mentions any of `vars`.
bool UsesAny(const Expr& e, const std::set<const VarNode*>& vars);
// True if `e` loads from a buffer (a value only the kernel can compute, not
// the host from the scalar arguments).
bool ReadsBuffer(const Expr& e);
// Whether `s` holds a T.sp.sync_threads() (BarrierNode).
bool HasBarrier(const Stmt& s);

// Rebuilds every load, store and assumption with its buffer swapped for
// Map(buffer): what a pass that remakes buffers (specialize, lift_workspaces)
// runs over the body.
class BufferSwapper : public IRMutator {
 protected:
  virtual Buffer Map(const Buffer& b) const = 0;
  Expr Mutate(const BufferLoadNode* node, const Expr& self) override;
  Stmt Mutate(const BufferStoreNode* node, const Stmt& self) override;
  Stmt Mutate(const AssumeNode* node, const Stmt& self) override;
};

}  // namespace sparsetir
