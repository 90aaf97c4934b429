#include "transforms/check_thread_stores.h"

#include <array>
#include <map>
#include <vector>

#include "ir/functor.h"
#include "ir/substitute.h"
#include "support/error.h"

namespace sparsetir {
namespace {

constexpr std::array<const char*, 3> kAxes = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};

bool RunsSeveralThreads(const ForNode* loop) {
  const int64_t* extent = AsConstInt(loop->extent);
  return ThreadAxis(loop) >= 0 && !(extent && *extent == 1);
}

// Each store into a global or shared buffer with the thread loops around it.
struct Store {
  const BufferNode* buffer;
  std::string block;                          // the innermost block around it ("" if none)
  std::array<const ForNode*, 3> around = {};  // the loop bound to each axis around it, if any
};

class StoreFinder : public IRVisitor {
 public:
  std::vector<Store> stores;
  std::array<bool, 3> used = {};  // axes bound to several threads somewhere

  void Visit(const ForNode* n) override {
    const int axis = RunsSeveralThreads(n) ? ThreadAxis(n) : -1;
    if (axis < 0) return IRVisitor::Visit(n);
    used[axis] = true;
    const ForNode* outer = around_[axis];
    around_[axis] = n;
    IRVisitor::Visit(n);
    around_[axis] = outer;
  }
  void Visit(const BlockNode* n) override {
    const std::string outer = block_;
    block_ = n->name;
    IRVisitor::Visit(n);
    block_ = outer;
  }
  void Visit(const BufferStoreNode* n) override {
    Record(n->buffer.get());
    IRVisitor::Visit(n);
  }
  void Visit(const AtomicAddNode* n) override {
    if (const auto* load = n->target->as<BufferLoadNode>()) Record(load->buffer.get());
    IRVisitor::Visit(n);
  }

 private:
  void Record(const BufferNode* buffer) {
    if (buffer->scope == "local") return;
    stores.push_back({buffer, block_, around_});
  }
  std::array<const ForNode*, 3> around_ = {};
  std::string block_;
};

}  // namespace

void CheckThreadStores(const PrimFunc& f) {
  if (!f->body || HasBarrier(f->body)) return;
  StoreFinder finder;
  finder.VisitStmt(f->body);
  std::map<const BufferNode*, std::vector<const Store*>> by_buffer;
  for (const Store& s : finder.stores) by_buffer[s.buffer].push_back(&s);
  for (const auto& [buffer, stores] : by_buffer) {
    for (int axis = 0; axis < 3; ++axis) {
      if (!finder.used[axis]) continue;
      const Store* everyone = nullptr;
      const Store* divided = nullptr;
      for (const Store* s : stores) {
        (s->around[axis] ? divided : everyone) = s;
      }
      if (!everyone || !divided) continue;
      const std::string where = everyone->block.empty() ? "" : " in block '" + everyone->block + "'";
      const std::string other = divided->block.empty() ? "" : " (block '" + divided->block + "')";
      throw UserError(UserErrorKind::kSchedule,
                      "a store into '" + buffer->name + "'" + where + " runs on every thread of " + kAxes[axis] +
                          ", while loop '" + divided->around[axis]->var->name + "'" + other +
                          " divides its other stores among those threads: the threads would race on '" +
                          buffer->name + "'. Bind a loop around the first store to " + kAxes[axis] +
                          " too (a split of it, as for the other loop)");
    }
  }
}

}  // namespace sparsetir
