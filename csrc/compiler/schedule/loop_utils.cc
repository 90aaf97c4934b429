#include "schedule/loop_utils.h"

#include <set>
#include <sstream>

#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace sparsetir {
namespace {

// Finds statements, tracking the loops on the way down.
class Finder : public IRVisitor {
 public:
  std::function<void(const StmtNode*, const std::vector<const ForNode*>&)> on_stmt;

  void VisitStmt(const Stmt& s) override {
    if (!s) return;
    on_stmt(s.get(), stack_);
    if (const auto* loop = s->as<ForNode>()) {
      stack_.push_back(loop);
      IRVisitor::VisitStmt(s);
      stack_.pop_back();
      return;
    }
    IRVisitor::VisitStmt(s);
  }

 private:
  std::vector<const ForNode*> stack_;
};

class Replacer : public IRMutator {
 public:
  Replacer(const StmtNode* target, Stmt replacement) : target_(target), replacement_(std::move(replacement)) {}

  Stmt VisitStmt(const Stmt& s) override {
    if (s.get() == target_) return replacement_;
    return IRMutator::VisitStmt(s);
  }

 private:
  const StmtNode* target_;
  Stmt replacement_;
};

class Names : public IRVisitor {
 public:
  std::set<std::string> used;

 protected:
  void Visit(const VarNode* n) override { used.insert(n->name); }
  void Visit(const ForNode* n) override {
    used.insert(n->var->name);
    IRVisitor::Visit(n);
  }
  void Visit(const LetNode* n) override {
    used.insert(n->var->name);
    IRVisitor::Visit(n);
  }
};

}  // namespace

const ForNode* FindLoop(const PrimFunc& f, const std::string& name, const char* primitive) {
  const ForNode* found = nullptr;
  Finder finder;
  finder.on_stmt = [&](const StmtNode* s, const std::vector<const ForNode*>&) {
    if (const auto* loop = s->as<ForNode>(); loop && loop->var->name == name && !found) found = loop;
  };
  finder.VisitStmt(f->body);
  if (!found) {
    std::string loops;
    Finder all;
    all.on_stmt = [&](const StmtNode* s, const std::vector<const ForNode*>&) {
      if (const auto* loop = s->as<ForNode>()) loops += (loops.empty() ? "" : ", ") + loop->var->name;
    };
    all.VisitStmt(f->body);
    ThrowScheduleError(std::string(primitive) + ": no loop named '" + name + "' in function '" + f->name +
                           "' (its loops: " + (loops.empty() ? "none" : loops) + ")",
                       "");
  }
  return found;
}

std::vector<const ForNode*> LoopsAround(const PrimFunc& f, const std::string& block, const char* primitive) {
  std::vector<const ForNode*> result;
  bool found = false;
  Finder finder;
  finder.on_stmt = [&](const StmtNode* s, const std::vector<const ForNode*>& stack) {
    if (const auto* b = s->as<BlockNode>(); b && b->name == block && !found) {
      found = true;
      result = stack;
    }
  };
  finder.VisitStmt(f->body);
  if (!found) {
    std::string blocks;
    for (const std::string& b : BlockNames(f)) blocks += (blocks.empty() ? "" : ", ") + b;
    ThrowScheduleError(std::string(primitive) + ": no block named '" + block + "' in function '" + f->name +
                           "' (its blocks: " + (blocks.empty() ? "none" : blocks) + ")",
                       "");
  }
  return result;
}

std::vector<std::string> BlockNames(const PrimFunc& f) {
  std::vector<std::string> names;
  Finder finder;
  finder.on_stmt = [&](const StmtNode* s, const std::vector<const ForNode*>&) {
    if (const auto* b = s->as<BlockNode>()) names.push_back(b->name);
  };
  finder.VisitStmt(f->body);
  return names;
}

PrimFunc ReplaceStmt(const PrimFunc& f, const StmtNode* target, Stmt replacement) {
  Stmt body = Replacer(target, std::move(replacement)).VisitStmt(f->body);
  ICHECK(body != f->body) << "statement to replace not found";
  return WithBody(f, body);
}

std::string FreshName(const PrimFunc& f, const std::string& base) {
  Names names;
  names.VisitStmt(f->body);
  for (const Var& p : f->params) names.used.insert(p->name);
  for (const SparseIterator& it : f->iterators) names.used.insert(it->name);
  for (const Buffer& b : f->buffers) names.used.insert(b->name);
  std::string name = base;
  for (int i = 1; names.used.count(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

std::string Excerpt(const StmtNode* s) {
  // Print a non-owning view: the statement outlives this call.
  Stmt view(std::shared_ptr<const StmtNode>{}, s);
  return Excerpt(view);
}

std::string Excerpt(const Stmt& s) {
  std::istringstream lines(Print(s));
  std::string line, out;
  for (int i = 0; i < 12 && std::getline(lines, line); ++i) out += "    " + line + "\n";
  if (std::getline(lines, line)) out += "    ...\n";
  return out;
}

}  // namespace sparsetir
