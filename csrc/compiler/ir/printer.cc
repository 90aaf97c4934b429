#include "ir/printer.h"

#include <charconv>
#include <sstream>

#include "support/error.h"

namespace sparsetir {
namespace {

// Python precedence levels, loosest first; a child is parenthesized when its
// level is looser than its context requires.
enum Precedence { kLambda, kOr, kAnd, kNot, kCompare, kAdditive, kMultiplicative, kUnary, kAtom };

Precedence PrecedenceOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::kOr: return kOr;
    case BinaryOp::kAnd: return kAnd;
    case BinaryOp::kAdd:
    case BinaryOp::kSub: return kAdditive;
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod: return kMultiplicative;
    case BinaryOp::kMin:
    case BinaryOp::kMax: return kAtom;
    default: return kCompare;
  }
}

std::string FormatDouble(double v) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, result.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // keep it a float literal
  if (s == "inf") return "T.inf";
  if (s == "-inf") return "-T.inf";
  return s;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}

class ExprPrinter {
 public:
  std::string Print(const Expr& e, Precedence context = kLambda) {
    Precedence own = kAtom;
    std::string text = PrintRaw(e, &own);
    if (own < context) return "(" + text + ")";
    return text;
  }

 private:
  std::string Join(const std::vector<Expr>& exprs) {
    std::string out;
    for (size_t i = 0; i < exprs.size(); ++i) {
      if (i) out += ", ";
      out += Print(exprs[i]);
    }
    return out;
  }

  std::string PrintRaw(const Expr& e, Precedence* own) {
    ICHECK(e) << "printing a null expression";
    switch (e->kind) {
      case ExprKind::kIntImm: {
        int64_t v = e->as<IntImmNode>()->value;
        if (e->dtype == DataType::kBool) return v ? "True" : "False";
        if (e->dtype == DataType::kInt64) return "T.int64(" + std::to_string(v) + ")";
        if (v < 0) *own = kUnary;
        return std::to_string(v);
      }
      case ExprKind::kFloatImm:
        return "T." + ToString(e->dtype) + "(" + FormatDouble(e->as<FloatImmNode>()->value) + ")";
      case ExprKind::kVar:
        return e->as<VarNode>()->name;
      case ExprKind::kBinary: {
        const auto* n = e->as<BinaryNode>();
        if (n->op == BinaryOp::kMin || n->op == BinaryOp::kMax) {
          return std::string(ToString(n->op)) + "(" + Print(n->a) + ", " + Print(n->b) + ")";
        }
        if (n->op == BinaryOp::kDiv && IsInteger(n->a->dtype)) {
          return "T.truncdiv(" + Print(n->a) + ", " + Print(n->b) + ")";
        }
        Precedence p = PrecedenceOf(n->op);
        *own = p;
        // Left-associative: the right operand needs a strictly tighter level;
        // comparisons never chain.
        Precedence left = p == kCompare ? static_cast<Precedence>(p + 1) : p;
        return Print(n->a, left) + " " + ToString(n->op) + " " + Print(n->b, static_cast<Precedence>(p + 1));
      }
      case ExprKind::kUnary: {
        const auto* n = e->as<UnaryNode>();
        if (n->op == UnaryOp::kNot) {
          *own = kNot;
          return "not " + Print(n->a, kNot);
        }
        *own = kUnary;
        return "-" + Print(n->a, kUnary);
      }
      case ExprKind::kSelect: {
        const auto* n = e->as<SelectNode>();
        return "T.Select(" + Print(n->cond) + ", " + Print(n->true_value) + ", " + Print(n->false_value) + ")";
      }
      case ExprKind::kCast: {
        const auto* n = e->as<CastNode>();
        return "T.Cast(\"" + ToString(n->dtype) + "\", " + Print(n->value) + ")";
      }
      case ExprKind::kCall: {
        const auto* n = e->as<CallNode>();
        if (n->op == Intrinsic::kLowerBound || n->op == Intrinsic::kHorizontalSum || IsLaneOperation(n->op)) {
          return std::string("T.sp.") + ToString(n->op) + "(" + Join(n->args) + ")";
        }
        return std::string("T.") + ToString(n->op) + "(" + Join(n->args) + ")";
      }
      case ExprKind::kBufferLoad: {
        const auto* n = e->as<BufferLoadNode>();
        return n->buffer->name + "[" + Join(n->indices) + "]";
      }
    }
    return "?";
  }
};

