#include "transforms/lower_sparse_iter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/functor.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "transforms/structure_buffers.h"

namespace sparsetir {
namespace {

// Hands out names not yet used in the function: loop variables must be unique
// so that schedules can name loops.
class NameSupply {
 public:
  explicit NameSupply(const PrimFuncNode& f) {
    for (const Var& p : f.params) used_.insert(p->name);
    for (const SparseIterator& it : f.iterators) used_.insert(it->name);
    for (const Buffer& b : f.buffers) used_.insert(b->name);
  }
  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

// Lowers one sparse iteration.
class IterationLowerer : public IRMutator {
 public:
  IterationLowerer(const SparseIterationNode* it, StructureBuffers* structure, NameSupply* names)
      : it_(it), structure_(structure), names_(names) {
    for (size_t t = 0; t < it->vars.size(); ++t) {
      positions_.push_back(MakeVar(names->Fresh(it->vars[t]->name), it->vars[t]->dtype));
      index_of_[it->iterators[t].get()] = t;
      var_index_[it->vars[t].get()] = t;
    }
  }

  Stmt Lower() {
    const size_t n = it_->iterators.size();
    // The init runs right before the loop of the first reduction iterator (or
    // right before the body when nothing reduces).
    size_t level = std::min(it_->roles.find('R'), n);
    Stmt body = MakeBlock(it_->name, VisitStmt(it_->body));
    Stmt init = it_->init ? InitLoops(MakeBlock(it_->name + "_init", VisitStmt(it_->init)), level) : nullptr;
    if (init && level == n) body = MakeSeq({init, body});
    auto fused = FusedChain();
    if (fused && init && level <= fused->second) {
      ThrowScriptError("iteration '" + it_->name + "': a reduction before the fused iterators leaves T.init() no place",
                       it_->span);
    }
    for (size_t t = n; t-- > 0;) {
      if (fused && t == fused->second) {
        body = FusedLoop(fused->first, fused->second, body);
        t = fused->first;  // the ancestors' loops are part of the fused one
      } else {
        body = Loop(t, body);
      }
      if (init && t == level) body = MakeSeq({init, body});
    }
    return body;
  }

  // The first and last iterator indices of the chain named by the
  // "sparse_fuse" attribute: a dense_fixed root followed by varied
  // descendants, each the child of the one before (I, J or I, J, K of a CSF).
  std::optional<std::pair<size_t, size_t>> FusedChain() {
    AttrPtr attr = FindAttr(it_->attrs, "sparse_fuse");
    if (!attr) return std::nullopt;
    std::vector<size_t> at;
    for (const AttrPtr& item : attr->items) {
      for (size_t t = 0; t < it_->iterators.size(); ++t) {
        if (item->kind == AttrValue::Kind::kString && it_->iterators[t]->name == item->string_value) at.push_back(t);
      }
    }
    bool ok = at.size() >= 2 && at.size() == attr->items.size() &&
              it_->iterators[at[0]]->kind == IteratorKind::kDenseFixed;
    for (size_t k = 1; ok && k < at.size(); ++k) {
      const SparseIterator& x = it_->iterators[at[k]];
      ok = at[k] == at[k - 1] + 1 && x->parent == it_->iterators[at[k - 1]] && IsVaried(x->kind) && x->nnz;
    }
    if (!ok) {
      ThrowScriptError("iteration '" + it_->name +
                           "': \"sparse_fuse\" must name a dense_fixed iterator and a chain of varied descendants, "
                           "each the child of the one before, in order",
                       it_->span);
    }
    return std::make_pair(at.front(), at.back());
  }

