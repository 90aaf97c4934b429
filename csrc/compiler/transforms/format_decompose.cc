#include "transforms/format_decompose.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "ir/functor.h"
#include "ir/substitute.h"
#include "ir/verifier.h"
#include "support/error.h"
#include "transforms/format_rule.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

[[noreturn]] void DecomposeError(const std::string& message, const Span& span = Span{}) {
  ThrowScriptError("format_decompose: " + message, span);
}

// The buffers a statement reads and the ones it writes.
struct Accesses : IRVisitor {
  std::set<const BufferNode*> loaded, stored;
  void Visit(const BufferLoadNode* node) override {
    loaded.insert(node->buffer.get());
    IRVisitor::Visit(node);
  }
  void Visit(const BufferStoreNode* node) override {
    stored.insert(node->buffer.get());
    IRVisitor::Visit(node);
  }
  void Visit(const AtomicAddNode* node) override {
    stored.insert(node->target->as<BufferLoadNode>()->buffer.get());
    IRVisitor::Visit(node);
  }
  bool Touches(const BufferNode* b) const { return loaded.count(b) || stored.count(b); }
};

Accesses AccessesOf(const Stmt& s) {
  Accesses a;
  if (s) a.VisitStmt(s);
  return a;
}

// Names not taken by the function's parameters, iterators and buffers, for
// the variables of one new iteration (each iteration gets its own copy).
class Names {
 public:
  explicit Names(const PrimFuncNode& f) {
    for (const Var& p : f.params) used_.insert(p->name);
    for (const SparseIterator& it : f.iterators) used_.insert(it->name);
    for (const Buffer& b : f.buffers) used_.insert(b->name);
  }
  Var FreshVar(std::string base, DataType dtype) {
    std::transform(base.begin(), base.end(), base.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return MakeVar(name, dtype);
  }

 private:
  std::set<std::string> used_;
};

// One rule's rewrite of one buffer of the computation.
struct Rewrite {
  const FormatRule* rule;
  const FormatTarget* target;
  Buffer original;
};

// Whether a coordinate of the original may be reached from several positions
// of the format: it reads memory (a map), or it is the coordinate of a
// compressed format level, which distinct parents may store alike (an ELL
// bucket's row map; within one fiber compressed coordinates are distinct).
bool MayRepeat(const Expr& coordinate, const Buffer& format, const std::vector<Var>& format_vars) {
  if (ReadsBuffer(coordinate)) return true;
  for (size_t q = 0; q < format_vars.size(); ++q) {
    if (IsCompressed(format->axes[q]->kind) && Uses(coordinate, format_vars[q].get())) return true;
  }
  return false;
}

// AND of the conditions that every inverse-mapped coordinate lies within its
// original axis; null when all are bare coordinates of the format.
Expr InRange(const std::vector<Expr>& coordinates, const Buffer& original, const std::vector<Var>& format_vars) {
  Expr guard;
  for (size_t t = 0; t < coordinates.size(); ++t) {
    const Expr& c = coordinates[t];
    bool bare = std::any_of(format_vars.begin(), format_vars.end(), [&](const Var& v) { return v == c; });
    if (bare) continue;
    Expr value = c, extent = original->axes[t]->extent;
    UnifyIntegers(&value, &extent);
    Expr cond = MakeBinary(BinaryOp::kLT, value, extent);
    if (ReadsBuffer(c)) cond = MakeBinary(BinaryOp::kAnd, MakeBinary(BinaryOp::kGE, value, IntLike(0, value)), cond);
    guard = guard ? MakeBinary(BinaryOp::kAnd, guard, cond) : cond;
  }
  return guard;
}

// with T.sp.iteration(<format axes>, "S...S", "rewrite_A_4"): A_4[...] = A[inv(...)]
Stmt Preprocess(const Rewrite& r, Names names) {
  SparseIterationNode it;
  it.name = "rewrite_" + r.original->name + "_" + r.rule->name;
  for (const SparseIterator& axis : r.target->format_buffer->axes) {
    it.iterators.push_back(axis);
    it.vars.push_back(names.FreshVar(axis->name, axis->idtype));
  }
  it.roles = std::string(it.iterators.size(), 'S');
  std::vector<Expr> at(it.vars.begin(), it.vars.end());
  std::vector<Expr> source = r.target->inv_idx_map.Apply(at);
  Expr value = MakeLoad(r.original, source);
  if (Expr guard = InRange(source, r.original, it.vars)) {
    Expr zero = IsFloat(value->dtype) ? MakeFloat(0.0, value->dtype) : MakeInt(0, value->dtype);
    value = MakeSelect(guard, value, zero);
  }
  it.body = MakeStore(r.target->format_buffer, at, value);
  it.attrs = WithAttr({}, "preprocess", MakeBoolAttr(true));
  return MakeIteration(std::move(it));
}

// The original T.init() over the original spatial iterators.
Stmt InitIteration(const SparseIterationNode* node) {
  SparseIterationNode it;
  it.name = node->name + "_init";
  std::set<const SparseIteratorNode*> kept;
  for (size_t p = 0; p < node->iterators.size(); ++p) {
    if (node->roles[p] != 'S') continue;
    const SparseIterator& x = node->iterators[p];
    if (x->parent && !kept.count(x->parent.get())) {
      DecomposeError("iteration '" + node->name + "': spatial iterator '" + x->name +
                         "' lies under a reduction, so its T.init() cannot run on its own", node->span);
    }
    kept.insert(x.get());
    it.iterators.push_back(x);
    it.vars.push_back(node->vars[p]);
    it.roles += 'S';
  }
  it.body = node->init;
  it.attrs = WithAttr({}, "init", MakeBoolAttr(true));
  it.span = node->span;
  return MakeIteration(std::move(it));
}

// Rewrites one iteration's body for one rule: accesses of the rewritten
// buffers move to the format buffers, other uses of original coordinates
// become inverse-map expressions.
class BodyRewriter : public IRMutator {
 public:
  BodyRewriter(const SparseIterationNode* it, std::map<const BufferNode*, Buffer> buffers,
               std::vector<const VarNode*> original_vars, std::vector<Expr> format_vars, VarMap coordinates)
      : it_(it), buffers_(std::move(buffers)), original_vars_(std::move(original_vars)),
        format_vars_(std::move(format_vars)), coordinates_(std::move(coordinates)) {}

