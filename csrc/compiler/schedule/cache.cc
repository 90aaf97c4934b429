#include "schedule/cache.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

struct Access {
  std::vector<Expr> indices;
  bool is_store;
  bool is_atomic = false;  // a T.atomic_add into the buffer
};

// The variables bound inside a cached body (loops, lets), the constant
// extents of its loops from 0, and the conditions inside it.
class InnerLoops : public IRVisitor {
 public:
  std::vector<const VarNode*> vars;  // every loop and let variable
  std::map<const VarNode*, int64_t> extents;
  std::vector<const VarNode*> lets;
  std::vector<Expr> conditions;

 protected:
  void Visit(const ForNode* n) override {
    vars.push_back(n->var.get());
    const int64_t *min = AsConstInt(n->min), *extent = AsConstInt(n->extent);
    if (min && *min == 0 && extent) extents[n->var.get()] = *extent;
    IRVisitor::Visit(n);
  }
  void Visit(const LetNode* n) override {
    vars.push_back(n->var.get());
    lets.push_back(n->var.get());
    IRVisitor::Visit(n);
  }
  void Visit(const IfThenElseNode* n) override {
    conditions.push_back(n->cond);
    IRVisitor::Visit(n);
  }
};

// A varying dimension the cache holds a window of: every access indexes it
// with `offset + t`, `offset` the same loop-invariant expression in each, `t`
// a sum of inner loop variables times positive constants, t in [0, extent).
// (A thread's features k0 * 32 * V + lane * V + v: the V elements it owns,
// not the whole row.)
struct Tile {
  Expr offset;
  int64_t extent = 0;
};

// The addends of `e` with products by a constant distributed over sums and
// nested constant factors folded: a split loop's index (k_0 * 8 + k_1) * 8 +
// k_2 gives k_0 * 64, k_1 * 8 and k_2, so that a cache inside k_0's loop
// sees k_0 * 64 as its offset (a feature tile of a row, not the whole row).
void DistributedAddends(const Expr& e, std::vector<Expr>* out) {
  const auto* bin = e->as<BinaryNode>();
  if (bin && bin->op == BinaryOp::kAdd) {
    DistributedAddends(bin->a, out);
    DistributedAddends(bin->b, out);
    return;
  }
  const int64_t* c = bin && bin->op == BinaryOp::kMul ? AsConstInt(bin->b) : nullptr;
  if (!c) {
    out->push_back(e);
    return;
  }
  std::vector<Expr> inner;
  DistributedAddends(bin->a, &inner);
  for (const Expr& a : inner) {
    const auto* mul = a->as<BinaryNode>();
    const int64_t* c2 = mul && mul->op == BinaryOp::kMul ? AsConstInt(mul->b) : nullptr;
    out->push_back(c2 ? Mul(mul->a, IntLike(*c2 * *c, mul->b)) : Mul(a, IntLike(*c, bin->b)));
  }
}

// The window of `index` (offset, the part that varies), or nullopt.
std::optional<std::pair<Expr, Expr>> SplitWindow(const Expr& index, const std::function<bool(const Expr&)>& varies) {
  std::vector<Expr> addends;
  DistributedAddends(index, &addends);
  Expr offset, part;
  for (const Expr& a : addends) {
    Expr& into = varies(a) ? part : offset;
    into = into ? Add(into, a) : a;
  }
  if (!offset || !part) return std::nullopt;
  return std::make_pair(offset, part);
}

// True if a condition inside the body may stop `var`'s loop early: it reads
// the variable, or a value bound inside the body (which may stand for it).
bool Guarded(const VarNode* var, const InnerLoops& loops) {
  for (const Expr& cond : loops.conditions) {
    if (Uses(cond, var)) return true;
    for (const VarNode* let : loops.lets) {
      if (Uses(cond, let)) return true;
    }
  }
  return false;
}

