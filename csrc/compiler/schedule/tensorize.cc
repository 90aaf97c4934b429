// tensorize (stage III): a nest of three loops that multiply-accumulates one
// tile becomes one tensor-core instruction of a warp (T.sp.mma_sync).
//
// Before:  for bi_1 in T.serial(16):
//              for f_1 in T.serial(8):
//                  for bj_1 in T.serial(16):
//                      with T.block("bsrmm"):
//                          C_local[bi_1, f_0 * 8 + f_1] = C_local[bi_1, f_0 * 8 + f_1]
//                              + A[v0, bi_0 * 16 + bi_1, bj_1] * B[v1, bj_1, f_0 * 8 + f_1]
// After:   sch.tensorize("bi_1", "mma_m16n8k16")
//          with T.block("bsrmm"):
//              T.sp.mma_sync("m16n8k16", C_local[0, f_0 * 8], A[v0, bi_0 * 16, 0], B[v1, 0, f_0 * 8], 16, 1, 64, 1)
//
// The nest's loops are the tile's rows m (16), columns n (8) and depth k
// (16), in any order, told apart by what they index: the accumulator's last
// two dimensions by m and n, two dimensions of A by m and k, two of B by k
// and n. Each variable has coefficient 1 in its dimension and appears in no
// other, so a tile's rows and columns are their dimensions' strides apart
// (the product of the dimensions after each), from the element the base
// indices name (every variable of the nest at 0). The accumulator sums in
// float32 (a float32 buffer, or a 16-bit local one); A and B are float16 or
// bfloat16. On cuda the warp's 32 lanes run the instruction together and the
// accumulator becomes a fragment spread over them (lower_mma_fragments.h).
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ir/equal.h"
#include "ir/linear_form.h"
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

constexpr const char* kMmaIntrinsic = "mma_m16n8k16";

// The three loops of the nest rooted at `outer` and the one update inside
// them (lets between the loops substituted into it), or an error.
struct Nest {
  std::vector<const ForNode*> loops;
  const BufferStoreNode* store = nullptr;
  Expr value;                 // the store's value with the nest's lets substituted
  std::vector<Expr> indices;  // the store's indices, likewise
  std::string block;          // the innermost block's name ("" if none)
};

Nest FindNest(const ForNode* outer, const std::string& where, const std::string& context) {
  Nest nest;
  VarMap lets;
  Stmt s = outer->body;
  nest.loops.push_back(outer);
  for (;;) {
    if (const auto* loop = s->as<ForNode>()) {
      if (nest.loops.size() == 3) {
        ThrowScheduleError(where + " holds more than three nested loops; an mma tile is rows x columns x depth",
                           context);
      }
      nest.loops.push_back(loop);
      s = loop->body;
    } else if (const auto* block = s->as<BlockNode>()) {
      nest.block = block->name;
      s = block->body;
    } else if (const auto* let = s->as<LetNode>()) {
      lets[let->var.get()] = Substitute(let->value, lets);
      s = let->body;
    } else {
      break;
    }
  }
  nest.store = s->as<BufferStoreNode>();
  if (nest.loops.size() != 3 || !nest.store) {
    ThrowScheduleError(where + " is not a perfect nest of three loops around one update of a buffer element", context);
  }
  for (const ForNode* loop : nest.loops) {
    const int64_t* min = AsConstInt(loop->min);
    const int64_t* extent = AsConstInt(loop->extent);
    if (!min || *min != 0 || !extent) {
      ThrowScheduleError(where + ": loop '" + loop->var->name + "' does not run from 0 over a constant extent",
                         context);
    }
    if (loop->for_kind == ForKind::kParallel || loop->for_kind == ForKind::kThreadBinding) {
      ThrowScheduleError(where + ": loop '" + loop->var->name + "' is " + ToString(loop->for_kind) +
                             "; the warp runs the whole tile, so the nest's loops must be serial",
                         context);
    }
  }
  nest.value = Substitute(nest.store->value, lets);
  for (const Expr& index : nest.store->indices) nest.indices.push_back(Substitute(index, lets));
  return nest;
}

// A buffer load, seen through a cast (16-bit operands widened to the sum's type).
const BufferLoadNode* LoadOf(const Expr& e) {
  if (const auto* cast = e->as<CastNode>()) return cast->value->as<BufferLoadNode>();
  return e->as<BufferLoadNode>();
}