class FunctionPrinter {
 public:
  std::string PrintFunction(const PrimFunc& f) {
    stage_ = f->stage;
    out_ << "@T.prim_func\n";
    out_ << "def " << f->name << "(";
    if (f->params.empty()) {
      out_ << ") -> None:\n";
    } else {
      out_ << "\n";
      for (const Var& p : f->params) {
        out_ << "    " << p->name << ": T." << ToString(p->dtype) << ",\n";
      }
      out_ << ") -> None:\n";
    }
    indent_ = 1;
    PrintFuncAttrs(f);
    for (const SparseIterator& it : f->iterators) Line(it->name + " = " + PrintIterator(it));
    for (const Buffer& b : f->buffers) Line(b->name + " = " + PrintBuffer(b));
    if (f->body) {
      PrintStmt(f->body);
    } else {
      Line("pass");
    }
    return out_.str();
  }

  std::string PrintStatement(const Stmt& s) {
    PrintStmt(s);
    return out_.str();
  }

  static std::string PrintAttr(const AttrPtr& a) {
    ExprPrinter exprs;
    switch (a->kind) {
      case AttrValue::Kind::kNone: return "None";
      case AttrValue::Kind::kBool: return a->bool_value ? "True" : "False";
      case AttrValue::Kind::kInt: return std::to_string(a->int_value);
      case AttrValue::Kind::kFloat: return FormatDouble(a->float_value);
      case AttrValue::Kind::kString: return Quote(a->string_value);
      case AttrValue::Kind::kList:
      case AttrValue::Kind::kTuple: {
        bool list = a->kind == AttrValue::Kind::kList;
        std::string out = list ? "[" : "(";
        for (size_t i = 0; i < a->items.size(); ++i) {
          if (i) out += ", ";
          out += PrintAttr(a->items[i]);
        }
        if (!list && a->items.size() == 1) out += ",";
        return out + (list ? "]" : ")");
      }
      case AttrValue::Kind::kDict: {
        std::string out = "{";
        for (size_t i = 0; i < a->entries.size(); ++i) {
          if (i) out += ", ";
          out += PrintAttr(a->entries[i].first) + ": " + PrintAttr(a->entries[i].second);
        }
        return out + "}";
      }
      case AttrValue::Kind::kExpr: return exprs.Print(a->expr);
      case AttrValue::Kind::kLambda: {
        // Parenthesized: a lambda's body runs to the closing bracket.
        std::string out = "(lambda ";
        for (size_t i = 0; i < a->lambda_params.size(); ++i) {
          if (i) out += ", ";
          out += a->lambda_params[i]->name;
        }
        out += ": (";
        for (size_t i = 0; i < a->items.size(); ++i) {
          if (i) out += ", ";
          out += exprs.Print(a->items[i]->expr);
        }
        if (a->items.size() == 1) out += ",";
        return out + "))";
      }
    }
    return "?";
  }

 private:
  void Line(const std::string& text) { out_ << std::string(4 * indent_, ' ') << text << "\n"; }

  std::string E(const Expr& e) { return exprs_.Print(e); }

  void PrintFuncAttrs(const PrimFunc& f) {
    std::string text = "T.func_attr({";
    for (const auto& [key, value] : f->attrs) text += Quote(key) + ": " + PrintAttr(value) + ", ";
    text += "\"sparse_tir_level\": " + std::to_string(static_cast<int>(f->stage)) + "})";
    Line(text);
  }