  // One loop over the last iterator's non-zeros. Going up the chain, each
  // ancestor's flat position is found by binary search in the indptr below
  // it; going down, each position within its row is the flat position minus
  // the row's start.
  Stmt FusedLoop(size_t first, size_t last, Stmt body) {
    std::string name;
    for (size_t t = first; t <= last; ++t) name += positions_[t]->name;
    const SparseIterator& leaf = it_->iterators[last];
    Var fused = MakeVar(names_->Fresh(name), positions_[last]->dtype);
    Expr one = IntLike(1, fused);
    // flat[t]: the flat position of iterator t (flat[last] is the loop variable).
    std::vector<Var> flat(last + 1);
    flat[last] = fused;
    for (size_t t = last; t > first; --t) {
      flat[t - 1] = MakeVar(names_->Fresh(positions_[t - 1]->name + "_flat"), fused->dtype);
    }
    // Positions within rows, innermost let first (lets wrap outward).
    for (size_t t = last; t > first; --t) {
      Expr offset = MakeLoad(structure_->Indptr(it_->iterators[t]), ChainPositions(it_->iterators[t]->parent));
      Expr within = flat[t];
      UnifyIntegers(&within, &offset);
      body = MakeLet(positions_[t], MakeCast(positions_[t]->dtype, Sub(within, offset)), body);
    }
    body = MakeLet(positions_[first], MakeCast(positions_[first]->dtype, flat[first]), body);
    for (size_t t = first + 1; t <= last; ++t) {
      const SparseIterator& x = it_->iterators[t];
      Expr count = t - 1 == first ? it_->iterators[first]->extent : it_->iterators[t - 1]->nnz;
      if (count->dtype != fused->dtype) count = MakeCast(fused->dtype, count);
      Expr parent = Sub(MakeCall(Intrinsic::kLowerBound, {x->indptr, IntLike(0, fused), Add(count, one), Add(flat[t], one)},
                                 fused->dtype),
                        one);
      body = MakeLet(flat[t - 1], parent, body);
    }
    Expr nnz = leaf->nnz;
    if (nnz->dtype != fused->dtype) nnz = MakeCast(fused->dtype, nnz);
    return MakeFor(fused, IntLike(0, nnz), nnz, ForKind::kSerial, body);
  }

 protected:
  Expr Mutate(const VarNode* node, const Expr& self) override {
    auto found = var_index_.find(node);
    if (found == var_index_.end()) return self;
    return Coordinate(found->second);
  }

  // A load whose coordinates had to be searched for reads 0 where the
  // coordinate is absent (a structural zero of that buffer).
  Expr Mutate(const BufferLoadNode* node, const Expr& self) override {
    Expr found;
    Expr load = MakeLoad(node->buffer, Positions(node->buffer, node->indices, &found));
    if (!found) return load;
    Expr zero = IsFloat(node->buffer->dtype) ? MakeFloat(0.0, node->buffer->dtype) : MakeInt(0, node->buffer->dtype);
    return MakeSelect(found, load, zero);
  }

  Stmt Mutate(const AtomicAddNode* node, const Stmt& self) override {
    const auto* target = node->target->as<BufferLoadNode>();
    Expr found;
    std::vector<Expr> positions = Positions(target->buffer, target->indices, &found);
    if (found) {
      ThrowScriptError("buffer '" + target->buffer->name +
                           "': an atomic_add must walk the buffer's own compressed iterators; a coordinate located by "
                           "search may be absent",
                       it_->span);
    }
    return MakeAtomicAdd(MakeLoad(target->buffer, positions), VisitExpr(node->value));
  }

  Stmt Mutate(const BufferStoreNode* node, const Stmt& self) override {
    Expr found;
    std::vector<Expr> positions = Positions(node->buffer, node->indices, &found);
    if (found) {
      ThrowScriptError("buffer '" + node->buffer->name +
                           "': a store must walk the buffer's own compressed iterators; a coordinate located by "
                           "search may be absent, and a sparse structure cannot grow",
                       it_->span);
    }
    return MakeStore(node->buffer, positions, VisitExpr(node->value));
  }

 private:
  // Positions of the ancestors of iterator t, root first, ending with t itself.
  std::vector<Expr> ChainPositions(const SparseIterator& x) {
    std::vector<Expr> out;
    for (const SparseIterator& a : AncestorChain(x)) out.push_back(positions_[IndexOf(a)]);
    return out;
  }