 protected:
  Expr Mutate(const VarNode* node, const Expr& self) override {
    auto found = coordinates_.find(node);
    return found == coordinates_.end() ? self : found->second;
  }
  Expr Mutate(const BufferLoadNode* node, const Expr& self) override {
    auto found = buffers_.find(node->buffer.get());
    if (found == buffers_.end()) return IRMutator::Mutate(node, self);
    CheckOwnCoordinates(node->buffer, node->indices);
    return MakeLoad(found->second, format_vars_);
  }
  Stmt Mutate(const BufferStoreNode* node, const Stmt& self) override {
    auto found = buffers_.find(node->buffer.get());
    if (found == buffers_.end()) return IRMutator::Mutate(node, self);
    CheckOwnCoordinates(node->buffer, node->indices);
    return MakeStore(found->second, format_vars_, VisitExpr(node->value));
  }

 private:
  void CheckOwnCoordinates(const Buffer& b, const std::vector<Expr>& indices) const {
    bool own = indices.size() == original_vars_.size();
    for (size_t t = 0; own && t < indices.size(); ++t) {
      const auto* v = indices[t]->as<VarNode>();
      own = v == original_vars_[t];
    }
    if (!own) {
      DecomposeError("iteration '" + it_->name + "' indexes '" + b->name +
                         "' with something other than its iterators' own variables; only such accesses can move "
                         "to another format",
                     it_->span);
    }
  }