  std::string PrintIterator(const SparseIterator& it) {
    std::string idtype = "\"" + ToString(it->idtype) + "\"";
    std::string sorted = it->sorted ? "" : ", sorted=False";
    switch (it->kind) {
      case IteratorKind::kDenseFixed:
        return "T.sp.dense_fixed(" + E(it->extent) + ", " + idtype + ")";
      case IteratorKind::kDenseVaried: {
        std::string size = it->nnz ? "(" + E(it->extent) + ", " + E(it->nnz) + ")" : E(it->extent);
        return "T.sp.dense_varied(" + it->parent->name + ", " + size + ", " + it->indptr->name + ", " + idtype + ")";
      }
      case IteratorKind::kCompressedFixed:
        return "T.sp.compressed_fixed(" + it->parent->name + ", (" + E(it->extent) + ", " + E(it->length) +
               "), " + it->indices->name + ", " + idtype + sorted + ")";
      case IteratorKind::kCompressedVaried:
        return "T.sp.compressed_varied(" + it->parent->name + ", (" + E(it->extent) + ", " + E(it->nnz) +
               "), (" + it->indptr->name + ", " + it->indices->name + "), " + idtype + sorted + ")";
      case IteratorKind::kFused: {
        std::string out = "T.sp.fuse(";
        for (size_t i = 0; i < it->fused.size(); ++i) out += (i ? ", " : "") + it->fused[i]->name;
        return out + ")";
      }
    }
    return "?";
  }

  std::string PrintBuffer(const Buffer& b) {
    // A buffer over iterators is a sparse buffer (stages I, II); one with a
    // shape is a flat buffer (stage III, or a cache inside a loop).
    const bool flat = b->axes.empty() && (stage_ == Stage::kIII || !b->shape.empty());
    std::string shape = "(";
    if (flat) {
      for (size_t i = 0; i < b->shape.size(); ++i) shape += (i ? ", " : "") + E(b->shape[i]);
      if (b->shape.size() == 1) shape += ",";
    } else {
      for (size_t i = 0; i < b->axes.size(); ++i) shape += (i ? ", " : "") + b->axes[i]->name;
      if (b->axes.size() == 1) shape += ",";
    }
    shape += ")";
    std::string ns = flat ? "T." : "T.sp.";
    std::string extra;
    if (b->scope != "global") extra += ", scope=" + Quote(b->scope);
    if (b->extra_storage) extra += ", extra_storage=" + std::to_string(b->extra_storage);
    std::string dtype = "\"" + ToString(b->dtype) + "\"";
    if (b->kind == BufferKind::kAlloc) return ns + "alloc_buffer(" + shape + ", " + dtype + extra + ")";
    return ns + "match_buffer(" + b->data->name + ", " + shape + ", " + dtype + extra + ")";
  }

  std::string JoinIndices(const std::vector<Expr>& indices) {
    std::string out;
    for (size_t i = 0; i < indices.size(); ++i) out += (i ? ", " : "") + E(indices[i]);
    return out;
  }

