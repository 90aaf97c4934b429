// sparse_fuse (stage I): iterate a parent and its varied child as one loop over
// the child's non-zeros (TACO's collapse). Recorded as the iteration attribute
// "sparse_fuse", which lower_sparse_iter reads.
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
    if (names.size() != 2) {
      ThrowScheduleError(where + ": give a parent iterator and its child, e.g. [\"I\", \"J\"]", context);
    }
    std::vector<size_t> at;
    for (const std::string& name : names) {
      auto pos = std::find_if(it->iterators.begin(), it->iterators.end(),
                              [&](const SparseIterator& x) { return x->name == name; });
      if (pos == it->iterators.end()) ThrowScheduleError(where + " has no iterator '" + name + "'", context);
      at.push_back(pos - it->iterators.begin());
    }
    const SparseIterator& parent = it->iterators[at[0]];
    const SparseIterator& child = it->iterators[at[1]];
    if (at[1] != at[0] + 1) {
      ThrowScheduleError(where + ": '" + names[1] + "' must come right after '" + names[0] + "'", context);
    }
    if (child->parent != parent || !IsVaried(child->kind) || !child->nnz) {
      ThrowScheduleError(where + ": '" + names[1] + "' must be a varied iterator with a known nnz whose parent is '" +
                             names[0] + "'",
                         context);
    }
    if (parent->kind != IteratorKind::kDenseFixed) {
      ThrowScheduleError(where + ": the parent '" + names[0] + "' must be a dense_fixed root", context);
    }
    if (it->roles[at[0]] != 'S' || it->roles[at[1]] != 'S') {
      ThrowScheduleError(where + ": only spatial iterators can be fused (a fused reduction has no place for its init)",
                         context);
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