  const SparseIterationNode* it_;
  std::map<const BufferNode*, Buffer> buffers_;
  std::vector<const VarNode*> original_vars_;
  std::vector<Expr> format_vars_;
  VarMap coordinates_;
};

// The copy of iteration `node` over the formats of one rule; `rewrites` are
// that rule's targets the iteration touches (they share one iterator_map).
// When the iteration writes a rewritten buffer, each copy has an output of its
// own and keeps the T.init() (rewritten like the body); otherwise the copies
// share the output and accumulate into it.
Stmt ComputeCopy(const SparseIterationNode* node, const std::vector<Rewrite>& rewrites, bool own_output,
                 Names names) {
  const Rewrite& first = rewrites.front();
  const Buffer& original = first.original;
  const FormatTarget& target = *first.target;
  // Where each axis of the rewritten buffer is iterated.
  std::vector<size_t> place;
  std::vector<const VarNode*> original_vars;
  for (const SparseIterator& axis : original->axes) {
    auto at = std::find(node->iterators.begin(), node->iterators.end(), axis);
    if (at == node->iterators.end()) {
      DecomposeError("iteration '" + node->name + "' reads '" + original->name + "' but does not iterate its axis '" +
                         axis->name + "'", node->span);
    }
    place.push_back(at - node->iterators.begin());
    original_vars.push_back(node->vars[place.back()].get());
  }
  std::map<std::string, const std::vector<SparseIterator>*> mapped;
  for (const auto& [name, to] : target.iterator_map) mapped[name] = &to;
  for (const SparseIterator& axis : original->axes) {
    if (!mapped.count(axis->name) || mapped.size() != original->axes.size()) {
      DecomposeError("rule '" + first.rule->name + "': its iterator_map must name exactly the iterators of '" +
                         original->name + "' (" + axis->name + " ...)", node->span);
    }
  }
  for (const Rewrite& r : rewrites) {
    if (r.original->axes != original->axes || r.target->iterator_map != target.iterator_map) {
      DecomposeError("iteration '" + node->name + "' reads '" + original->name + "' and '" + r.original->name +
                         "', which rule '" + first.rule->name + "' maps differently", node->span);
    }
  }
  SparseIterationNode it;
  it.name = node->name + "_" + first.rule->name;
  std::map<const SparseIteratorNode*, Var> new_var;
  std::set<const SparseIteratorNode*> replaced;
  for (const SparseIterator& axis : original->axes) replaced.insert(axis.get());
  for (size_t p = 0; p < node->iterators.size(); ++p) {
    const SparseIterator& x = node->iterators[p];
    if (!replaced.count(x.get())) {
      for (SparseIterator a = x->parent; a; a = a->parent) {
        if (replaced.count(a.get())) {
          DecomposeError("iteration '" + node->name + "': iterator '" + x->name + "' lies under '" + a->name +
                             "', which rule '" + first.rule->name + "' replaces", node->span);
        }
      }
      it.iterators.push_back(x);
      it.vars.push_back(node->vars[p]);
      it.roles += node->roles[p];
      continue;
    }
    for (const SparseIterator& y : *mapped.at(x->name)) {
      Var v = names.FreshVar(y->name, y->idtype);
      new_var[y.get()] = v;
      it.iterators.push_back(y);
      it.vars.push_back(v);
      it.roles += node->roles[p];
    }
  }
  std::vector<Var> format_vars;
  for (const SparseIterator& axis : target.format_buffer->axes) format_vars.push_back(new_var.at(axis.get()));
  std::vector<Expr> at(format_vars.begin(), format_vars.end());
  std::vector<Expr> coordinates = target.inv_idx_map.Apply(at);
  VarMap substitute;
  bool scattered = false;  // a spatial coordinate that several positions may share
  for (size_t t = 0; t < original->axes.size(); ++t) {
    substitute[original_vars[t]] = coordinates[t];
    scattered = scattered || (node->roles[place[t]] == 'S' && MayRepeat(coordinates[t], target.format_buffer, format_vars));
  }
  std::map<const BufferNode*, Buffer> buffers;
  for (const Rewrite& r : rewrites) buffers[r.original.get()] = r.target->format_buffer;
  BodyRewriter rewriter(node, buffers, original_vars, at, substitute);
  Stmt body = rewriter.VisitStmt(node->body);
  Expr guard = InRange(coordinates, original, format_vars);
  if (guard) body = MakeIf(Simplify(guard), body);
  it.body = body;
  it.attrs = node->attrs;
  if (own_output && node->init) {
    it.init = rewriter.VisitStmt(node->init);
    if (guard) it.init = MakeIf(Simplify(guard), it.init);
  } else if (!own_output) {
    it.attrs = WithAttr(it.attrs, "accumulate", MakeBoolAttr(true));
  }
  if (scattered && !own_output) it.attrs = WithAttr(it.attrs, "atomic", MakeBoolAttr(true));
  it.span = node->span;
  return MakeIteration(std::move(it));
}

std::vector<Stmt> TopLevel(const Stmt& body) {
  if (!body) return {};
  if (const auto* seq = body->as<SeqNode>()) return seq->stmts;
  return {body};
}

bool HasFlag(const SparseIterationNode* it, const std::string& key) {
  AttrPtr a = FindAttr(it->attrs, key);
  return a && a->kind == AttrValue::Kind::kBool && a->bool_value;
}

}  // namespace