// The extent of t = sum of c * v (v an inner loop from 0, c > 0 constant), or
// 0 when t has another form or one of its loops is guarded: the window would
// reach elements the body never touches, perhaps past the buffer or another
// thread's.
int64_t WindowExtent(const Expr& part, const InnerLoops& loops) {
  std::vector<Expr> addends;
  Addends(part, &addends);
  int64_t last = 0;
  for (const Expr& a : addends) {
    const VarNode* var = a->as<VarNode>();
    int64_t scale = 1;
    if (const auto* mul = a->as<BinaryNode>(); mul && mul->op == BinaryOp::kMul) {
      const int64_t* c = AsConstInt(mul->b);
      var = mul->a->as<VarNode>();
      if (!c) {
        c = AsConstInt(mul->a);
        var = mul->b->as<VarNode>();
      }
      if (!c || *c <= 0) return 0;
      scale = *c;
    }
    if (!var) return 0;
    auto found = loops.extents.find(var);
    if (found == loops.extents.end() || Guarded(var, loops)) return 0;
    last += scale * (found->second - 1);
  }
  return last + 1;
}

// The widest vectorized loop of constant extent: the vectors the schedule
// already chose for the body a cache serves.
class WidestVector : public IRVisitor {
 public:
  int64_t lanes = 0;

 protected:
  void Visit(const ForNode* n) override {
    if (n->for_kind == ForKind::kVectorized) {
      if (const int64_t* extent = AsConstInt(n->extent)) lanes = std::max(lanes, *extent);
    }
    IRVisitor::Visit(n);
  }
};

class AccessCollector : public IRVisitor {
 public:
  explicit AccessCollector(const BufferNode* buffer) : buffer_(buffer) {}
  std::vector<Access> accesses;

 protected:
  void Visit(const BufferLoadNode* n) override {
    if (n->buffer.get() == buffer_) accesses.push_back({n->indices, false});
    IRVisitor::Visit(n);
  }
  void Visit(const BufferStoreNode* n) override {
    if (n->buffer.get() == buffer_) accesses.push_back({n->indices, true});
    IRVisitor::Visit(n);
  }
  void Visit(const AtomicAddNode* n) override {
    const auto* target = n->target->as<BufferLoadNode>();
    if (target->buffer.get() == buffer_) accesses.push_back({target->indices, true, true});
    for (const Expr& index : target->indices) VisitExpr(index);
    VisitExpr(n->value);
  }

 private:
  const BufferNode* buffer_;
};

// Redirects accesses to the cache, keeping only the varying dimensions.
class Redirector : public IRMutator {
 public:
  Redirector(const BufferNode* from, Buffer to, std::vector<bool> varying, std::vector<Tile> tiles,
             std::function<bool(const Expr&)> varies, bool stores)
      : from_(from),
        to_(std::move(to)),
        varying_(std::move(varying)),
        tiles_(std::move(tiles)),
        varies_(std::move(varies)),
        stores_(stores) {}

 protected:
  Expr Mutate(const BufferLoadNode* n, const Expr& self) override {
    bool changed = false;
    std::vector<Expr> indices = VisitExprs(n->indices, &changed);
    if (n->buffer.get() != from_) return changed ? MakeLoad(n->buffer, indices) : self;
    return MakeLoad(to_, Keep(indices));
  }
  Stmt Mutate(const BufferStoreNode* n, const Stmt& self) override {
    bool changed = false;
    std::vector<Expr> indices = VisitExprs(n->indices, &changed);
    Expr value = VisitExpr(n->value);
    if (n->buffer.get() != from_ || !stores_) return MakeStore(n->buffer, indices, value);
    return MakeStore(to_, Keep(indices), value);
  }
  // An atomic update of the buffer becomes a private accumulation in the cache.
  Stmt Mutate(const AtomicAddNode* n, const Stmt& self) override {
    const auto* target = n->target->as<BufferLoadNode>();
    bool changed = false;
    std::vector<Expr> indices = VisitExprs(target->indices, &changed);
    Expr value = VisitExpr(n->value);
    if (target->buffer.get() != from_ || !stores_) return MakeAtomicAdd(MakeLoad(target->buffer, indices), value);
    Expr element = MakeLoad(to_, Keep(indices));
    return MakeStore(to_, Keep(indices), Add(element, value));
  }