// Which of the nest's variables each dimension of `indices` uses, with the
// coefficient; *linear is set false when a dimension uses one other than
// linearly.
std::vector<std::map<const VarNode*, int64_t>> NestVarsByDimension(const std::vector<Expr>& indices,
                                                                    const std::vector<const ForNode*>& loops,
                                                                    bool* linear) {
  std::vector<std::map<const VarNode*, int64_t>> out(indices.size());
  *linear = true;
  for (size_t d = 0; d < indices.size(); ++d) {
    const std::optional<LinearForm> form = AsLinear(indices[d]);
    for (const ForNode* loop : loops) {
      const VarNode* v = loop->var.get();
      if (!form) {
        if (Uses(indices[d], v)) *linear = false;
        continue;
      }
      if (const int64_t c = form->CoefficientOf(v)) out[d][v] = c;
    }
  }
  return out;
}

class TileMatcher {
 public:
  TileMatcher(const Nest& nest, std::string where, std::string context)
      : nest_(nest), where_(std::move(where)), context_(std::move(context)) {}

  Stmt Match() {
    const auto* sum = nest_.value->as<BinaryNode>();
    const Expr self = MakeLoad(nest_.store->buffer, nest_.indices);
    const BinaryNode* product = nullptr;
    if (sum && sum->op == BinaryOp::kAdd) {
      if (StructuralEqual(sum->a, self)) product = sum->b->as<BinaryNode>();
      if (!product && StructuralEqual(sum->b, self)) product = sum->a->as<BinaryNode>();
    }
    if (!product || product->op != BinaryOp::kMul || !LoadOf(product->a) || !LoadOf(product->b)) {
      Fail("the update is not " + nest_.store->buffer->name + "[...] = " + nest_.store->buffer->name +
           "[...] + X[...] * Y[...]");
    }
    const Buffer& acc = nest_.store->buffer;
    if (!AccumulatesInFloat32(acc.get())) {
      Fail("it accumulates into '" + acc->name + "' (" + ToString(acc->dtype) + ", " + acc->scope +
           "); an mma sums in float32: a float32 buffer or a 16-bit local one (cache_write it in local scope)");
    }
    // The accumulator's last two dimensions name m and n; k is the third.
    const auto acc_vars = Dimensions(nest_.indices, "accumulator '" + acc->name + "'");
    const VarNode* m = SoleVar(acc_vars, acc_vars.size() - 2, acc->name);
    const VarNode* n = SoleVar(acc_vars, acc_vars.size() - 1, acc->name);
    if (m == n) {
      Fail("accumulator '" + acc->name + "' is indexed by loop '" + m->name + "' in both of its last dimensions");
    }
    for (size_t d = 0; d + 2 < acc_vars.size(); ++d) {
      if (!acc_vars[d].empty()) {
        Fail("accumulator '" + acc->name + "' uses the nest's loops outside its last two dimensions");
      }
    }
    const VarNode* k = nullptr;
    for (const ForNode* loop : nest_.loops) {
      if (loop->var.get() != m && loop->var.get() != n) k = loop->var.get();
    }
    const BufferLoadNode* x = LoadOf(product->a);
    const BufferLoadNode* y = LoadOf(product->b);
    const bool x_is_a = Uses(MakeLoad(x->buffer, x->indices), m);
    const BufferLoadNode* a = x_is_a ? x : y;
    const BufferLoadNode* b = x_is_a ? y : x;
    const auto [a_rows, a_cols] = CheckTile(a, m, k, "A");
    const auto [b_rows, b_cols] = CheckTile(b, k, n, "B");
    CheckExtent(m, kMmaM, "rows");
    CheckExtent(n, kMmaN, "columns");
    CheckExtent(k, kMmaK, "depth");
    const DataType in = a->buffer->dtype;
    if ((in != DataType::kFloat16 && in != DataType::kBFloat16) || b->buffer->dtype != in) {
      Fail("it multiplies '" + a->buffer->name + "' (" + ToString(in) + ") by '" + b->buffer->name + "' (" +
           ToString(b->buffer->dtype) + "); an mma multiplies float16 or bfloat16 tiles of one dtype");
    }
    VarMap origin;
    for (const ForNode* loop : nest_.loops) origin[loop->var.get()] = IntLike(0, loop->var);
    auto base = [&](const Buffer& buffer, const std::vector<Expr>& indices) {
      std::vector<Expr> at;
      for (const Expr& index : indices) at.push_back(Simplify(Substitute(index, origin)));
      return MakeLoad(buffer, at);
    };
    Stmt mma = MakeMma(kMmaShape, base(acc, nest_.indices), base(a->buffer, a->indices), base(b->buffer, b->indices),
                       {a_rows, a_cols, b_rows, b_cols});
    return nest_.block.empty() ? mma : MakeBlock(nest_.block, mma);
  }