PrimFunc FormatDecompose(const PrimFunc& f, const std::vector<std::pair<std::string, PrimFunc>>& rules,
                         bool disjoint) {
  if (f->stage != Stage::kI) DecomposeError("expects a stage I function, got " + std::string(ToString(f->stage)));
  if (rules.empty()) DecomposeError("needs at least one format rewrite rule");
  std::vector<FormatRule> instantiated;
  for (const auto& [name, format] : rules) instantiated.push_back(InstantiateFormatRule(name, format, f));

  PrimFuncNode out = *f;
  auto add_unique = [&](const std::string& name, const std::string& what) {
    for (const Var& p : out.params) if (p->name == name) DecomposeError(what + " '" + name + "' is already a parameter");
    for (const SparseIterator& it : out.iterators) if (it->name == name) DecomposeError(what + " '" + name + "' is already an iterator");
    for (const Buffer& b : out.buffers) if (b->name == name) DecomposeError(what + " '" + name + "' is already a buffer");
  };
  std::vector<Rewrite> all;
  for (const FormatRule& rule : instantiated) {
    const std::string adds = "rule '" + rule.name + "' adds ";
    for (const Var& p : rule.params) {
      add_unique(p->name, adds + "parameter");
      out.params.push_back(p);
    }
    for (const SparseIterator& it : rule.iterators) {
      add_unique(it->name, adds + "iterator");
      out.iterators.push_back(it);
    }
    for (const Buffer& b : rule.buffers) {
      add_unique(b->name, adds + "buffer");
      out.buffers.push_back(b);
    }
    for (const FormatTarget& t : rule.targets) {
      auto found = std::find_if(f->buffers.begin(), f->buffers.end(), [&](const Buffer& b) { return b->name == t.buffer; });
      if (found == f->buffers.end()) {
        DecomposeError("rule '" + rule.name + "' rewrites buffer '" + t.buffer + "', which '" + f->name + "' does not declare");
      }
      all.push_back(Rewrite{&rule, &t, *found});
    }
  }
  Names names(out);

  const Accesses everywhere = AccessesOf(f->body);
  std::vector<Stmt> preprocess, compute;
  for (const Rewrite& r : all) {
    // An output in another format is gathered back by the runtime; only inputs are copied in.
    if (!everywhere.stored.count(r.original.get())) preprocess.push_back(Preprocess(r, names));
  }
  for (const Stmt& s : TopLevel(f->body)) {
    const auto* it = s->as<SparseIterationNode>();
    Accesses touched = AccessesOf(s);
    std::vector<std::vector<Rewrite>> per_rule;
    for (const FormatRule& rule : instantiated) {
      std::vector<Rewrite> mine;
      for (const Rewrite& r : all) {
        if (r.rule == &rule && touched.Touches(r.original.get())) mine.push_back(r);
      }
      if (!mine.empty()) per_rule.push_back(std::move(mine));
    }
    if (per_rule.empty()) {
      compute.push_back(s);
      continue;
    }
    if (!it) DecomposeError("a rewritten buffer is accessed outside a sparse iteration");
    bool own_output = disjoint;
    for (const auto& rewrites : per_rule) {
      for (const Rewrite& r : rewrites) own_output = own_output || touched.stored.count(r.original.get());
    }
    if (it->init && !own_output) compute.push_back(InitIteration(it));
    for (const auto& rewrites : per_rule) compute.push_back(ComputeCopy(it, rewrites, own_output, names));
  }
  preprocess.insert(preprocess.end(), compute.begin(), compute.end());
  out.body = MakeSeq(std::move(preprocess));
  out.attrs = WithAttr(out.attrs, "composable", MakeIntAttr(1));
  PrimFunc result = MakePrimFunc(std::move(out));
  VerifyWellFormed(result);
  VerifyStageI(result);
  return result;
}