 private:
  std::vector<Expr> Keep(const std::vector<Expr>& indices) const {
    std::vector<Expr> out;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (!varying_[d]) continue;
      if (!tiles_[d].offset) {
        out.push_back(indices[d]);
        continue;
      }
      // The part that varies: Windows found every access in the tile's form.
      auto window = SplitWindow(indices[d], varies_);
      ICHECK(window) << "an access outside the window of dimension " << d;
      out.push_back(window->second);
    }
    if (out.empty()) out.push_back(MakeInt(0));  // a one-element cache
    return out;
  }
  const BufferNode* from_;
  Buffer to_;
  std::vector<bool> varying_;
  std::vector<Tile> tiles_;  // per dimension; an offset where the cache holds a window
  std::function<bool(const Expr&)> varies_;
  bool stores_;
};

// The buffer dimension of the cache's dimension t (the t-th varying one).
size_t DimensionOf(const std::vector<bool>& varying, size_t t) {
  for (size_t d = 0; d < varying.size(); ++d) {
    if (varying[d] && t-- == 0) return d;
  }
  return varying.size();
}

// How a copy nest moves data between the cache and the buffer.
enum class Copy {
  kIn,        // cache = buffer
  kOut,       // buffer = cache
  kZero,      // cache = 0 (a private accumulation of atomic updates starts empty)
  kAtomicOut  // atomic_add(buffer, cache): the private sums published at once
};

// The most elements of a local cache whose copies are unrolled whole.
constexpr int64_t kUnrolledCopyElements = 64;

// The elements of a buffer of constant shape (a cache's).
int64_t ElementsOf(const Buffer& cache) {
  int64_t elements = 1;
  for (const Expr& extent : cache->shape) elements *= *AsConstInt(extent);
  return elements;
}

// A copy loop nest between the cache and the buffer; the innermost dimension is
// vectorized in vectors of `lanes` (and the loop around its vectors unrolled)
// when it divides evenly.
Stmt CopyNest(const PrimFunc& f, const Buffer& buffer, const Buffer& cache, const std::vector<Expr>& fixed,
              const std::vector<bool>& varying, const std::vector<Tile>& tiles, Copy copy, int64_t lanes) {
  std::vector<Var> vars;
  std::vector<Expr> cache_index, buffer_index;
  size_t f_index = 0;
  for (size_t d = 0; d < varying.size(); ++d) {
    if (!varying[d]) {
      buffer_index.push_back(fixed[f_index++]);
      continue;
    }
    Var v = MakeVar(FreshName(f, "ax" + std::to_string(vars.size())), DataType::kInt32);
    vars.push_back(v);
    cache_index.push_back(v);
    buffer_index.push_back(tiles[d].offset ? Add(tiles[d].offset, v) : Expr(v));
  }
  if (cache_index.empty()) cache_index.push_back(MakeInt(0));  // a one-element cache
  Stmt body;
  switch (copy) {
    case Copy::kIn: body = MakeStore(cache, cache_index, MakeLoad(buffer, buffer_index)); break;
    case Copy::kOut: body = MakeStore(buffer, buffer_index, MakeLoad(cache, cache_index)); break;
    case Copy::kZero: body = MakeStore(cache, cache_index, MakeFloat(0.0, cache->dtype)); break;
    case Copy::kAtomicOut: body = MakeAtomicAdd(MakeLoad(buffer, buffer_index), MakeLoad(cache, cache_index)); break;
  }
  const bool vectorize = copy != Copy::kAtomicOut;  // an atomic update is one compare-and-swap per element
  for (size_t t = vars.size(); t-- > 0;) {
    int64_t extent = *AsConstInt(cache->shape[t]);

    if (vectorize && t + 1 == vars.size() && extent % lanes == 0 && extent >= lanes) {
      Var outer = MakeVar(vars[t]->name + "_o", DataType::kInt32);
      Var inner = MakeVar(vars[t]->name + "_i", DataType::kInt32);
      Stmt inner_body = Substitute(body, {{vars[t].get(), Add(Mul(outer, MakeInt(lanes)), inner)}});
      body = MakeFor(inner, MakeInt(0), MakeInt(lanes), ForKind::kVectorized, inner_body);
      body = MakeFor(outer, MakeInt(0), MakeInt(extent / lanes), ForKind::kUnrolled, body);
    } else {
      // A window is a few elements a thread owns: unrolled, they stay in
      // registers (a loop over a local array would put it in memory); so
      // are the dimensions of a small local cache that it holds whole (a
      // thread's tile of all of a 4-row block's rows).
      const bool few = cache->scope == "local" && ElementsOf(cache) <= kUnrolledCopyElements;
      const ForKind kind = tiles[DimensionOf(varying, t)].offset || few ? ForKind::kUnrolled : ForKind::kSerial;
      body = MakeFor(vars[t], MakeInt(0), MakeInt(extent), kind, body);
    }
  }
  return body;
}