 private:
  [[noreturn]] void Fail(const std::string& why) const { ThrowScheduleError(where_ + ": " + why, context_); }

  std::vector<std::map<const VarNode*, int64_t>> Dimensions(const std::vector<Expr>& indices,
                                                             const std::string& what) const {
    if (indices.size() < 2) Fail(what + " has fewer than two dimensions; an mma tile is 2-D");
    bool linear = true;
    auto vars = NestVarsByDimension(indices, nest_.loops, &linear);
    if (!linear) Fail(what + " is indexed by the nest's loops other than linearly");
    return vars;
  }

  // The one nest variable of dimension d, with coefficient 1.
  const VarNode* SoleVar(const std::vector<std::map<const VarNode*, int64_t>>& vars, size_t d,
                         const std::string& buffer) const {
    if (vars[d].size() != 1 || vars[d].begin()->second != 1) {
      Fail("dimension " + std::to_string(d) + " of '" + buffer +
           "' must be indexed by exactly one of the nest's loops, with coefficient 1 (its tile lies in its last two "
           "dimensions)");
    }
    return vars[d].begin()->first;
  }

  // One dimension of `load` is indexed by `row` alone and another by `col`
  // alone, and no other uses the nest. Returns the elements between the
  // tile's rows and between its columns: the product of the dimensions after
  // each one's.
  std::pair<Expr, Expr> CheckTile(const BufferLoadNode* load, const VarNode* row, const VarNode* col,
                                  const char* role) const {
    const std::string name = std::string(role) + " '" + load->buffer->name + "'";
    const auto vars = Dimensions(load->indices, name);
    std::optional<size_t> rows, cols;
    for (size_t d = 0; d < vars.size(); ++d) {
      if (vars[d].empty()) continue;
      const VarNode* v = SoleVar(vars, d, load->buffer->name);
      std::optional<size_t>& slot = v == row ? rows : v == col ? cols : rows;
      if (slot || (v != row && v != col)) {
        Fail(name + " must be indexed by loop '" + row->name + "' in one dimension and by '" + col->name +
             "' in another, and by no other of the nest's loops");
      }
      slot = d;
    }
    if (!rows || !cols) {
      Fail(name + " is not indexed by both loop '" + row->name + "' (the tile's rows) and '" + col->name +
           "' (its columns)");
    }
    auto stride = [&](size_t dim) {
      Expr out = IntLike(1, load->indices[dim]);
      for (size_t d = dim + 1; d < vars.size(); ++d) out = Mul(out, load->buffer->shape[d]);
      return Simplify(out);
    };
    return {stride(*rows), stride(*cols)};
  }

  void CheckExtent(const VarNode* var, int64_t want, const char* what) const {
    for (const ForNode* loop : nest_.loops) {
      if (loop->var.get() != var) continue;
      if (*AsConstInt(loop->extent) != want) {
        Fail("loop '" + var->name + "' runs the tile's " + what + " over " + std::to_string(*AsConstInt(loop->extent)) +
             " iterations; mma_m16n8k16 needs " + std::to_string(want) + " (split it by " + std::to_string(want) +
             " first)");
      }
    }
  }

  const Nest& nest_;
  const std::string where_;
  const std::string context_;
};

}  // namespace

void Schedule::Tensorize(const std::string& loop_name, const std::string& intrinsic) {
  EnsureStageIII("tensorize");
  const ForNode* loop = FindLoop(func_, loop_name, "tensorize");
  const std::string context = Excerpt(loop);
  const std::string where = "tensorize: loop '" + loop_name + "'";
  if (intrinsic != kMmaIntrinsic) {
    ThrowScheduleError("tensorize: unknown intrinsic '" + intrinsic + "'; the one known is '" + kMmaIntrinsic + "'",
                       context);
  }
  const Nest nest = FindNest(loop, where, context);
  Stmt replacement = TileMatcher(nest, where, context).Match();
  func_ = ReplaceStmt(func_, loop, replacement);
  Record("sch.tensorize(" + PyStr(loop_name) + ", " + PyStr(intrinsic) + ")");
}

}  // namespace sparsetir
