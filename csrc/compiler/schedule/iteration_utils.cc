#include "schedule/iteration_utils.h"

#include "ir/functor.h"
#include "schedule/schedule.h"

namespace sparsetir {
namespace {

class IterationEditor : public IRMutator {
 public:
  IterationEditor(std::string name, std::function<Stmt(const SparseIterationNode*)> edit)
      : name_(std::move(name)), edit_(std::move(edit)) {}
  bool found = false;

 protected:
  Stmt Mutate(const SparseIterationNode* node, const Stmt& self) override {
    if (node->name != name_) return self;
    found = true;
    return edit_(node);
  }

 private:
  std::string name_;
  std::function<Stmt(const SparseIterationNode*)> edit_;
};

}  // namespace

PrimFunc EditIteration(const PrimFunc& f, const std::string& name, const char* primitive,
                       std::function<Stmt(const SparseIterationNode*)> edit) {
  if (f->stage != Stage::kI) {
    ThrowScheduleError(std::string(primitive) + " works on stage-I sparse iterations, but '" + f->name + "' is at " +
                           ToString(f->stage),
                       "");
  }
  IterationEditor editor(name, std::move(edit));
  Stmt body = editor.VisitStmt(f->body);
  if (!editor.found) {
    ThrowScheduleError(std::string(primitive) + ": no sparse iteration named '" + name + "' in '" + f->name + "'", "");
  }
  return WithBody(f, body);
}

}  // namespace sparsetir