// The conditions that enclose every access to `buffer` in `body` (in the
// then-branch of an `if`) and read no buffer and nothing bound inside it: a
// split's guard on a thread's outer parts, around both a reduction's init
// and its update, the same for the whole of one iteration of the cached
// loop. A local cache's copies take them too, so that they touch only the
// elements the guarded accesses may, never the ones past a row's end.
class CommonGuards : public IRVisitor {
 public:
  CommonGuards(const BufferNode* buffer, const InnerLoops& bound) : buffer_(buffer), bound_(bound) {}

  std::vector<Expr> Of(const Stmt& body) {
    VisitStmt(body);
    std::vector<Expr> out;
    for (const Expr& cond : common_.value_or(std::vector<Expr>{})) {
      bool varies = ReadsBuffer(cond);  // an element the cached body may change
      for (const VarNode* v : bound_.vars) varies |= Uses(cond, v);
      if (!varies) out.push_back(cond);
    }
    return out;
  }

 protected:
  void Visit(const IfThenElseNode* n) override {
    VisitExpr(n->cond);
    open_.push_back(n->cond);
    VisitStmt(n->then_case);
    open_.pop_back();
    if (n->else_case) VisitStmt(n->else_case);
  }
  void Visit(const BufferLoadNode* n) override {
    if (n->buffer.get() == buffer_) Meet();
    IRVisitor::Visit(n);
  }
  void Visit(const BufferStoreNode* n) override {
    if (n->buffer.get() == buffer_) Meet();
    IRVisitor::Visit(n);
  }
  void Visit(const AtomicAddNode* n) override {
    if (n->target->as<BufferLoadNode>()->buffer.get() == buffer_) Meet();
    IRVisitor::Visit(n);
  }

 private:
  // Keeps the common conditions that also enclose this access.
  void Meet() {
    if (!common_) {
      common_ = open_;
      return;
    }
    std::vector<Expr> kept;
    for (const Expr& cond : *common_) {
      for (const Expr& here : open_) {
        if (StructuralEqual(cond, here)) {
          kept.push_back(cond);
          break;
        }
      }
    }
    common_ = kept;
  }

  const BufferNode* buffer_;
  const InnerLoops& bound_;
  std::vector<Expr> open_;
  std::optional<std::vector<Expr>> common_;
};

// `copy` under `guards` (CommonGuards), outermost first.
Stmt UnderGuards(Stmt copy, const std::vector<Expr>& guards) {
  for (auto g = guards.rbegin(); g != guards.rend(); ++g) copy = MakeIf(*g, copy);
  return copy;
}

// True if `cond` is one of `guards`.
bool IsCommonGuard(const Expr& cond, const std::vector<Expr>& guards) {
  for (const Expr& g : guards) {
    if (StructuralEqual(cond, g)) return true;
  }
  return false;
}

