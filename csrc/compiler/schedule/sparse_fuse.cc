// sparse_fuse (stage I): iterate a dense_fixed root and a chain of varied
// descendants (I, J of a CSR; I, J, K of a CSF) as one loop over the last
// one's non-zeros (TACO's collapse). Recorded as the iteration attribute
// "sparse_fuse", which lower_sparse_iter reads; each ancestor's position is
// found by binary search in the indptr below it.
//
// Before:  with T.sp.iteration([I, J, K], "SSR", "sddmm") as [i, j, k]:
// After:   sch.sparse_fuse("sddmm", ["I", "J"])
//          stage II:  for ij in T.serial(nnz):
//                         i: T.int32 = T.sp.lower_bound(indptr, 0, m + 1, ij + 1) - 1
//                         j: T.int32 = ij - J_indptr[i]
// One loop over all non-zeros balances work regardless of row lengths (SDDMM);
// the row is found by binary search in indptr.
#include <algorithm>

#include "schedule/iteration_utils.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {

void Schedule::SparseFuse(const std::string& iteration, const std::vector<std::string>& names) {
  func_ = EditIteration(func_, iteration, "sparse_fuse", [&](const SparseIterationNode* it) {
    const std::string context = Excerpt(it);
    const std::string where = "sparse_fuse: iteration '" + iteration + "'";
    if (names.size() < 2) {
      ThrowScheduleError(where + ": give a parent iterator and its descendants, e.g. [\"I\", \"J\"]", context);
    }
    std::vector<size_t> at;
    for (const std::string& name : names) {
      auto pos = std::find_if(it->iterators.begin(), it->iterators.end(),
                              [&](const SparseIterator& x) { return x->name == name; });
      if (pos == it->iterators.end()) ThrowScheduleError(where + " has no iterator '" + name + "'", context);
      at.push_back(pos - it->iterators.begin());
    }
    if (it->iterators[at[0]]->kind != IteratorKind::kDenseFixed) {
      ThrowScheduleError(where + ": the parent '" + names[0] + "' must be a dense_fixed root", context);
    }
    for (size_t k = 1; k < at.size(); ++k) {
      const SparseIterator& parent = it->iterators[at[k - 1]];
      const SparseIterator& child = it->iterators[at[k]];
      if (at[k] != at[k - 1] + 1) {
        ThrowScheduleError(where + ": '" + names[k] + "' must come right after '" + names[k - 1] + "'", context);
      }
      if (child->parent != parent || !IsVaried(child->kind) || !child->nnz) {
        ThrowScheduleError(where + ": '" + names[k] + "' must be a varied iterator with a known nnz whose parent is '" +
                               names[k - 1] + "'",
                           context);
      }
    }
    for (size_t t : at) {
      if (it->roles[t] != 'S') {
        ThrowScheduleError(where + ": only spatial iterators can be fused (a fused reduction has no place for its init)",
                           context);
      }
    }
    if (FindAttr(it->attrs, "sparse_fuse")) ThrowScheduleError(where + " is already fused", context);
    auto value = std::make_shared<AttrValue>();
    value->kind = AttrValue::Kind::kList;
    for (const std::string& name : names) {
      auto item = std::make_shared<AttrValue>();
      item->kind = AttrValue::Kind::kString;
      item->string_value = name;
      value->items.push_back(item);
    }
    SparseIterationNode out = *it;
    out.attrs = WithAttr(out.attrs, "sparse_fuse", value);
    return MakeIteration(std::move(out));
  });
  Record("sch.sparse_fuse(" + PyStr(iteration) + ", " + PyList(names) + ")");
}

}  // namespace sparsetir
