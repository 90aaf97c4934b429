// reorder: permutes loops of a perfect nest.
//
// Before:  for j in T.serial(n):
//              for k in T.serial(8): body
// After:   sch.reorder(["k", "j"])
//          for k in T.serial(8):
//              for j in T.serial(n): body
// A loop whose bounds depend on another loop (a sparse level under its parent)
// cannot move outside it.
#include <algorithm>

#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {

void Schedule::Reorder(const std::vector<std::string>& names) {
  EnsureStageII("reorder");
  if (names.size() < 2) ThrowScheduleError("reorder: give at least two loops", "");
  std::vector<const ForNode*> given;
  for (const std::string& name : names) given.push_back(FindLoop(func_, name, "reorder"));
  // The outermost given loop: the one whose chain of directly nested loops
  // reaches all the others.
  auto chain_from = [](const ForNode* start) {
    std::vector<const ForNode*> chain;
    for (const ForNode* cur = start; cur; cur = cur->body->as<ForNode>()) chain.push_back(cur);
    return chain;
  };
  const ForNode* top = nullptr;
  for (const ForNode* candidate : given) {
    std::vector<const ForNode*> chain = chain_from(candidate);
    bool reaches_all = true;
    for (const ForNode* other : given) reaches_all &= std::find(chain.begin(), chain.end(), other) != chain.end();
    if (reaches_all) top = candidate;
  }
  std::vector<const ForNode*> chain = chain_from(top);
  const std::string context = Excerpt(top ? top : given[0]);
  std::vector<size_t> positions;
  for (size_t t = 0; t < given.size(); ++t) {
    auto pos = std::find(chain.begin(), chain.end(), given[t]);
    if (!top || pos == chain.end()) {
      ThrowScheduleError("reorder: loops " + PyList(names) + " are not a perfect nest (loop '" + names[t] +
                             "' is not directly nested with the others)",
                         context);
    }
    positions.push_back(pos - chain.begin());
  }
  std::vector<size_t> sorted = positions;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    ThrowScheduleError("reorder: a loop is named twice in " + PyList(names), context);
  }
  std::vector<const ForNode*> order = chain;
  for (size_t t = 0; t < given.size(); ++t) order[sorted[t]] = given[t];
  for (size_t a = 0; a < order.size(); ++a) {
    for (size_t b = a + 1; b < order.size(); ++b) {
      if (Uses(order[a]->extent, order[b]->var.get()) || Uses(order[a]->min, order[b]->var.get())) {
        ThrowScheduleError("reorder: loop '" + order[a]->var->name + "' has bounds that depend on loop '" +
                               order[b]->var->name + "', so it cannot be placed outside it",
                           context);
      }
    }
  }
  Stmt body = chain.back()->body;
  for (size_t t = order.size(); t-- > 0;) {
    const ForNode* l = order[t];
    body = MakeFor(l->var, l->min, l->extent, l->for_kind, body, l->thread_tag);
  }
  func_ = ReplaceStmt(func_, top, body);
  Record("sch.reorder(" + PyList(names) + ")");
}

}  // namespace sparsetir