// True if the first statement of `body` that touches `cache` stores every
// element of it with values that do not read it: a perfect nest of loops from
// 0 (blocks allowed) around one store whose indices are the nest's variables,
// each loop spanning its cache dimension. A reduction's init block is such a
// nest. Then the copy into the cache is dead, and it must go rather than be
// left to the C++ compiler: a read of output memory that was never written
// maps the shared zero page, and the first write then costs a second page
// fault plus a TLB shootdown.
// `once` gives the variables of enclosing loops that run once (a warp axis
// of extent 1, RunOnce) their values, so that an index such as `w * 32 + c`
// is seen as `c`. The nest may pass through `guards`, which guard the
// copies too: where they fail, nothing touches the cache.
bool OverwritesFirst(const Stmt& body, const Buffer& cache, const VarMap& once, const std::vector<Expr>& guards) {
  Stmt s = body;
  if (const auto* seq = s->as<SeqNode>()) {
    s = nullptr;
    for (const Stmt& child : seq->stmts) {
      AccessCollector touches(cache.get());
      touches.VisitStmt(child);
      if (!touches.accesses.empty()) {
        s = child;
        break;
      }
    }
    if (!s) return false;
  }
  std::map<const VarNode*, int64_t> extents;
  for (;;) {
    if (const auto* loop = s->as<ForNode>()) {
      const int64_t *min = AsConstInt(loop->min), *extent = AsConstInt(loop->extent);
      if (!min || *min != 0 || !extent) return false;
      extents[loop->var.get()] = *extent;
      s = loop->body;
    } else if (const auto* block = s->as<BlockNode>()) {
      s = block->body;
    } else if (const auto* guard = s->as<IfThenElseNode>();
               guard && !guard->else_case && IsCommonGuard(guard->cond, guards)) {
      s = guard->then_case;
    } else {
      break;
    }
  }
  const auto* store = s->as<BufferStoreNode>();
  if (!store || store->buffer != cache || store->indices.size() != cache->shape.size()) return false;
  AccessCollector reads(cache.get());
  reads.VisitExpr(store->value);
  if (!reads.accesses.empty()) return false;
  std::set<const VarNode*> used;
  for (size_t d = 0; d < store->indices.size(); ++d) {
    const int64_t* dim = AsConstInt(cache->shape[d]);
    if (!dim) return false;
    const Expr index = Simplify(Substitute(store->indices[d], once));
    if (const int64_t* c = AsConstInt(index)) {
      if (*dim != 1 || *c != 0) return false;
      continue;
    }
    const auto* var = index->as<VarNode>();
    if (!var || !extents.count(var) || extents[var] != *dim || !used.insert(var).second) return false;
  }
  return used.size() == extents.size();  // every loop of the nest indexes a dimension
}

// Per dimension of `buffer`, the window the cache holds of it (Tile), where
// every access agrees on one narrower than the dimension; else no offset (the
// cache keeps a varying dimension whole).
std::vector<Tile> Windows(const std::vector<Access>& accesses, const std::vector<bool>& varying,
                          const std::function<bool(const Expr&)>& varies, const InnerLoops& loops,
                          const Buffer& buffer) {
  std::vector<Tile> tiles(varying.size());
  for (size_t d = 0; d < varying.size(); ++d) {
    if (!varying[d]) continue;
    Tile tile;
    for (const Access& a : accesses) {
      auto window = SplitWindow(a.indices[d], varies);
      const int64_t extent = window ? WindowExtent(window->second, loops) : 0;
      if (extent == 0 || (tile.offset && !StructuralEqual(tile.offset, window->first))) {
        tile = Tile();
        break;
      }
      tile.offset = window->first;
      tile.extent = std::max(tile.extent, extent);
    }
    const int64_t* whole = AsConstInt(buffer->shape[d]);
    if (tile.offset && (!whole || tile.extent < *whole)) tiles[d] = tile;
  }
  return tiles;
}

// {variable: its min} of `loop` and the loops around it in `f` that run once
// (a row slice or thread axis of extent 1).
VarMap RunOnce(const PrimFunc& f, const ForNode* loop) {
  struct Finder : IRVisitor {
    const ForNode* target = nullptr;
    std::vector<const ForNode*> stack, found;
    void Visit(const ForNode* n) override {
      stack.push_back(n);
      if (n == target) found = stack;
      if (found.empty()) IRVisitor::Visit(n);
      stack.pop_back();
    }
  } finder;
  finder.target = loop;
  if (f->body) finder.VisitStmt(f->body);
  VarMap once;
  for (const ForNode* l : finder.found) {
    const int64_t* extent = AsConstInt(l->extent);
    if (extent && *extent == 1) once[l->var.get()] = l->min;
  }
  return once;
}

// The loops bound to threadIdx.{x,y,z} that enclose `target` in `f`.
std::vector<const ForNode*> EnclosingThreadLoops(const PrimFunc& f, const ForNode* target) {
  struct Finder : IRVisitor {
    const ForNode* target = nullptr;
    std::vector<const ForNode*> stack, found;
    void Visit(const ForNode* n) override {
      if (n == target) {
        found = stack;
        return;
      }
      const bool thread = ThreadAxis(n) >= 0;
      if (thread) stack.push_back(n);
      IRVisitor::Visit(n);
      if (thread) stack.pop_back();
    }
  } finder;
  finder.target = target;
  if (f->body) finder.VisitStmt(f->body);
  return finder.found;
}

}  // namespace

