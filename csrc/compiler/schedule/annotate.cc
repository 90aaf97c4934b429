// annotate (stage I): sets an attribute of a sparse iteration
// (T.sp.iteration_attr); later passes read it.
//
// sch.annotate("csrmm", "preprocess", True)
//     with T.sp.iteration([I, J, K], "SRS", "csrmm") as [i, j, k]:
//         T.sp.iteration_attr({"preprocess": True})
#include <cmath>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "schedule/iteration_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"
#include "support/error.h"

namespace sparsetir {

void Schedule::Annotate(const std::string& iteration, const std::string& key, const AttrPtr& value) {
  // The trace and the printed script write the value as a literal that
  // replays: a float must be finite.
  if (value->kind == AttrValue::Kind::kFloat && !std::isfinite(value->float_value)) {
    ThrowScheduleError("annotate: the value of '" + key + "' must be a finite float (the trace writes it as a "
                       "literal), got " + std::string(std::isnan(value->float_value) ? "nan"
                                                       : value->float_value > 0 ? "inf" : "-inf"), "");
  }
  if (key == "accumulate" && value->kind != AttrValue::Kind::kBool) {
    ThrowScheduleError("annotate: 'accumulate' is True or False", "");
  }
  PrimFunc annotated = EditIteration(func_, iteration, "annotate", [&](const SparseIterationNode* it) {
    SparseIterationNode out = *it;
    out.attrs = WithAttr(out.attrs, key, value);
    return MakeIteration(std::move(out));
  });
  // The attributes the verifier reads ("accumulate") hold as in a parsed
  // script: the annotated function must be one the parser accepts.
  try {
    VerifyStageI(annotated);
  } catch (const UserError& e) {
    ThrowScheduleError("annotate: with '" + key + "' set to " + Print(value) + ", " + e.what(), "");
  }
  func_ = annotated;
  Record("sch.annotate(" + PyStr(iteration) + ", " + PyStr(key) + ", " + Print(value) + ")");
}

}  // namespace sparsetir
