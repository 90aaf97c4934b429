#include "transforms/lift_workspaces.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/substitute.h"
#include "support/error.h"

namespace sparsetir {
namespace {

// Swaps each workspace's allocated buffer for its parameter-bound twin.
class WorkspaceSwapper : public BufferSwapper {
 public:
  explicit WorkspaceSwapper(const std::map<const BufferNode*, Buffer>& lifted) : lifted_(lifted) {}

 protected:
  Buffer Map(const Buffer& b) const override {
    auto found = lifted_.find(b.get());
    return found == lifted_.end() ? b : found->second;
  }

 private:
  const std::map<const BufferNode*, Buffer>& lifted_;
};

// `wanted`, or wanted_1, wanted_2, ...: not the name of another parameter.
std::string ParamName(const std::string& wanted, const std::vector<Var>& params) {
  std::set<std::string> taken;
  for (const Var& p : params) taken.insert(p->name);
  std::string name = wanted;
  for (int i = 1; taken.count(name); ++i) name = wanted + "_" + std::to_string(i);
  return name;
}

}  // namespace

bool IsWorkspace(const BufferNode* b) { return b->kind == BufferKind::kMatch && b->scope == kWorkspaceScope; }

PrimFunc LiftWorkspaces(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kIII) << "lift_workspaces needs a stage III function";
  std::map<const BufferNode*, Buffer> lifted;
  PrimFuncNode out = *f;
  out.buffers.clear();
  for (const Buffer& b : f->buffers) {
    if (b->kind != BufferKind::kAlloc) {
      out.buffers.push_back(b);
      continue;
    }
    BufferNode copy = *b;
    copy.kind = BufferKind::kMatch;
    copy.scope = kWorkspaceScope;
    copy.data = MakeVar(ParamName(b->name + "_workspace", out.params), DataType::kHandle);
    out.params.push_back(copy.data);
    Buffer made = MakeBuffer(std::move(copy));
    lifted[b.get()] = made;
    out.buffers.push_back(made);
  }
  // Workspace parameters come last (a stage-III script may declare one
  // anywhere): the call passes the others in order, the host appends these.
  std::set<const VarNode*> workspace_handles;
  for (const Buffer& b : out.buffers) {
    if (IsWorkspace(b.get())) workspace_handles.insert(b->data.get());
  }
  std::stable_partition(out.params.begin(), out.params.end(),
                        [&](const Var& p) { return workspace_handles.count(p.get()) == 0; });
  if (lifted.empty() && out.params == f->params) return f;
  if (f->body && !lifted.empty()) out.body = WorkspaceSwapper(lifted).VisitStmt(f->body);
  return MakePrimFunc(std::move(out));
}

}  // namespace sparsetir