  void PrintStmt(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kBufferStore: {
        const auto* n = s->as<BufferStoreNode>();
        Line(n->buffer->name + "[" + JoinIndices(n->indices) + "] = " + E(n->value));
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& child : s->as<SeqNode>()->stmts) PrintStmt(child);
        return;
      case StmtKind::kSparseIteration: {
        const auto* n = s->as<SparseIterationNode>();
        std::string its, vars;
        for (size_t i = 0; i < n->iterators.size(); ++i) {
          its += (i ? ", " : "") + n->iterators[i]->name;
          vars += (i ? ", " : "") + n->vars[i]->name;
        }
        Line("with T.sp.iteration([" + its + "], \"" + n->roles + "\", " + Quote(n->name) + ") as [" + vars + "]:");
        ++indent_;
        if (!n->attrs.empty()) {
          std::string text = "T.sp.iteration_attr({";
          for (size_t i = 0; i < n->attrs.size(); ++i) {
            text += (i ? ", " : "") + Quote(n->attrs[i].first) + ": " + PrintAttr(n->attrs[i].second);
          }
          Line(text + "})");
        }
        if (n->init) {
          Line("with T.init():");
          ++indent_;
          PrintStmt(n->init);
          --indent_;
        }
        PrintStmt(n->body);
        --indent_;
        return;
      }
      case StmtKind::kFor: {
        const auto* n = s->as<ForNode>();
        std::string range = E(n->extent);
        const int64_t* min = AsConstInt(n->min);
        if (!min || *min != 0) range = E(n->min) + ", " + E(Add(n->min, n->extent));
        if (n->for_kind == ForKind::kThreadBinding) range += ", thread=" + Quote(n->thread_tag);
        Line("for " + n->var->name + " in T." + ToString(n->for_kind) + "(" + range + "):");
        ++indent_;
        PrintStmt(n->body);
        --indent_;
        return;
      }
      case StmtKind::kIfThenElse: {
        const auto* n = s->as<IfThenElseNode>();
        Line("if " + E(n->cond) + ":");
        ++indent_;
        PrintStmt(n->then_case);
        --indent_;
        if (n->else_case) {
          Line("else:");
          ++indent_;
          PrintStmt(n->else_case);
          --indent_;
        }
        return;
      }
      case StmtKind::kLet: {
        const auto* n = s->as<LetNode>();
        Line(n->var->name + ": T." + ToString(n->var->dtype) + " = " + E(n->value));
        PrintStmt(n->body);
        return;
      }
      case StmtKind::kAllocate: {
        const auto* n = s->as<AllocateNode>();
        Line(n->buffer->name + " = " + PrintBuffer(n->buffer));
        PrintStmt(n->body);
        return;
      }
      case StmtKind::kBlock: {
        const auto* n = s->as<BlockNode>();
        Line("with T.block(" + Quote(n->name) + "):");
        ++indent_;
        PrintStmt(n->body);
        --indent_;
        return;
      }
      case StmtKind::kAssume: {
        const auto* n = s->as<AssumeNode>();
        Line("T.assume_buffer_domain(" + n->buffer->name + ", [" + E(n->lo) + ", " + E(n->hi) + "])");
        return;
      }
      case StmtKind::kPrefetch: {
        const auto* n = s->as<PrefetchNode>();
        const std::string level = n->cache_level == 1 ? "" : ", cache_level=" + std::to_string(n->cache_level);
        Line("T.prefetch(" + E(n->address) + ", " + std::to_string(n->extent) + level + ")");
        return;
      }
      case StmtKind::kAtomicAdd: {
        const auto* n = s->as<AtomicAddNode>();
        Line("T.atomic_add(" + E(n->target) + ", " + E(n->value) + ")");
        return;
      }
      case StmtKind::kBarrier:
        Line("T.sp.sync_threads()");
        return;
      case StmtKind::kMma: {
        const auto* n = s->as<MmaNode>();
        std::string strides;
        for (const Expr& stride : n->strides) strides += ", " + E(stride);
        Line("T.sp.mma_sync(\"" + n->shape + "\", " + E(n->acc) + ", " + E(n->a) + ", " + E(n->b) + strides + ")");
        return;
      }
    }
  }

  std::ostringstream out_;
  ExprPrinter exprs_;
  int indent_ = 0;
  Stage stage_ = Stage::kI;
};

}  // namespace

std::string Print(const PrimFunc& f) { return FunctionPrinter().PrintFunction(f); }
std::string Print(const Expr& e) { return ExprPrinter().Print(e); }
std::string Print(const Stmt& s) { return FunctionPrinter().PrintStatement(s); }
std::string Print(const AttrPtr& a) { return FunctionPrinter::PrintAttr(a); }

}  // namespace sparsetir