namespace {

// Keeps the top-level iterations `keep` accepts, then drops what they do not use.
PrimFunc Part(const PrimFunc& f, const std::function<bool(const SparseIterationNode*)>& keep) {
  std::vector<Stmt> kept;
  for (const Stmt& s : TopLevel(f->body)) {
    const auto* it = s->as<SparseIterationNode>();
    if (!it || keep(it)) kept.push_back(s);
  }
  PrimFuncNode out = *f;
  out.body = kept.empty() ? nullptr : MakeSeq(kept);
  // What the kept statements use: buffers, their iterators and every ancestor,
  // and the variables those mention.
  Accesses used = AccessesOf(out.body);
  std::set<const SparseIteratorNode*> iterators;
  auto use_iterator = [&](SparseIterator x) {
    for (; x; x = x->parent) iterators.insert(x.get());
  };
  std::vector<Buffer> buffers;
  for (const Buffer& b : f->buffers) {
    if (!used.Touches(b.get())) continue;
    buffers.push_back(b);
    for (const SparseIterator& axis : b->axes) use_iterator(axis);
  }
  struct Iterations : IRVisitor {
    std::vector<SparseIterator> seen;
    void Visit(const SparseIterationNode* node) override {
      seen.insert(seen.end(), node->iterators.begin(), node->iterators.end());
      IRVisitor::Visit(node);
    }
  } iterations;
  if (out.body) iterations.VisitStmt(out.body);
  for (const SparseIterator& x : iterations.seen) use_iterator(x);
  out.iterators.clear();
  for (const SparseIterator& it : f->iterators) {
    if (iterators.count(it.get())) out.iterators.push_back(it);
  }
  out.buffers = buffers;
  std::set<const VarNode*> vars;
  auto mention = [&](const Expr& e) {
    if (!e) return;
    for (const Var& p : f->params) {
      if (Uses(e, p.get())) vars.insert(p.get());
    }
  };
  for (const SparseIterator& it : out.iterators) {
    mention(it->extent), mention(it->nnz), mention(it->length), mention(it->indptr), mention(it->indices);
  }
  for (const Buffer& b : out.buffers) mention(b->data);
  out.params.clear();
  for (const Var& p : f->params) {
    if (vars.count(p.get()) || (out.body && Uses(out.body, p.get()))) out.params.push_back(p);
  }
  return MakePrimFunc(std::move(out));
}

}  // namespace

PrimFunc PreprocessPart(const PrimFunc& decomposed) {
  return Part(decomposed, [](const SparseIterationNode* it) { return HasFlag(it, "preprocess"); });
}

PrimFunc ComputePart(const PrimFunc& decomposed, bool with_init) {
  return Part(decomposed, [&](const SparseIterationNode* it) {
    return !HasFlag(it, "preprocess") && (with_init || !HasFlag(it, "init"));
  });
}

}  // namespace sparsetir