PrimFunc CacheRewrite(const PrimFunc& f, const std::string& loop_name, const std::string& buffer_name,
                      const std::string& scope, CacheDirection direction, std::string* cache_name) {
  const char* primitive = direction == CacheDirection::kRead ? "cache_read" : "cache_write";
  const std::string p = primitive;
  const ForNode* loop = FindLoop(f, loop_name, primitive);
  const std::string context = Excerpt(loop);
  if (scope != "local" && scope != "shared") {
    ThrowScheduleError(p + ": scope must be \"local\" or \"shared\", got \"" + scope + "\"", context);
  }
  if (scope == "shared" && f->body && HasBarrier(f->body)) {
    // Its shared buffers are the script's own (lower_shared_caches leaves
    // them as written): a cache would get no barriers around its fill.
    ThrowScheduleError(p + ": '" + f->name + "' synchronizes its own shared buffers (T.sp.sync_threads()); "
                       "allocate the tile in the script, or cache in local scope", context);
  }
  Buffer buffer;
  for (const Buffer& b : f->buffers) {
    if (b->name == buffer_name) buffer = b;
  }
  if (!buffer) ThrowScheduleError(p + ": no buffer named '" + buffer_name + "' in '" + f->name + "'", context);
  // A body that starts with guards (the `if` of a non-dividing split) and
  // let bindings (a fused loop's row and position) is cached inside them: the
  // copies then touch only the elements the guarded body may, never the ones
  // past the buffer's extent, and may index with the bound values.
  std::vector<Stmt> wrappers;
  Stmt inner = loop->body;
  for (;;) {
    if (const auto* guard = inner->as<IfThenElseNode>(); guard && !guard->else_case) {
      wrappers.push_back(inner);
      inner = guard->then_case;
    } else if (const auto* let = inner->as<LetNode>()) {
      wrappers.push_back(inner);
      inner = let->body;
    } else {
      break;
    }
  }
  AccessCollector collector(buffer.get());
  collector.VisitStmt(inner);
  if (collector.accesses.empty()) {
    ThrowScheduleError(p + ": loop '" + loop_name + "' does not access buffer '" + buffer_name + "'", context);
  }
  bool stores = false, atomics = false;
  for (const Access& a : collector.accesses) {
    stores |= a.is_store;
    atomics |= a.is_atomic;
  }
  if (atomics) {
    for (const Access& a : collector.accesses) {
      if (a.is_store && !a.is_atomic) {
        ThrowScheduleError(p + ": loop '" + loop_name + "' updates buffer '" + buffer_name +
                               "' both atomically and with plain stores; a cache cannot hold both",
                           context);
      }
    }
  }
  if (direction == CacheDirection::kRead && stores) {
    ThrowScheduleError(p + ": loop '" + loop_name + "' writes buffer '" + buffer_name + "'; use cache_write", context);
  }
  if (direction == CacheDirection::kWrite && !stores) {
    ThrowScheduleError(p + ": loop '" + loop_name + "' only reads buffer '" + buffer_name + "'; use cache_read", context);
  }
  InnerLoops bound;
  bound.VisitStmt(inner);
  // (A shared cache's fill is spread over the block's threads, whatever
  // each thread's own guards say.)
  const std::vector<Expr> guards =
      scope == "local" ? CommonGuards(buffer.get(), bound).Of(inner) : std::vector<Expr>{};
  // A shared cache is one copy for every thread of the block: the loops
  // bound to threadIdx around `loop` vary over it as the loops inside do, so
  // the cache holds what all the block's threads touch (the whole block of a
  // matrix whose rows the warps divide, say), not one thread's part.
  if (scope == "shared") {
    for (const ForNode* thread : EnclosingThreadLoops(f, loop)) {
      bound.vars.push_back(thread->var.get());
      const int64_t *min = AsConstInt(thread->min), *extent = AsConstInt(thread->extent);
      if (min && *min == 0 && extent) bound.extents[thread->var.get()] = *extent;
    }
  }
  auto varies = [&](const Expr& e) {
    for (const VarNode* v : bound.vars) {
      if (Uses(e, v)) return true;
    }
    return false;
  };
  // A dimension either varies inside the loop (the cache keeps it whole) or is
  // the same expression in every access (the cache drops it).
  const Access& first = collector.accesses[0];
  std::vector<bool> varying;
  std::vector<Expr> fixed;
  for (const Expr& index : first.indices) {
    varying.push_back(varies(index));
    if (!varying.back()) fixed.push_back(index);
  }
  for (const Access& a : collector.accesses) {
    for (size_t d = 0; d < a.indices.size(); ++d) {
      if (varies(a.indices[d]) != varying[d] ||
          (!varying[d] && !StructuralEqual(a.indices[d], first.indices[d]))) {
        ThrowScheduleError(p + ": the accesses to '" + buffer_name + "' inside loop '" + loop_name +
                               "' disagree on dimension " + std::to_string(d) +
                               "; a cache needs every access to use the same fixed indices",
                           context);
      }
    }
  }
  std::vector<Tile> tiles = Windows(collector.accesses, varying, varies, bound, buffer);
  BufferNode node;
  node.name = FreshName(f, buffer_name + "_" + scope);
  node.kind = BufferKind::kAlloc;
  node.dtype = buffer->dtype;
  node.scope = scope;
  for (size_t d = 0; d < varying.size(); ++d) {
    if (!varying[d]) continue;
    if (tiles[d].offset) {
      node.shape.push_back(MakeInt(tiles[d].extent));
      continue;
    }
    if (!AsConstInt(buffer->shape[d])) {
      ThrowScheduleError(p + ": dimension " + std::to_string(d) + " of buffer '" + buffer_name +
                             "' does not have a constant extent; specialize it first (sch.specialize)",
                         context);
    }
    node.shape.push_back(buffer->shape[d]);
  }
  if (node.shape.empty()) node.shape.push_back(MakeInt(1));
  Buffer cache = MakeBuffer(std::move(node));
  *cache_name = cache->name;
  Stmt body = Redirector(buffer.get(), cache, varying, tiles, varies, direction == CacheDirection::kWrite).VisitStmt(inner);
  // Atomic updates (other iterations may add into the same elements
  // meanwhile) are summed privately from zero and published with one atomic
  // add per element, not copied in and out.
  // The copies take the vectors the body was vectorized with (a schedule
  // sizes them for its target's registers); without any, 64-byte vectors,
  // or for a cache narrower than that, one vector of its width where that
  // is a power of two (a GPU thread's few features: one vector load).
  WidestVector widest;
  widest.VisitStmt(inner);
  int64_t lanes = widest.lanes >= 2 ? std::min<int64_t>(widest.lanes, 64 / BytesOf(buffer->dtype))
                                    : 64 / BytesOf(buffer->dtype);
  if (const int64_t* width = AsConstInt(cache->shape.back()); widest.lanes < 2 && width && *width >= 2 &&
      *width < lanes && (*width & (*width - 1)) == 0) {
    lanes = *width;
  }
  std::vector<Stmt> parts;
  if (atomics) {
    parts.push_back(CopyNest(f, buffer, cache, fixed, varying, tiles, Copy::kZero, lanes));
  } else if (!(direction == CacheDirection::kWrite && OverwritesFirst(body, cache, RunOnce(f, loop), guards))) {
    parts.push_back(UnderGuards(CopyNest(f, buffer, cache, fixed, varying, tiles, Copy::kIn, lanes), guards));
  }
  parts.push_back(body);
  if (direction == CacheDirection::kWrite) {
    parts.push_back(UnderGuards(
        CopyNest(f, buffer, cache, fixed, varying, tiles, atomics ? Copy::kAtomicOut : Copy::kOut, lanes), guards));
  }
  Stmt new_body = MakeAllocate(cache, MakeSeq(parts));
  for (auto w = wrappers.rbegin(); w != wrappers.rend(); ++w) {
    if (const auto* guard = (*w)->as<IfThenElseNode>()) {
      new_body = MakeIf(guard->cond, new_body);
    } else {
      const auto* let = (*w)->as<LetNode>();
      new_body = MakeLet(let->var, let->value, new_body);
    }
  }
  return ReplaceStmt(f, loop, MakeFor(loop->var, loop->min, loop->extent, loop->for_kind, new_body, loop->thread_tag));
}

}  // namespace sparsetir