  size_t IndexOf(const SparseIterator& x) {
    auto found = index_of_.find(x.get());
    ICHECK(found != index_of_.end()) << "iterator " << x->name << " is not in iteration " << it_->name;
    return found->second;
  }

  // The coordinate that iteration variable t stands for.
  Expr Coordinate(size_t t) {
    const SparseIterator& x = it_->iterators[t];
    if (!IsCompressed(x->kind)) return positions_[t];
    return MakeLoad(structure_->Indices(x), ChainPositions(x));
  }

  // Stage-II positions of a buffer access. A compressed dimension indexed
  // with anything but the variable of its own iterator is located by binary
  // search in that row's indices (rows must be sorted, as in canonical CSR);
  // *found then receives the condition that every searched coordinate exists.
  std::vector<Expr> Positions(const Buffer& buffer, const std::vector<Expr>& indices, Expr* found) {
    std::vector<Expr> out;
    for (size_t k = 0; k < indices.size(); ++k) {
      const SparseIterator& axis = buffer->axes[k];
      if (const auto* v = indices[k]->as<VarNode>()) {
        auto found = var_index_.find(v);
        if (found != var_index_.end() && it_->iterators[found->second] == axis) {
          out.push_back(positions_[found->second]);
          continue;
        }
      }
      Expr coordinate = VisitExpr(indices[k]);
      if (IsCompressed(axis->kind)) {
        const Span& span = indices[k]->span.defined() ? indices[k]->span : it_->span;
        Expr hit;
        out.push_back(Search(buffer, out, k, coordinate, span, &hit));
        *found = *found ? MakeBinary(BinaryOp::kAnd, *found, hit) : hit;
        continue;
      }
      out.push_back(coordinate);
    }
    return out;
  }

  // The position of `coordinate` within its row of compressed_varied dimension
  // k of `buffer` (the dimensions before it give the row); *hit is whether
  // the coordinate is stored there.
  Expr Search(const Buffer& buffer, const std::vector<Expr>& before, size_t k, Expr coordinate, const Span& span,
              Expr* hit) {
    const SparseIterator& axis = buffer->axes[k];
    if (axis->kind != IteratorKind::kCompressedVaried) {
      ThrowScriptError("buffer '" + buffer->name + "': locating a coordinate in the " + ToString(axis->kind) +
                           " iterator '" + axis->name + "' is not supported; index it with its own variable",
                       span);
    }
    std::vector<Expr> row;  // positions of the axis's ancestors
    for (const SparseIterator& a : AncestorChain(axis->parent)) {
      auto dim = std::find(buffer->axes.begin(), buffer->axes.begin() + k, a);
      if (dim == buffer->axes.begin() + k) {
        ThrowScriptError("buffer '" + buffer->name + "': searching compressed iterator '" + axis->name +
                             "' needs its ancestor '" + a->name + "' among the buffer's earlier dimensions",
                         span);
      }
      row.push_back(before[dim - buffer->axes.begin()]);
    }
    Buffer indptr = structure_->Indptr(axis);
    Buffer stored = structure_->Indices(axis);
    std::vector<Expr> next = row;
    next.back() = Add(next.back(), IntLike(1, next.back()));
    Expr begin = MakeLoad(indptr, row), end = MakeLoad(indptr, next);
    if (coordinate->dtype != axis->idtype) coordinate = MakeCast(axis->idtype, coordinate);
    Expr flat = MakeCall(Intrinsic::kLowerBound, {axis->indices, begin, end, coordinate}, axis->idtype);
    Expr position = Sub(flat, begin);
    std::vector<Expr> at = row;
    at.push_back(position);
    *hit = MakeBinary(BinaryOp::kAnd, MakeBinary(BinaryOp::kLT, flat, end),
                      MakeBinary(BinaryOp::kEQ, MakeLoad(stored, at), coordinate));
    return position;
  }

