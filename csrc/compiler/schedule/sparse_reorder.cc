// sparse_reorder (stage I): permutes the iterators of a sparse iteration.
//
// Before:  with T.sp.iteration([I, J, K], "SRS", "csrmm") as [i, j, k]:
// After:   sch.sparse_reorder("csrmm", ["I", "K", "J"])
//          with T.sp.iteration([I, K, J], "SSR", "csrmm") as [i, k, j]:
// A child iterator must still follow its parent.
#include <algorithm>

#include "ir/printer.h"
#include "schedule/iteration_utils.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"
#include "support/error.h"

namespace sparsetir {
void Schedule::SparseReorder(const std::string& iteration, const std::vector<std::string>& order) {
  func_ = EditIteration(func_, iteration, "sparse_reorder", [&](const SparseIterationNode* it) {
    const std::string context = Excerpt(it);
    if (order.size() != it->iterators.size()) {
      ThrowScheduleError("sparse_reorder: iteration '" + iteration + "' has " + std::to_string(it->iterators.size()) +
                             " iterators but the new order names " + std::to_string(order.size()),
                         context);
    }
    SparseIterationNode out = *it;
    out.iterators.clear();
    out.vars.clear();
    out.roles.clear();
    for (const std::string& name : order) {
      auto pos = std::find_if(it->iterators.begin(), it->iterators.end(),
                              [&](const SparseIterator& x) { return x->name == name; });
      if (pos == it->iterators.end()) {
        ThrowScheduleError("sparse_reorder: iterator '" + name + "' is not in iteration '" + iteration + "'", context);
      }
      size_t t = pos - it->iterators.begin();
      if (std::find(out.iterators.begin(), out.iterators.end(), *pos) != out.iterators.end()) {
        ThrowScheduleError("sparse_reorder: iterator '" + name + "' is named twice", context);
      }
      out.iterators.push_back(*pos);
      out.vars.push_back(it->vars[t]);
      out.roles += it->roles[t];
    }
    for (size_t t = 0; t < out.iterators.size(); ++t) {
      const SparseIterator& parent = out.iterators[t]->parent;
      if (!parent) continue;
      auto p = std::find(out.iterators.begin(), out.iterators.end(), parent);
      if (p - out.iterators.begin() > static_cast<long>(t)) {
        ThrowScheduleError("sparse_reorder: iterator '" + out.iterators[t]->name + "' would come before its parent '" +
                               parent->name + "'",
                           context);
      }
    }
    return MakeIteration(std::move(out));
  });
  Record("sch.sparse_reorder(" + PyStr(iteration) + ", " + PyList(order) + ")");
}

}  // namespace sparsetir
