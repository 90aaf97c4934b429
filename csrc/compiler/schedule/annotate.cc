// annotate (stage I): sets an attribute of a sparse iteration
// (T.sp.iteration_attr); later passes read it.
//
// sch.annotate("csrmm", "preprocess", True)
//     with T.sp.iteration([I, J, K], "SRS", "csrmm") as [i, j, k]:
//         T.sp.iteration_attr({"preprocess": True})
#include "ir/printer.h"
#include "schedule/iteration_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {

void Schedule::Annotate(const std::string& iteration, const std::string& key, const AttrPtr& value) {
  func_ = EditIteration(func_, iteration, "annotate", [&](const SparseIterationNode* it) {
    SparseIterationNode out = *it;
    out.attrs = WithAttr(out.attrs, key, value);
    return MakeIteration(std::move(out));
  });
  Record("sch.annotate(" + PyStr(iteration) + ", " + PyStr(key) + ", " + Print(value) + ")");
}

}  // namespace sparsetir