  Expr Extent(size_t t) {
    const SparseIterator& x = it_->iterators[t];
    switch (x->kind) {
      case IteratorKind::kDenseFixed: return x->extent;
      case IteratorKind::kCompressedFixed: return x->length;
      case IteratorKind::kDenseVaried:
      case IteratorKind::kCompressedVaried: {
        Buffer indptr = structure_->Indptr(x);
        std::vector<Expr> begin = ChainPositions(x->parent);
        std::vector<Expr> end = begin;
        end.back() = Add(end.back(), IntLike(1, end.back()));
        return Sub(MakeLoad(indptr, end), MakeLoad(indptr, begin));
      }
      case IteratorKind::kFused: break;
    }
    ThrowScriptError("iteration '" + it_->name + "': fused iterator '" + x->name + "' is not supported yet", it_->span);
  }

  Stmt Loop(size_t t, Stmt body, Var var = nullptr) {
    Expr extent = Extent(t);
    Expr zero = IntLike(0, extent);
    if (!var) var = positions_[t];
    if (var->dtype != extent->dtype) {
      extent = MakeCast(var->dtype, extent);
      zero = IntLike(0, extent);
    }
    return MakeFor(var, zero, extent, ForKind::kSerial, body);
  }

  // The init runs once per spatial point before the reduction: loops over the
  // spatial iterators after `level` surround it.
  Stmt InitLoops(Stmt init, size_t level) {
    for (size_t t = it_->iterators.size(); t-- > level + 1;) {
      if (it_->roles[t] != 'S') continue;
      for (SparseIterator a = it_->iterators[t]->parent; a; a = a->parent) {
        if (it_->roles[IndexOf(a)] == 'R') {
          ThrowScriptError("iteration '" + it_->name + "': spatial iterator '" + it_->iterators[t]->name +
                               "' lies under reduction iterator '" + a->name + "', so T.init() has no place to run",
                           it_->span);
        }
      }
      // The init's loops bind variables of their own ("k_init").
      Var fresh = MakeVar(names_->Fresh(positions_[t]->name + "_init"), positions_[t]->dtype);
      init = Loop(t, Substitute(init, {{positions_[t].get(), fresh}}), fresh);
    }
    return init;
  }

  const SparseIterationNode* it_;
  StructureBuffers* structure_;
  NameSupply* names_;
  std::vector<Var> positions_;
  std::map<const SparseIteratorNode*, size_t> index_of_;
  std::map<const VarNode*, size_t> var_index_;
};

class IterationRewriter : public IRMutator {
 public:
  IterationRewriter(StructureBuffers* structure, NameSupply* names) : structure_(structure), names_(names) {}

 protected:
  Stmt Mutate(const SparseIterationNode* node, const Stmt&) override {
    return IterationLowerer(node, structure_, names_).Lower();
  }

 private:
  StructureBuffers* structure_;
  NameSupply* names_;
};

}  // namespace

PrimFunc LowerSparseIter(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kI) << "lower_sparse_iter expects a stage I function, got " << ToString(f->stage);
  PrimFuncNode out = *f;
  out.stage = Stage::kII;
  StructureBuffers structure(&out);
  // Every indptr / indices array gets its buffer, used or not, so the runtime
  // can check each one against the facts the kernel relies on.
  for (const SparseIterator& it : f->iterators) {
    if (IsVaried(it->kind)) structure.Indptr(it);
    if (IsCompressed(it->kind)) structure.Indices(it);
  }
  NameSupply names(out);
  Stmt body = f->body ? IterationRewriter(&structure, &names).VisitStmt(f->body) : nullptr;
  std::vector<Stmt> facts;
  for (const SparseIterator& it : f->iterators) {
    if (IsVaried(it->kind) && it->nnz) {
      facts.push_back(MakeAssume(structure.Indptr(it), IntLike(0, it->nnz), it->nnz));
    }
    if (IsCompressed(it->kind)) {
      facts.push_back(MakeAssume(structure.Indices(it), IntLike(0, it->extent), Sub(it->extent, IntLike(1, it->extent))));
    }
  }
  if (body) {
    facts.push_back(body);
    body = MakeSeq(std::move(facts));
  }
  out.body = body;
  return MakePrimFunc(std::move(out));
}

}  // namespace sparsetir
