// Turns the AST of a script into IR: resolves names (parameters, iterators,
// buffers, variables), gives literals their types from context, and reports
// every user mistake as a ScriptError at the offending span.
#include <climits>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/identifiers.h"
#include "ir/verifier.h"
#include "parser/ast.h"
#include "parser/parser.h"
#include "transforms/lift_workspaces.h"
#include "support/error.h"

namespace sparsetir {
namespace {

using parser::AstExpr;
using parser::AstExprPtr;
using parser::AstStmt;
using parser::AstStmtPtr;
using Kind = AstExpr::Kind;

// "T.sp.dense_fixed" for an attribute chain, "" for anything else.
std::string DottedName(const AstExprPtr& e) {
  if (e->kind == Kind::kName) return e->text;
  if (e->kind == Kind::kAttribute) {
    std::string base = DottedName(e->children[0]);
    return base.empty() ? "" : base + "." + e->text;
  }
  return "";
}

std::string CallName(const AstExprPtr& e) {
  return e && e->kind == Kind::kCall ? DottedName(e->children[0]) : "";
}

bool IsIteratorConstructor(const std::string& name) {
  return name == "T.sp.dense_fixed" || name == "T.sp.dense_varied" || name == "T.sp.compressed_fixed" ||
         name == "T.sp.compressed_varied" || name == "T.sp.fuse";
}

// Binds a call's positional and keyword arguments to parameter names.
class CallArgs {
 public:
  CallArgs(const AstExprPtr& call, const std::string& callee, std::vector<std::string> names)
      : call_(call) {
    size_t positional = call->children.size() - 1;
    if (positional > names.size()) {
      ThrowScriptError(callee + " takes at most " + std::to_string(names.size()) + " arguments, got " +
                           std::to_string(positional),
                       call->children[names.size() + 1]->span);
    }
    for (size_t i = 0; i < positional; ++i) values_[names[i]] = call->children[i + 1];
    for (const auto& [key, value] : call->keywords) {
      bool known = false;
      for (const auto& n : names) known |= n == key;
      if (!known) ThrowScriptError(callee + " got an unexpected keyword argument '" + key + "'", value->span);
      if (values_.count(key)) ThrowScriptError(callee + " got multiple values for argument '" + key + "'", value->span);
      values_[key] = value;
    }
    callee_ = callee;
  }
  AstExprPtr Get(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : it->second;
  }
  AstExprPtr Require(const std::string& name) const {
    AstExprPtr v = Get(name);
    if (!v) ThrowScriptError(callee_ + " is missing its argument '" + name + "'", call_->span);
    return v;
  }

 private:
  AstExprPtr call_;
  std::string callee_;
  std::map<std::string, AstExprPtr> values_;
};

struct Symbol {
  enum class Kind { kParam, kIterator, kBuffer, kVar };
  Kind kind;
  Var var;
  SparseIterator iterator;
  Buffer buffer;
};

class Builder {
 public:
  explicit Builder(std::shared_ptr<const SourceFile> file) : file_(std::move(file)) {}

  PrimFunc Build(const std::vector<AstStmtPtr>& module) {
    const AstStmt* def = nullptr;
    std::vector<AstStmtPtr> defs;
    for (const AstStmtPtr& s : module) {
      if (s->kind == AstStmt::Kind::kFunctionDef) {
        defs.push_back(s);
      } else if (!(s->kind == AstStmt::Kind::kExpr && s->value->kind == Kind::kString)) {
        ThrowScriptError("a script holds one function definition; found a statement outside it", s->span);
      }
    }
    if (defs.empty()) ThrowScriptError("the script defines no function (expected '@T.prim_func def ...')", Span{file_, 1, 1, 1});
    if (defs.size() > 1) ThrowScriptError("a script holds exactly one function; found another one here", defs[1]->span);
    def = defs[0].get();
    PushScope();
    if (IsPrimFunc(*def)) return BuildPrimFunc(*def, {});
    return BuildFormatGenerator(*def);
  }

 private:
  // ---------------------------------------------------------------- scopes
  void PushScope() { scopes_.emplace_back(); }
  void PopScope() { scopes_.pop_back(); }
  void Define(const std::string& name, Symbol symbol, const Span& span) {
    for (const auto& scope : scopes_) {
      if (scope.count(name)) ThrowScriptError("name '" + name + "' is already defined", span);
    }
    scopes_.back()[name] = std::move(symbol);
  }
  const Symbol* Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }
  const Symbol& Resolve(const AstExprPtr& e) {
    if (e->kind != Kind::kName) ThrowScriptError("expected a name", e->span);
    const Symbol* s = Lookup(e->text);
    if (!s) {
      auto later = later_iterators_.find(e->text);
      if (later != later_iterators_.end() && later->second.line > e->span.line) {
        ThrowScriptError("iterator '" + e->text + "' is used before it is defined (it is defined at line " +
                             std::to_string(later->second.line) + ")",
                         e->span);
      }
      ThrowScriptError("undefined name '" + e->text + "'", e->span);
    }
    return *s;
  }

  // ---------------------------------------------------------------- functions
  static bool IsPrimFunc(const AstStmt& def) {
    for (const AstExprPtr& d : def.decorators) {
      std::string name = DottedName(d);
      if (name.empty()) name = CallName(d);
      if (name == "T.prim_func") return true;
    }
    return false;
  }

  // `def bsr(block_size: int): @T.prim_func def func(...): ... return func`:
  // the outer parameters become symbolic int32 parameters of the kernel.
  PrimFunc BuildFormatGenerator(const AstStmt& outer) {
    if (!outer.decorators.empty()) {
      ThrowScriptError("unknown decorator '" + DottedName(outer.decorators[0]) + "'; expected '@T.prim_func'",
                       outer.decorators[0]->span);
    }
    const AstStmt* inner = nullptr;
    for (const AstStmtPtr& s : outer.body) {
      if (s->kind == AstStmt::Kind::kFunctionDef && IsPrimFunc(*s)) inner = s.get();
    }
    if (!inner) ThrowScriptError("function '" + outer.name + "' is not decorated with @T.prim_func", outer.span);
    std::vector<Var> symbolic;
    for (const auto& p : outer.params) symbolic.push_back(MakeParam(p));
    PrimFunc f = BuildPrimFunc(*inner, symbolic);
    PrimFuncNode copy = *f;
    copy.name = outer.name;
    return MakePrimFunc(std::move(copy));
  }

  Var MakeParam(const parser::AstParam& p) {
    if (!p.annotation) {
      ThrowScriptError("parameter '" + p.name + "' needs a type annotation (T.handle, T.int32 or T.int64)", p.span);
    }
    std::string type = DottedName(p.annotation);
    DataType dtype;
    if (type == "T.handle") {
      dtype = DataType::kHandle;
    } else if (type == "T.int32" || type == "int") {
      dtype = DataType::kInt32;
    } else if (type == "T.int64") {
      dtype = DataType::kInt64;
    } else if (CallName(p.annotation) == "T.var" && p.annotation->children.size() == 2 &&
               p.annotation->children[1]->kind == Kind::kString &&
               IsInteger(ParseDataType(p.annotation->children[1]->text).value_or(DataType::kVoid))) {
      dtype = *ParseDataType(p.annotation->children[1]->text);
    } else {
      ThrowScriptError("parameter '" + p.name + "' has an unsupported type; use T.handle, T.int32 or T.int64",
                       p.annotation->span);
    }
    Var v = MakeVar(p.name, dtype);
    Define(p.name, Symbol{Symbol::Kind::kParam, v, nullptr, nullptr}, p.span);
    return v;
  }

  PrimFunc BuildPrimFunc(const AstStmt& def, const std::vector<Var>& symbolic) {
    func_.name = def.name;
    func_.source = file_;
    for (const auto& p : def.params) func_.params.push_back(MakeParam(p));
    for (const Var& v : symbolic) func_.params.push_back(v);
    PrescanFunction(def.body);
    std::vector<AstStmtPtr> body;
    for (const AstStmtPtr& s : def.body) {
      if (IsFuncAttr(s)) continue;  // already read by the prescan
      if (s->kind == AstStmt::Kind::kAssign && s->value && IsIteratorConstructor(CallName(s->value))) {
        DefineIterator(*s);
      } else if (s->kind == AstStmt::Kind::kAssign && s->value && IsBufferConstructor(CallName(s->value))) {
        DefineBuffer(*s);
      } else {
        body.push_back(s);
      }
    }
    // Attributes are built once iterators and buffers exist: an index map may
    // read one of the format's buffers (a row map).
    BuildFunctionAttrs(def.body);
    func_.body = BuildBlock(body, 0);
    PrimFunc f = MakePrimFunc(std::move(func_));
    if (f->stage == Stage::kI) VerifyStageI(f);
    return f;
  }

  static bool IsFuncAttr(const AstStmtPtr& s) {
    return s->kind == AstStmt::Kind::kExpr && CallName(s->value) == "T.func_attr";
  }

  // Reads the stage from T.func_attr first (it may come last, as in a format
  // function) and notes every iterator name so that a forward reference gets
  // a clear error.
  void PrescanFunction(const std::vector<AstStmtPtr>& body) {
    for (const AstStmtPtr& s : body) {
      if (s->kind == AstStmt::Kind::kAssign && s->target->kind == Kind::kName &&
          IsIteratorConstructor(CallName(s->value))) {
        later_iterators_[s->target->text] = s->span;
      }
    }
    for (const AstStmtPtr& s : body) {
      if (!IsFuncAttr(s)) continue;
      const AstExprPtr& call = s->value;
      if (call->children.size() != 2 || call->children[1]->kind != Kind::kDict) {
        ThrowScriptError("T.func_attr takes one dict argument", call->span);
      }
      const AstExprPtr& dict = call->children[1];
      for (size_t i = 0; i < dict->keys.size(); ++i) {
        if (dict->keys[i]->kind != Kind::kString) ThrowScriptError("attribute names must be strings", dict->keys[i]->span);
        const std::string& key = dict->keys[i]->text;
        if (key == "sparse_tir_level") {
          const AstExprPtr& v = dict->children[i];
          if (v->kind != Kind::kInt || v->int_value < 0 || v->int_value > 2) {
            ThrowScriptError("\"sparse_tir_level\" must be 2 (stage I), 1 (stage II) or 0 (stage III)", v->span);
          }
          func_.stage = static_cast<Stage>(v->int_value);
        }
      }
    }
  }

  void BuildFunctionAttrs(const std::vector<AstStmtPtr>& body) {
    for (const AstStmtPtr& s : body) {
      if (!IsFuncAttr(s)) continue;
      const AstExprPtr& dict = s->value->children[1];
      for (size_t i = 0; i < dict->keys.size(); ++i) {
        if (dict->keys[i]->text == "sparse_tir_level") continue;
        func_.attrs.emplace_back(dict->keys[i]->text, BuildAttr(dict->children[i]));
      }
    }
  }

  // ---------------------------------------------------------------- iterators
  Expr BuildIndexScalar(const AstExprPtr& e, const std::string& what) {
    Expr v = BuildExpr(e);
    if (!IsInteger(v->dtype)) {
      ThrowScriptError(what + " must be an integer, got " + ToString(v->dtype), e->span);
    }
    return v;
  }

  Var ResolveHandle(const AstExprPtr& e, const std::string& what) {
    const Symbol& s = Resolve(e);
    if (s.kind != Symbol::Kind::kParam || s.var->dtype != DataType::kHandle) {
      ThrowScriptError(what + " must be a T.handle parameter, but '" + e->text + "' is not", e->span);
    }
    return s.var;
  }

  SparseIterator ResolveIterator(const AstExprPtr& e, const std::string& what) {
    if (e->kind != Kind::kName) ThrowScriptError(what + " must be an iterator name", e->span);
    const Symbol& s = Resolve(e);
    if (s.kind != Symbol::Kind::kIterator) {
      ThrowScriptError(what + " must be an iterator, but '" + e->text + "' is not one", e->span);
    }
    return s.iterator;
  }

  // `what` names the argument in errors, e.g. "the dtype of buffer 'A'".
  DataType ParseDtypeArg(const AstExprPtr& e, DataType fallback, const std::string& what) {
    if (!e) return fallback;
    // A string, "float32", or the type's name, T.float32 (as TVMScript
    // writes both).
    const std::string dotted = DottedName(e);
    const bool named = dotted.rfind("T.", 0) == 0;
    if (e->kind != Kind::kString && !named) {
      ThrowScriptError(what + " must be a dtype string such as \"float32\" (or T.float32)", e->span);
    }
    const std::string text = named ? dotted.substr(2) : e->text;
    std::optional<DataType> dtype = ParseDataType(text);
    if (!dtype) {
      ThrowScriptError(what + ": unknown dtype \"" + text +
                           "\" (expected bool, int32, int64, float16, bfloat16, float32 or float64)",
                       e->span);
    }
    return *dtype;
  }

  // An iterator's index dtype: int32 or int64.
  DataType ParseIndexDtypeArg(const AstExprPtr& e, const std::string& where) {
    if (e && e->kind == Kind::kString && e->text != "int32" && e->text != "int64") {
      ThrowScriptError("the idtype of " + where + " must be \"int32\" or \"int64\", got \"" + e->text + "\"", e->span);
    }
    const DataType dtype = ParseDtypeArg(e, DataType::kInt32, "the idtype of " + where);
    if (dtype != DataType::kInt32 && dtype != DataType::kInt64) {  // a name: T.float32
      ThrowScriptError("the idtype of " + where + " must be int32 or int64, got " + ToString(dtype), e->span);
    }
    return dtype;
  }

  // (a, b) -> {a, b}; anything else -> error naming `what`.
  std::vector<AstExprPtr> Pair(const AstExprPtr& e, const std::string& what) {
    if ((e->kind != Kind::kTuple && e->kind != Kind::kList) || e->children.size() != 2) {
      ThrowScriptError(what, e->span);
    }
    return e->children;
  }

  void DefineIterator(const AstStmt& s) {
    if (s.target->kind != Kind::kName) ThrowScriptError("an iterator must be assigned to a name", s.target->span);
    const std::string name = s.target->text;
    const std::string callee = CallName(s.value);
    SparseIteratorNode it;
    it.name = name;
    it.span = s.target->span;
    std::string where = "iterator '" + name + "'";
    if (callee == "T.sp.fuse") {
      it.kind = IteratorKind::kFused;
      for (size_t i = 1; i < s.value->children.size(); ++i) {
        it.fused.push_back(ResolveIterator(s.value->children[i], "argument of T.sp.fuse"));
      }
      if (it.fused.size() < 2) ThrowScriptError("T.sp.fuse needs at least two iterators", s.value->span);
      it.idtype = it.fused.back()->idtype;
    } else if (callee == "T.sp.dense_fixed") {
      CallArgs args(s.value, callee, {"extent", "idtype"});
      it.kind = IteratorKind::kDenseFixed;
      it.extent = BuildIndexScalar(args.Require("extent"), "the extent of " + where);
      it.idtype = ParseIndexDtypeArg(args.Get("idtype"), where);
    } else {
      std::vector<std::string> names = {"parent", "size", "structure", "idtype", "sorted"};
      CallArgs args(s.value, callee, names);
      AstExprPtr parent = args.Require("parent");
      if (parent->kind == Kind::kName && !Lookup(parent->text) && later_iterators_.count(parent->text)) {
        ThrowScriptError(where + ": its parent '" + parent->text + "' is defined after it (at line " +
                             std::to_string(later_iterators_[parent->text].line) + ")",
                         parent->span);
      }
      it.parent = ResolveIterator(parent, "the parent of " + where);
      it.idtype = ParseIndexDtypeArg(args.Get("idtype"), where);
      if (AstExprPtr sorted = args.Get("sorted")) {
        if (sorted->kind != Kind::kBool) ThrowScriptError("sorted must be True or False", sorted->span);
        it.sorted = sorted->bool_value;
      }
      AstExprPtr size = args.Require("size");
      AstExprPtr structure = args.Require("structure");
      AstExprPtr indptr_at, indices_at;  // where each handle is written
      if (callee == "T.sp.dense_varied") {
        it.kind = IteratorKind::kDenseVaried;
        if (size->kind == Kind::kTuple || size->kind == Kind::kList) {
          auto p = Pair(size, where + ": the size is 'extent' or '(extent, nnz)'");
          it.extent = BuildIndexScalar(p[0], "the extent of " + where);
          it.nnz = BuildIndexScalar(p[1], "the nnz of " + where);
        } else {
          it.extent = BuildIndexScalar(size, "the extent of " + where);
        }
        it.indptr = ResolveHandle(structure, "the indptr of " + where);
        indptr_at = structure;
      } else if (callee == "T.sp.compressed_fixed") {
        it.kind = IteratorKind::kCompressedFixed;
        auto p = Pair(size, where + ": the size of a compressed_fixed iterator is '(extent, length)'");
        it.extent = BuildIndexScalar(p[0], "the extent of " + where);
        it.length = BuildIndexScalar(p[1], "the length of " + where);
        it.indices = ResolveHandle(structure, "the indices of " + where);
        indices_at = structure;
      } else {
        it.kind = IteratorKind::kCompressedVaried;
        auto p = Pair(size, where + ": the size of a compressed_varied iterator is '(extent, nnz)'");
        it.extent = BuildIndexScalar(p[0], "the extent of " + where);
        it.nnz = BuildIndexScalar(p[1], "the nnz of " + where);
        auto handles = Pair(structure, where + ": the structure of a compressed_varied iterator is '(indptr, indices)'");
        it.indptr = ResolveHandle(handles[0], "the indptr of " + where);
        it.indices = ResolveHandle(handles[1], "the indices of " + where);
        indptr_at = handles[0];
        indices_at = handles[1];
        if (it.indptr == it.indices) {
          ThrowScriptError(where + ": its indptr and indices must be different handles", handles[1]->span);
        }
      }
      CheckSharedStructure(it, indptr_at, indices_at);
    }
    SparseIterator made = MakeIterator(std::move(it));
    Define(name, Symbol{Symbol::Kind::kIterator, nullptr, made, nullptr}, s.target->span);
    func_.iterators.push_back(made);
  }

  // Lowering gives each structure handle one buffer, shaped by the first
  // iterator that uses it; iterators may share an array only where that shape
  // and type fit them too: in the same role, under the same parent, with the
  // same idtype.
  void CheckSharedStructure(const SparseIteratorNode& it, const AstExprPtr& indptr_at, const AstExprPtr& indices_at) {
    struct Use {
      Var handle;
      std::string role;
      AstExprPtr at;
    };
    for (const SparseIterator& other : func_.iterators) {
      for (const Use& mine : {Use{it.indptr, "indptr", indptr_at}, Use{it.indices, "indices", indices_at}}) {
        for (const Use& theirs : {Use{other->indptr, "indptr", nullptr}, Use{other->indices, "indices", nullptr}}) {
          if (!mine.handle || mine.handle != theirs.handle) continue;
          const std::string owner =
              "handle '" + mine.handle->name + "' is the " + theirs.role + " of iterator '" + other->name + "'";
          if (mine.role != theirs.role) {
            ThrowScriptError(owner + "; it cannot also be the " + mine.role + " of iterator '" + it.name + "'",
                             mine.at->span);
          }
          if (other->parent != it.parent) {
            ThrowScriptError(owner + ", whose parent is " + other->parent->name + "; iterator '" + it.name +
                                 "' (parent " + it.parent->name + ") cannot share it",
                             mine.at->span);
          }
          if (other->idtype != it.idtype) {
            ThrowScriptError(owner + ", of idtype " + ToString(other->idtype) + "; iterator '" + it.name +
                                 "' (idtype " + ToString(it.idtype) + ") cannot share it",
                             mine.at->span);
          }
        }
      }
    }
  }

  // ---------------------------------------------------------------- buffers
  static bool IsBufferConstructor(const std::string& name) {
    return name == "T.sp.match_buffer" || name == "T.sp.alloc_buffer" || name == "T.match_buffer" ||
           name == "T.alloc_buffer";
  }

  void DefineBuffer(const AstStmt& s) {
    if (s.target->kind != Kind::kName) ThrowScriptError("a buffer must be assigned to a name", s.target->span);
    const std::string callee = CallName(s.value);
    const bool sparse = callee.rfind("T.sp.", 0) == 0;
    const bool match = callee.find("match_buffer") != std::string::npos;
    BufferNode b;
    b.name = s.target->text;
    b.span = s.target->span;
    b.kind = match ? BufferKind::kMatch : BufferKind::kAlloc;
    std::vector<std::string> names;
    if (match) names.push_back("data");
    for (const char* n : {"shape", "dtype", "scope", "extra_storage", "strides"}) names.push_back(n);
    CallArgs args(s.value, callee, names);
    std::string where = "buffer '" + b.name + "'";
    if (match) {
      b.data = ResolveHandle(args.Require("data"), "the data of " + where);
      for (const Buffer& other : func_.buffers) {
        if (other->data == b.data) {
          ThrowScriptError("handle '" + b.data->name + "' is already bound to buffer '" + other->name + "'",
                           args.Require("data")->span);
        }
      }
    }
    b.dtype = ParseDtypeArg(args.Get("dtype"), DataType::kFloat32, "the dtype of " + where);
    if (b.dtype == DataType::kHandle) {
      ThrowScriptError("the dtype of " + where + " cannot be \"handle\"; a buffer holds numbers", args.Get("dtype")->span);
    }
    if (AstExprPtr scope = args.Get("scope")) {
      if (scope->kind != Kind::kString) ThrowScriptError("scope must be a string", scope->span);
      b.scope = scope->text;
      // "workspace": a stage-III parameter the host allocates, zeroed, at
      // each call (transforms/lift_workspaces.h).
      const bool workspace = b.scope == kWorkspaceScope && match && !sparse;
      if (b.scope != "global" && b.scope != "shared" && b.scope != "local" && !workspace) {
        ThrowScriptError(where + ": unknown scope \"" + b.scope + "\" (expected global, shared or local" +
                             (match && !sparse ? ", or workspace" : "") + ")",
                         scope->span);
      }
    }
    if (AstExprPtr extra = args.Get("extra_storage")) {
      if (extra->kind != Kind::kInt || extra->int_value < 0) ThrowScriptError("extra_storage must be a non-negative integer", extra->span);
      b.extra_storage = static_cast<int>(extra->int_value);
    }
    AstExprPtr shape = args.Require("shape");
    if (shape->kind != Kind::kTuple && shape->kind != Kind::kList) {
      ThrowScriptError(where + ": the shape must be a tuple or list", shape->span);
    }
    if (sparse) {
      if (func_.stage == Stage::kIII) ThrowScriptError("T.sp." + std::string(match ? "match" : "alloc") + "_buffer is not allowed at stage III", s.value->span);
      for (const AstExprPtr& axis : shape->children) {
        b.axes.push_back(ResolveIterator(axis, "each axis of " + where));
      }
      CheckAxes(b, shape);
    } else {
      if (func_.stage != Stage::kIII) {
        ThrowScriptError("T." + std::string(match ? "match" : "alloc") +
                             "_buffer takes a dense shape and belongs to stage III; use T.sp." +
                             (match ? "match" : "alloc") + "_buffer with iterators",
                         s.value->span);
      }
      for (const AstExprPtr& dim : shape->children) b.shape.push_back(BuildIndexScalar(dim, "a dimension of " + where));
    }
    Buffer made = MakeBuffer(std::move(b));
    Define(made->name, Symbol{Symbol::Kind::kBuffer, nullptr, nullptr, made}, s.target->span);
    func_.buffers.push_back(made);
  }

  // An axis with a parent must come right after it: a level's positions are
  // only meaningful under its parent's position.
  void CheckAxes(const BufferNode& b, const AstExprPtr& shape) {
    for (size_t k = 0; k < b.axes.size(); ++k) {
      const SparseIterator& axis = b.axes[k];
      if (axis->kind == IteratorKind::kFused) {
        ThrowScriptError("buffer '" + b.name + "': a fused iterator cannot be a buffer axis", shape->children[k]->span);
      }
      for (size_t j = 0; j < k; ++j) {
        if (b.axes[j] == axis) ThrowScriptError("buffer '" + b.name + "': iterator '" + axis->name + "' appears twice", shape->children[k]->span);
      }
      if (axis->parent && (k == 0 || b.axes[k - 1] != axis->parent)) {
        ThrowScriptError("buffer '" + b.name + "': axis '" + axis->name + "' must come right after its parent '" +
                             axis->parent->name + "'",
                         shape->children[k]->span);
      }
    }
  }

  // ---------------------------------------------------------------- statements
  Stmt BuildBlock(const std::vector<AstStmtPtr>& stmts, size_t start) {
    std::vector<Stmt> out;
    for (size_t i = start; i < stmts.size(); ++i) {
      const AstStmtPtr& s = stmts[i];
      if (s->kind == AstStmt::Kind::kAssign && s->target->kind == Kind::kName && IsBufferConstructor(CallName(s->value))) {
        // A buffer scoped to the rest of the block (a cache).
        if (CallName(s->value) != "T.alloc_buffer") {
          ThrowScriptError("inside a body only T.alloc_buffer may declare a buffer (a stage-III cache)", s->span);
        }
        size_t before = func_.buffers.size();
        DefineBuffer(*s);
        Buffer local = func_.buffers.back();
        func_.buffers.resize(before);  // scoped to the block, not the function
        Stmt rest = BuildBlock(stmts, i + 1);
        if (!rest) ThrowScriptError("buffer '" + local->name + "' is allocated but never used", s->span);
        out.push_back(MakeAllocate(local, rest));
        return MakeSeq(std::move(out));
      }
      if (s->kind == AstStmt::Kind::kAssign && s->target->kind == Kind::kName) {
        // A local binding: the rest of the block is its body.
        Expr value = BuildExpr(s->value);
        if (s->annotation) value = CastLiteralTo(value, AnnotationDtype(s->annotation), s->value->span);
        Var var = MakeVar(s->target->text, StrongType(value));
        PushScope();
        Define(var->name, Symbol{Symbol::Kind::kVar, var, nullptr, nullptr}, s->target->span);
        Stmt rest = BuildBlock(stmts, i + 1);
        PopScope();
        if (!rest) ThrowScriptError("'" + var->name + "' is assigned but never used", s->span);
        out.push_back(MakeLet(var, value, rest));
        return MakeSeq(std::move(out));
      }
      if (Stmt built = BuildStmt(*s)) out.push_back(built);
    }
    if (out.empty()) return nullptr;
    return MakeSeq(std::move(out));
  }

  DataType AnnotationDtype(const AstExprPtr& a) {
    std::string name = DottedName(a);
    if (name.rfind("T.", 0) == 0) {
      if (auto dtype = ParseDataType(name.substr(2))) return *dtype;
    }
    ThrowScriptError("unsupported type annotation", a->span);
  }

  Stmt BuildStmt(const AstStmt& s) {
    switch (s.kind) {
      case AstStmt::Kind::kPass: return nullptr;
      case AstStmt::Kind::kReturn:
        if (s.value && s.value->kind != Kind::kNone) ThrowScriptError("a kernel returns nothing; write outputs into buffers", s.span);
        return nullptr;
      case AstStmt::Kind::kExpr: return BuildExprStmt(s);
      case AstStmt::Kind::kAssign: return BuildStore(s.target, s.value, "", s.span);
      case AstStmt::Kind::kAugAssign: return BuildStore(s.target, s.value, s.text, s.span);
      case AstStmt::Kind::kWith: return BuildWith(s);
      case AstStmt::Kind::kFor: return BuildFor(s);
      case AstStmt::Kind::kIf: {
        Expr cond = BuildExpr(s.value);
        if (cond->dtype != DataType::kBool) ThrowScriptError("an if condition must be a bool, got " + ToString(cond->dtype), s.value->span);
        PushScope();
        Stmt then_case = BuildBlock(s.body, 0);
        PopScope();
        PushScope();
        Stmt else_case = BuildBlock(s.orelse, 0);
        PopScope();
        if (!then_case) return nullptr;
        return MakeIf(cond, then_case, else_case);
      }
      case AstStmt::Kind::kFunctionDef:
        ThrowScriptError("nested function definitions are not allowed in a kernel", s.span);
    }
    return nullptr;
  }

  Stmt BuildExprStmt(const AstStmt& s) {
    if (s.value->kind == Kind::kString) return nullptr;  // a docstring
    std::string callee = CallName(s.value);
    if (callee == "T.assume_buffer_domain") {
      const AstExprPtr& call = s.value;
      if (call->children.size() != 3) ThrowScriptError("T.assume_buffer_domain(buffer, [lo, hi])", call->span);
      const Symbol& sym = Resolve(call->children[1]);
      if (sym.kind != Symbol::Kind::kBuffer) ThrowScriptError("expected a buffer", call->children[1]->span);
      auto range = Pair(call->children[2], "the domain is written [lo, hi]");
      return MakeAssume(sym.buffer, BuildIndexScalar(range[0], "lo"), BuildIndexScalar(range[1], "hi"));
    }
    if (callee == "T.prefetch") return BuildPrefetch(s.value);
    if (callee == "T.atomic_add") return BuildAtomicAdd(s.value);
    if (callee == "T.sp.mma_sync") return BuildMma(s.value);
    if (callee == "T.sp.sync_threads") return BuildBarrier(s.value);
    if (callee == "T.sp.iteration_attr") {
      ThrowScriptError("T.sp.iteration_attr must be the first statement inside a T.sp.iteration", s.span);
    }
    if (callee == "T.func_attr") ThrowScriptError("T.func_attr belongs at the top level of the function", s.span);
    ThrowScriptError("this expression has no effect; a kernel statement stores into a buffer", s.span);
  }

  // T.sp.sync_threads(): the block's barrier (BarrierNode), in a stage-III
  // script whose threads share a buffer it allocates in shared scope.
  Stmt BuildBarrier(const AstExprPtr& call) {
    if (func_.stage != Stage::kIII) {
      ThrowScriptError("T.sp.sync_threads belongs to stage III (\"sparse_tir_level\": 0)", call->span);
    }
    if (call->children.size() != 1 || !call->keywords.empty()) {
      ThrowScriptError("T.sp.sync_threads() takes no arguments", call->span);
    }
    return MakeBarrier();
  }

  // T.prefetch(B[v3, 0], 32) or T.prefetch(B[v3, 0], 32, cache_level=2): a
  // cache hint (stage III, as the prefetch primitive prints it).
  Stmt BuildPrefetch(const AstExprPtr& call) {
    if (func_.stage != Stage::kIII) ThrowScriptError("T.prefetch belongs to stage III (\"sparse_tir_level\": 0)", call->span);
    CallArgs args(call, "T.prefetch", {"address", "extent", "cache_level"});
    const AstExprPtr address = args.Get("address"), extent = args.Get("extent"), level = args.Get("cache_level");
    if (!address || !extent || address->kind != Kind::kSubscript) {
      ThrowScriptError("T.prefetch(buffer[indices], extent, cache_level=1)", call->span);
    }
    int64_t count = 0;
    if (extent->kind != Kind::kInt || (count = extent->int_value) <= 0) {
      ThrowScriptError("the extent of a prefetch is a positive integer literal", extent->span);
    }
    int64_t cache_level = 1;
    if (level && (level->kind != Kind::kInt || ((cache_level = level->int_value) != 1 && cache_level != 2))) {
      ThrowScriptError("the cache_level of a prefetch is 1 (L1) or 2 (L2, not L1)", level->span);
    }
    return MakePrefetch(BuildExpr(address), count, static_cast<int>(cache_level));
  }

  // T.sp.mma_sync("m16n8k16", Acc[r, c], A[..], B[..], a_rows, a_cols, b_rows,
  // b_cols): a warp's tile multiply-accumulate (stage III, as the tensorize
  // primitive prints it).
  Stmt BuildMma(const AstExprPtr& call) {
    if (func_.stage != Stage::kIII) {
      ThrowScriptError("T.sp.mma_sync belongs to stage III (\"sparse_tir_level\": 0)", call->span);
    }
    if (call->children.size() != 9 || call->children[1]->kind != Kind::kString) {
      ThrowScriptError("T.sp.mma_sync(\"m16n8k16\", Acc[r, c], A[..], B[..], a_rows, a_cols, b_rows, b_cols)",
                       call->span);
    }
    if (call->children[1]->text != kMmaShape) {
      ThrowScriptError(std::string("T.sp.mma_sync knows the shape \"") + kMmaShape + "\"", call->children[1]->span);
    }
    const char* names[] = {"accumulator", "A", "B"};
    std::vector<Expr> operands;
    for (int i = 0; i < 3; ++i) {
      const AstExprPtr& operand = call->children[2 + i];
      const BufferLoadNode* load = nullptr;
      if (operand->kind == Kind::kSubscript) {
        operands.push_back(BuildExpr(operand));
        load = operands.back()->as<BufferLoadNode>();
      }
      if (!load || (i == 0 && load->indices.size() < 2)) {
        ThrowScriptError(std::string("the mma's ") + names[i] +
                             (i == 0 ? " is an element of a buffer of two or more dimensions" : " is a buffer element"),
                         operand->span);
      }
      const DataType dtype = load->buffer->dtype;
      const bool ok = i == 0 ? AccumulatesInFloat32(load->buffer.get())
                             : dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
      if (!ok) {
        ThrowScriptError(std::string("the mma's ") + names[i] + " '" + load->buffer->name + "' is " + ToString(dtype) +
                             (i == 0 ? " in " + load->buffer->scope + " scope; it accumulates in float32 (a float32 "
                                       "buffer, or a 16-bit local one)"
                                     : "; it multiplies float16 or bfloat16"),
                         operand->span);
      }
    }
    if (operands[1]->as<BufferLoadNode>()->buffer->dtype != operands[2]->as<BufferLoadNode>()->buffer->dtype) {
      ThrowScriptError("the mma's A and B differ in dtype", call->span);
    }
    const char* stride_names[] = {"a_rows", "a_cols", "b_rows", "b_cols"};
    std::array<Expr, 4> strides;
    for (size_t s = 0; s < strides.size(); ++s) strides[s] = BuildIndexScalar(call->children[5 + s], stride_names[s]);
    return MakeMma(kMmaShape, operands[0], operands[1], operands[2], strides);
  }

  // T.atomic_add(C[i, k], value): an indivisible C[i, k] += value.
  Stmt BuildAtomicAdd(const AstExprPtr& call) {
    if (call->children.size() != 3 || call->children[1]->kind != Kind::kSubscript) {
      ThrowScriptError("T.atomic_add(buffer[indices], value)", call->span);
    }
    Expr target = BuildExpr(call->children[1]);
    const auto* load = target->as<BufferLoadNode>();
    if (!load || !IsFloat(load->buffer->dtype)) {
      ThrowScriptError("T.atomic_add adds into an element of a floating-point buffer", call->children[1]->span);
    }
    Expr value = CastLiteralTo(BuildExpr(call->children[2]), load->buffer->dtype, call->children[2]->span);
    if (value->dtype != load->buffer->dtype) {
      ThrowScriptError("dtype mismatch: adding a " + ToString(value->dtype) + " value into buffer '" +
                           load->buffer->name + "' of " + ToString(load->buffer->dtype),
                       call->children[2]->span);
    }
    return MakeAtomicAdd(target, value);
  }

  Stmt BuildStore(const AstExprPtr& target, const AstExprPtr& value_ast, const std::string& aug_op, const Span& span) {
    if (target->kind != Kind::kSubscript) {
      ThrowScriptError("can only assign to a buffer element such as C[i, k]", target->span);
    }
    Expr load = BuildExpr(target);
    const auto* node = load->as<BufferLoadNode>();
    Expr value = BuildExpr(value_ast);
    if (!aug_op.empty()) value = Binary(aug_op, load, value, span);
    value = CastLiteralTo(value, node->buffer->dtype, value_ast->span);
    if (value->dtype != node->buffer->dtype) {
      ThrowScriptError("dtype mismatch: storing a " + ToString(value->dtype) + " value into buffer '" +
                           node->buffer->name + "' of dtype " + ToString(node->buffer->dtype) + "; use T.Cast",
                       value_ast->span);
    }
    Stmt store = MakeStore(node->buffer, node->indices, value);
    const_cast<StmtNode*>(store.get())->span = span;
    return store;
  }

  // Names of iterations and blocks reach generated code (as comments and as
  // the names of derived iterations): only plain identifiers are accepted.
  static void CheckName(const std::string& name, const std::string& what, const Span& span) {
    if (IsScriptName(name)) return;
    std::string shown = name.size() > 40 ? name.substr(0, 40) + "..." : name;
    ThrowScriptError(what + " must be an identifier of ASCII letters, digits and '_' (at most " +
                         std::to_string(kMaxScriptNameLength) + " characters, not starting with a digit), got '" +
                         CommentText(shown) + "'",
                     span);
  }

  Stmt BuildWith(const AstStmt& s) {
    std::string callee = CallName(s.value);
    if (callee == "T.sp.iteration") return BuildIteration(s);
    if (callee == "T.init") ThrowScriptError("'with T.init()' is only allowed directly inside a T.sp.iteration", s.span);
    if (callee == "T.block") {
      if (func_.stage == Stage::kI) ThrowScriptError("T.block belongs to stages II and III", s.span);
      const AstExprPtr& call = s.value;
      if (call->children.size() != 2 || call->children[1]->kind != Kind::kString) {
        ThrowScriptError("T.block takes the block's name as a string", call->span);
      }
      CheckName(call->children[1]->text, "the name of T.block", call->children[1]->span);
      PushScope();
      Stmt body = BuildBlock(s.body, 0);
      PopScope();
      if (!body) ThrowScriptError("block '" + call->children[1]->text + "' is empty", s.span);
      return MakeBlock(call->children[1]->text, body);
    }
    ThrowScriptError("unsupported 'with' statement; expected 'with T.sp.iteration(...)'", s.value->span);
  }

  Stmt BuildIteration(const AstStmt& s) {
    if (func_.stage != Stage::kI) ThrowScriptError("T.sp.iteration belongs to stage I (\"sparse_tir_level\": 2)", s.span);
    CallArgs args(s.value, "T.sp.iteration", {"iterators", "roles", "name"});
    AstExprPtr its = args.Require("iterators");
    AstExprPtr roles = args.Require("roles");
    AstExprPtr name = args.Require("name");
    if (its->kind != Kind::kList && its->kind != Kind::kTuple) ThrowScriptError("the iterators of T.sp.iteration must be a list", its->span);
    if (roles->kind != Kind::kString) ThrowScriptError("the roles of T.sp.iteration must be a string of 'S' and 'R'", roles->span);
    if (name->kind != Kind::kString) ThrowScriptError("the name of T.sp.iteration must be a string", name->span);
    CheckName(name->text, "the name of T.sp.iteration", name->span);
    SparseIterationNode node;
    node.name = name->text;
    node.roles = roles->text;
    std::string where = "iteration '" + node.name + "'";
    if (enclosing_iteration_) {
      ThrowScriptError(where + " is nested inside iteration '" + *enclosing_iteration_ +
                           "'; sparse iterations cannot be nested",
                       s.span);
    }
    // A fused iterator (F = T.sp.fuse(I, J)) stands for its iterators in
    // order, walked as one loop: the iteration lists them and records the
    // "sparse_fuse" attribute, as sch.sparse_fuse would. Its S/R letter may be
    // given once for all constituents; it binds one variable per constituent.
    std::shared_ptr<AttrValue> fused_names;
    std::vector<size_t> fused_at;  // the list position of the fused iterator, and how many it expands to
    for (const AstExprPtr& e : its->children) {
      SparseIterator it = ResolveIterator(e, "each element of the iterator list of " + where);
      std::vector<SparseIterator> parts = {it};
      if (it->kind == IteratorKind::kFused) {
        if (fused_names) ThrowScriptError(where + ": at most one fused iterator per iteration", e->span);
        parts = it->fused;
        fused_names = std::make_shared<AttrValue>();
        fused_names->kind = AttrValue::Kind::kList;
        fused_at = {node.iterators.size(), parts.size()};
      }
      for (const SparseIterator& part : parts) {
        for (const SparseIterator& seen : node.iterators) {
          if (seen == part) ThrowScriptError(where + ": iterator '" + part->name + "' appears twice", e->span);
        }
        node.iterators.push_back(part);
        if (it->kind == IteratorKind::kFused) {
          auto item = std::make_shared<AttrValue>();
          item->kind = AttrValue::Kind::kString;
          item->string_value = part->name;
          fused_names->items.push_back(item);
        }
      }
    }
    if (fused_names) {
      node.attrs.emplace_back("sparse_fuse", fused_names);
      // One letter for the whole fused iterator expands to one per constituent.
      if (node.roles.size() + fused_at[1] - 1 == node.iterators.size() && fused_at[0] < node.roles.size()) {
        node.roles.insert(fused_at[0], std::string(fused_at[1] - 1, node.roles[fused_at[0]]));
      }
    }
    if (node.roles.size() != node.iterators.size()) {
      ThrowScriptError(where + ": the S/R string \"" + node.roles + "\" has " + std::to_string(node.roles.size()) +
                           " letters but the iteration has " + std::to_string(node.iterators.size()) + " iterators",
                       roles->span);
    }
    for (char c : node.roles) {
      if (c != 'S' && c != 'R') {
        ThrowScriptError(where + ": the S/R string \"" + node.roles + "\" holds '" + std::string(1, c) +
                             "'; it may only hold 'S' (spatial) and 'R' (reduction)",
                         roles->span);
      }
    }
    std::vector<AstExprPtr> targets;
    if (!s.target) ThrowScriptError(where + ": bind its variables with 'as [i, j, ...]'", s.span);
    if (s.target->kind == Kind::kList || s.target->kind == Kind::kTuple) {
      targets = s.target->children;
    } else {
      targets = {s.target};
    }
    if (targets.size() != node.iterators.size()) {
      ThrowScriptError(where + " binds " + std::to_string(targets.size()) + " variables but has " +
                           std::to_string(node.iterators.size()) + " iterators",
                       s.target->span);
    }
    PushScope();
    for (size_t t = 0; t < targets.size(); ++t) {
      if (targets[t]->kind != Kind::kName) ThrowScriptError("iteration variables must be names", targets[t]->span);
      Var v = MakeVar(targets[t]->text, node.iterators[t]->idtype);
      const_cast<VarNode*>(v.get())->span = targets[t]->span;
      Define(v->name, Symbol{Symbol::Kind::kVar, v, nullptr, nullptr}, targets[t]->span);
      node.vars.push_back(v);
    }
    enclosing_iteration_ = node.name;
    std::vector<AstStmtPtr> body;
    for (size_t k = 0; k < s.body.size(); ++k) {
      const AstStmtPtr& stmt = s.body[k];
      if (stmt->kind == AstStmt::Kind::kExpr && CallName(stmt->value) == "T.sp.iteration_attr") {
        if (k != 0) ThrowScriptError("T.sp.iteration_attr must be the first statement of the iteration", stmt->span);
        const AstExprPtr& call = stmt->value;
        if (call->children.size() != 2 || call->children[1]->kind != Kind::kDict) {
          ThrowScriptError("T.sp.iteration_attr takes one dict argument", call->span);
        }
        AttrPtr dict = BuildAttr(call->children[1]);
        for (const auto& [key, value] : dict->entries) {
          if (key->kind != AttrValue::Kind::kString) ThrowScriptError("attribute names must be strings", call->span);
          node.attrs.emplace_back(key->string_value, value);
        }
      } else if (stmt->kind == AstStmt::Kind::kWith && CallName(stmt->value) == "T.init") {
        if (node.init) ThrowScriptError(where + " has more than one T.init() block", stmt->span);
        PushScope();
        node.init = BuildBlock(stmt->body, 0);
        PopScope();
        if (!node.init) ThrowScriptError(where + ": the T.init() block is empty", stmt->span);
      } else {
        body.push_back(stmt);
      }
    }
    node.body = BuildBlock(body, 0);
    enclosing_iteration_.reset();
    PopScope();
    if (!node.body) ThrowScriptError(where + " has an empty body", s.span);
    Stmt made = MakeIteration(std::move(node));
    const_cast<StmtNode*>(made.get())->span = s.span;
    return made;
  }

  Stmt BuildFor(const AstStmt& s) {
    if (func_.stage == Stage::kI) ThrowScriptError("for loops belong to stages II and III; at stage I use T.sp.iteration", s.span);
    std::string callee = CallName(s.value);
    static const std::map<std::string, ForKind> kKinds = {
        {"T.serial", ForKind::kSerial}, {"range", ForKind::kSerial}, {"T.parallel", ForKind::kParallel},
        {"T.vectorized", ForKind::kVectorized}, {"T.unroll", ForKind::kUnrolled}, {"T.grid", ForKind::kSerial},
        {"T.thread_binding", ForKind::kThreadBinding}};
    auto kind = kKinds.find(callee);
    if (kind == kKinds.end()) ThrowScriptError("unsupported loop; use T.serial, T.parallel, T.vectorized, T.unroll, T.thread_binding or T.grid", s.value->span);
    std::vector<AstExprPtr> targets = s.target->kind == Kind::kTuple ? s.target->children : std::vector<AstExprPtr>{s.target};
    std::vector<std::pair<Expr, Expr>> ranges;  // (min, extent)
    const auto& args = s.value->children;
    std::string thread_tag;
    for (const auto& [key, value] : s.value->keywords) {
      if (key != "thread" || callee != "T.thread_binding" || value->kind != Kind::kString) {
        ThrowScriptError(callee + " got an unexpected keyword argument '" + key + "'", value->span);
      }
      thread_tag = value->text;
    }
    if (callee == "T.thread_binding" && thread_tag.empty()) ThrowScriptError("T.thread_binding needs thread=\"...\"", s.value->span);
    if (callee == "T.grid") {
      for (size_t i = 1; i < args.size(); ++i) ranges.emplace_back(nullptr, BuildIndexScalar(args[i], "a T.grid extent"));
    } else if (args.size() == 2) {
      ranges.emplace_back(nullptr, BuildIndexScalar(args[1], "a loop extent"));
    } else if (args.size() == 3) {
      Expr begin = BuildIndexScalar(args[1], "a loop start");
      Expr end = BuildIndexScalar(args[2], "a loop end");
      ranges.emplace_back(begin, MakeBinary(BinaryOp::kSub, end, begin));
    } else {
      ThrowScriptError(callee + " takes (extent) or (begin, end)", s.value->span);
    }
    if (targets.size() != ranges.size()) ThrowScriptError("the loop binds " + std::to_string(targets.size()) + " variables for " + std::to_string(ranges.size()) + " ranges", s.target->span);
    PushScope();
    std::vector<Var> vars;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i]->kind != Kind::kName) ThrowScriptError("loop variables must be names", targets[i]->span);
      Var v = MakeVar(targets[i]->text, StrongType(ranges[i].second));
      Define(v->name, Symbol{Symbol::Kind::kVar, v, nullptr, nullptr}, targets[i]->span);
      vars.push_back(v);
    }
    Stmt body = BuildBlock(s.body, 0);
    PopScope();
    if (!body) return nullptr;
    for (size_t i = vars.size(); i-- > 0;) {
      Expr min = ranges[i].first ? ranges[i].first : IntLike(0, ranges[i].second);
      body = MakeFor(vars[i], min, ranges[i].second, kind->second, body, thread_tag);
    }
    return body;
  }

  // ---------------------------------------------------------------- expressions
  bool IsWeak(const Expr& e) const { return weak_.count(e.get()) > 0; }
  Expr Weak(Expr e) {
    weak_.insert(e.get());
    literals_.push_back(e);  // keep alive so the address is not reused
    return e;
  }
  DataType StrongType(const Expr& e) { return e->dtype; }

  // A count of lanes: a constant power of two from 1 to `most`, or the name
  // of an integer parameter that the schedule specializes to one (the code
  // generator checks it then). `what` says what the lanes are, if anything.
  Expr PowerOfTwoLanes(const std::string& callee, const AstExprPtr& e, int64_t most, const std::string& what) {
    if (e->kind == Kind::kName) {
      const Symbol* s = Lookup(e->text);
      if (s && s->kind == Symbol::Kind::kParam && IsInteger(s->var->dtype)) return s->var;
    }
    const Expr lanes = BuildExpr(e);
    const int64_t* count = AsConstInt(lanes);
    if (!count || *count < 1 || *count > most || (*count & (*count - 1)) != 0) {
      ThrowScriptError(callee + ": the lanes must be a constant power of two from 1 to " + std::to_string(most) +
                           what + ", or an integer parameter specialized to one",
                       e->span);
    }
    return MakeInt(*count);
  }

  // The `lanes` argument of a lane operation: a group of consecutive lanes
  // within a warp.
  Expr LaneGroup(const std::string& callee, const AstExprPtr& e) {
    return PowerOfTwoLanes(callee, e, 32, " (a group within a warp)");
  }

  // Gives an untyped literal the type its context asks for.
  Expr CastLiteralTo(const Expr& e, DataType dtype, const Span& span) {
    if (!IsWeak(e) || e->dtype == dtype) return e;
    if (const auto* i = e->as<IntImmNode>()) {
      if (IsFloat(dtype)) return Weak(MakeFloat(static_cast<double>(i->value), dtype));
      if (IsInteger(dtype)) return Weak(MakeInt(i->value, dtype));
    }
    if (const auto* f = e->as<FloatImmNode>()) {
      if (IsFloat(dtype)) return Weak(MakeFloat(f->value, dtype));
      ThrowScriptError("dtype mismatch: a float literal where " + ToString(dtype) + " is expected", span);
    }
    return e;
  }

  // "buffer 'A' (float32)" for a load, "'x' (int32)" for a variable, else the dtype.
  static std::string DescribeOperand(const Expr& e) {
    const std::string dtype = ToString(e->dtype);
    if (const auto* load = e->as<BufferLoadNode>()) return "buffer '" + load->buffer->name + "' (" + dtype + ")";
    if (const auto* var = e->as<VarNode>()) return "'" + var->name + "' (" + dtype + ")";
    return dtype;
  }

  void UnifyOperands(Expr* a, Expr* b, const std::string& op, const Span& span) {
    if ((*a)->dtype == (*b)->dtype) return;
    if (IsWeak(*a) && !IsWeak(*b)) { *a = CastLiteralTo(*a, (*b)->dtype, span); }
    else if (IsWeak(*b) && !IsWeak(*a)) { *b = CastLiteralTo(*b, (*a)->dtype, span); }
    else if (IsWeak(*a) && IsWeak(*b)) {
      if (IsFloat((*a)->dtype)) *b = CastLiteralTo(*b, (*a)->dtype, span);
      else *a = CastLiteralTo(*a, (*b)->dtype, span);
    }
    if ((*a)->dtype == (*b)->dtype) return;
    if (IsInteger((*a)->dtype) && IsInteger((*b)->dtype)) return;  // widened by the factory
    ThrowScriptError("dtype mismatch in '" + op + "': " + DescribeOperand(*a) + " and " + DescribeOperand(*b) +
                         "; use T.Cast to convert",
                     span);
  }

  // An integer division or remainder by the constant 0 has no value.
  static void CheckDivisor(BinaryOp op, const Expr& divisor, const std::string& what, const Span& span) {
    const bool division = op == BinaryOp::kDiv || op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod;
    const auto* imm = divisor->as<IntImmNode>();
    if (division && imm && imm->value == 0) ThrowScriptError(what + " by zero", span);
  }

  Expr Binary(const std::string& op, Expr a, Expr b, const Span& span) {
    bool weak = IsWeak(a) && IsWeak(b);
    UnifyOperands(&a, &b, op, span);
    static const std::map<std::string, BinaryOp> kOps = {
        {"+", BinaryOp::kAdd}, {"-", BinaryOp::kSub}, {"*", BinaryOp::kMul}, {"/", BinaryOp::kDiv},
        {"//", BinaryOp::kFloorDiv}, {"%", BinaryOp::kFloorMod}, {"==", BinaryOp::kEQ}, {"!=", BinaryOp::kNE},
        {"<", BinaryOp::kLT}, {"<=", BinaryOp::kLE}, {">", BinaryOp::kGT}, {">=", BinaryOp::kGE},
        {"and", BinaryOp::kAnd}, {"or", BinaryOp::kOr}, {"min", BinaryOp::kMin}, {"max", BinaryOp::kMax}};
    if (op == "**") {
      if (!IsFloat(a->dtype)) ThrowScriptError("'**' needs float operands, got " + ToString(a->dtype), span);
      return MakeCall(Intrinsic::kPow, {a, b}, a->dtype);
    }
    BinaryOp bop = kOps.at(op);
    if (IsLogical(bop)) {
      if (a->dtype != DataType::kBool) ThrowScriptError("'" + op + "' needs bool operands, got " + ToString(a->dtype), span);
    } else if (!IsNumeric(a->dtype)) {
      ThrowScriptError("'" + op + "' needs numeric operands, got " + ToString(a->dtype), span);
    }
    if (bop == BinaryOp::kDiv && IsInteger(a->dtype)) {
      if (!weak) ThrowScriptError("'/' on integers: use '//' (floor division) or T.truncdiv", span);
      bop = BinaryOp::kFloorDiv;
    }
    if ((bop == BinaryOp::kFloorDiv || bop == BinaryOp::kFloorMod) && !IsInteger(a->dtype)) {
      ThrowScriptError("'" + op + "' needs integer operands, got " + ToString(a->dtype), span);
    }
    if (IsInteger(a->dtype)) CheckDivisor(bop, b, "'" + op + "'", span);
    Expr e = MakeBinary(bop, a, b);
    const_cast<ExprNode*>(e.get())->span = span;
    return weak ? Weak(e) : e;
  }

  Expr BuildExpr(const AstExprPtr& e) {
    // Long operator chains (a + a + ... + a) nest without brackets; bound them
    // here so every later recursive walk of the IR stays shallow.
    struct Depth {
      explicit Depth(int* d, const Span& span) : depth(d) {
        if (++*depth > 1000) ThrowScriptError("expression nested too deeply (more than 1000 levels)", span);
      }
      ~Depth() { --*depth; }
      int* depth;
    } depth(&expr_depth_, e->span);
    switch (e->kind) {
      case Kind::kInt: {
        bool wide = e->int_value > INT32_MAX || e->int_value < INT32_MIN;
        return Weak(MakeInt(e->int_value, wide ? DataType::kInt64 : DataType::kInt32));
      }
      case Kind::kFloat: return Weak(MakeFloat(e->float_value, DataType::kFloat32));
      case Kind::kBool: return MakeBool(e->bool_value);
      case Kind::kName: return BuildName(e);
      case Kind::kAttribute:
        // T.inf: the identity of max/min reductions; it takes its dtype from
        // context like any other literal (C[i, k] = -T.inf).
        if (DottedName(e) == "T.inf") return Weak(MakeFloat(std::numeric_limits<double>::infinity(), DataType::kFloat32));
        ThrowScriptError("unknown name '" + DottedName(e) + "'", e->span);
      case Kind::kSubscript: return BuildLoad(e);
      case Kind::kBinary: return Binary(e->text, BuildExpr(e->children[0]), BuildExpr(e->children[1]), e->span);
      case Kind::kCompare: return Binary(e->text, BuildExpr(e->children[0]), BuildExpr(e->children[1]), e->span);
      case Kind::kBoolOp: return Binary(e->text, BuildExpr(e->children[0]), BuildExpr(e->children[1]), e->span);
      case Kind::kUnary: {
        Expr a = BuildExpr(e->children[0]);
        if (e->text == "+") return a;
        if (e->text == "not") {
          if (a->dtype != DataType::kBool) ThrowScriptError("'not' needs a bool, got " + ToString(a->dtype), e->span);
          return MakeUnary(UnaryOp::kNot, a);
        }
        if (!IsNumeric(a->dtype)) ThrowScriptError("cannot negate a " + ToString(a->dtype), e->span);
        if (const auto* i = a->as<IntImmNode>()) return IsWeak(a) ? Weak(MakeInt(-i->value, a->dtype)) : MakeInt(-i->value, a->dtype);
        if (const auto* f = a->as<FloatImmNode>()) return IsWeak(a) ? Weak(MakeFloat(-f->value, a->dtype)) : MakeFloat(-f->value, a->dtype);
        return MakeUnary(UnaryOp::kNeg, a);
      }
      case Kind::kIfExp: {
        Expr cond = BuildExpr(e->children[0]);
        if (cond->dtype != DataType::kBool) ThrowScriptError("a condition must be a bool", e->children[0]->span);
        Expr a = BuildExpr(e->children[1]), b = BuildExpr(e->children[2]);
        UnifyOperands(&a, &b, "if-else", e->span);
        return MakeSelect(cond, a, b);
      }
      case Kind::kCall: return BuildCall(e);
      case Kind::kString: ThrowScriptError("a string is not a value in a kernel expression", e->span);
      case Kind::kNone: ThrowScriptError("None is not a value in a kernel expression", e->span);
      case Kind::kLambda: ThrowScriptError("a lambda is only allowed inside an attribute", e->span);
      default: break;
    }
    ThrowScriptError("unsupported expression", e->span);
  }

  Expr BuildName(const AstExprPtr& e) {
    const Symbol& s = Resolve(e);
    switch (s.kind) {
      case Symbol::Kind::kParam:
        if (s.var->dtype == DataType::kHandle) {
          ThrowScriptError("handle '" + e->text + "' cannot be used as a value; bind it to a buffer with T.sp.match_buffer", e->span);
        }
        return s.var;
      case Symbol::Kind::kVar: return s.var;
      case Symbol::Kind::kIterator:
        ThrowScriptError("iterator '" + e->text + "' cannot be used as a value; use the variable bound by T.sp.iteration", e->span);
      case Symbol::Kind::kBuffer:
        ThrowScriptError("buffer '" + e->text + "' cannot be used as a value; index it, e.g. " + e->text + "[i]", e->span);
    }
    return nullptr;
  }

  Expr BuildLoad(const AstExprPtr& e) {
    const AstExprPtr& base = e->children[0];
    if (base->kind != Kind::kName) ThrowScriptError("only buffers can be indexed", base->span);
    const Symbol& s = Resolve(base);
    if (s.kind == Symbol::Kind::kParam && s.var->dtype == DataType::kHandle) {
      for (const Buffer& b : func_.buffers) {
        if (b->data == s.var) {
          ThrowScriptError("handle '" + base->text + "' cannot be indexed; index the buffer '" + b->name +
                               "' bound to it by T.sp.match_buffer",
                           base->span);
        }
      }
    }
    if (s.kind != Symbol::Kind::kBuffer) ThrowScriptError("'" + base->text + "' is not a buffer and cannot be indexed", base->span);
    const Buffer& buffer = s.buffer;
    size_t rank = func_.stage == Stage::kIII ? buffer->shape.size() : buffer->axes.size();
    size_t given = e->children.size() - 1;
    if (given != rank) {
      ThrowScriptError("buffer '" + buffer->name + "' has " + std::to_string(rank) + " dimensions but is indexed with " +
                           std::to_string(given) + " indices",
                       e->span);
    }
    std::vector<Expr> indices;
    for (size_t k = 1; k < e->children.size(); ++k) {
      Expr index = BuildExpr(e->children[k]);
      if (!IsInteger(index->dtype)) {
        ThrowScriptError("index " + std::to_string(k - 1) + " of buffer '" + buffer->name +
                             "' must be an integer, got " + ToString(index->dtype),
                         e->children[k]->span);
      }
      indices.push_back(index);
    }
    Expr load = MakeLoad(buffer, std::move(indices));
    const_cast<ExprNode*>(load.get())->span = e->span;
    return load;
  }

  Expr BuildCall(const AstExprPtr& e) {
    std::string callee = DottedName(e->children[0]);
    std::vector<AstExprPtr> args(e->children.begin() + 1, e->children.end());
    auto arity = [&](size_t n) {
      if (args.size() != n || !e->keywords.empty()) {
        ThrowScriptError(callee + " takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s"), e->span);
      }
    };
    static const std::map<std::string, Intrinsic> kMath = {
        {"T.exp", Intrinsic::kExp}, {"T.log", Intrinsic::kLog}, {"T.sqrt", Intrinsic::kSqrt},
        {"T.abs", Intrinsic::kAbs}, {"T.pow", Intrinsic::kPow}};
    if (auto m = kMath.find(callee); m != kMath.end()) {
      arity(m->second == Intrinsic::kPow ? 2 : 1);
      std::vector<Expr> values;
      for (const auto& a : args) values.push_back(BuildExpr(a));
      if (values.size() == 2) UnifyOperands(&values[0], &values[1], callee, e->span);
      if (m->second == Intrinsic::kAbs && IsInteger(values[0]->dtype)) return MakeCall(Intrinsic::kAbs, values, values[0]->dtype);
      if (IsWeak(values[0]) && values.size() == 1) values[0] = CastLiteralTo(values[0], DataType::kFloat32, e->span);
      if (!IsFloat(values[0]->dtype)) ThrowScriptError(callee + " needs a float argument, got " + ToString(values[0]->dtype), args[0]->span);
      return MakeCall(m->second, values, values[0]->dtype);
    }
    if (callee == "T.min" || callee == "T.max" || callee == "min" || callee == "max") {
      arity(2);
      return Binary(callee.back() == 'n' ? "min" : "max", BuildExpr(args[0]), BuildExpr(args[1]), e->span);
    }
    if (callee == "T.floordiv" || callee == "T.floormod" || callee == "T.truncdiv") {
      arity(2);
      Expr a = BuildExpr(args[0]), b = BuildExpr(args[1]);
      UnifyOperands(&a, &b, callee, e->span);
      if (!IsInteger(a->dtype)) ThrowScriptError(callee + " needs integer operands", e->span);
      BinaryOp op = callee == "T.floordiv" ? BinaryOp::kFloorDiv : callee == "T.floormod" ? BinaryOp::kFloorMod : BinaryOp::kDiv;
      CheckDivisor(op, b, callee, e->span);
      return MakeBinary(op, a, b);
    }
    if (callee == "T.Select" || callee == "T.if_then_else") {
      arity(3);
      Expr cond = BuildExpr(args[0]);
      if (cond->dtype != DataType::kBool) ThrowScriptError(callee + ": the condition must be a bool", args[0]->span);
      Expr a = BuildExpr(args[1]), b = BuildExpr(args[2]);
      UnifyOperands(&a, &b, callee, e->span);
      return MakeSelect(cond, a, b);
    }
    if (callee == "T.Cast") {
      arity(2);
      DataType dtype = ParseDtypeArg(args[0], DataType::kVoid, "the target dtype of T.Cast");
      if (dtype == DataType::kHandle) ThrowScriptError("T.Cast cannot convert to \"handle\"", args[0]->span);
      return MakeCast(dtype, BuildExpr(args[1]));
    }
    if (callee.rfind("T.", 0) == 0 && ParseDataType(callee.substr(2)) && callee != "T.handle") {
      arity(1);
      DataType dtype = *ParseDataType(callee.substr(2));
      Expr v = BuildExpr(args[0]);
      if (const auto* i = v->as<IntImmNode>(); i && IsWeak(v)) {
        return IsFloat(dtype) ? MakeFloat(static_cast<double>(i->value), dtype) : MakeInt(i->value, dtype);
      }
      if (const auto* f = v->as<FloatImmNode>(); f && IsWeak(v) && IsFloat(dtype)) return MakeFloat(f->value, dtype);
      return MakeCast(dtype, v);
    }
    if (callee == "T.inf") ThrowScriptError("T.inf is a constant, not a function", e->span);
    if (callee == "T.sp.lane_sum" || callee == "T.sp.lane_max" || callee == "T.sp.lane_min") {
      // T.sp.lane_sum(value, lanes): `value` combined over the caller's group
      // of `lanes` consecutive lanes along threadIdx.x (cuda); every lane of
      // the group must reach it, and every lane gets the result.
      arity(2);
      Expr value = BuildExpr(args[0]);
      if (IsWeak(value)) value = CastLiteralTo(value, DataType::kFloat32, args[0]->span);
      if (!IsFloat(value->dtype) && !IsInteger(value->dtype)) {
        ThrowScriptError(callee + " combines a number, got " + ToString(value->dtype), args[0]->span);
      }
      const Intrinsic op = callee == "T.sp.lane_sum" ? Intrinsic::kLaneSum
                           : callee == "T.sp.lane_max" ? Intrinsic::kLaneMax
                                                       : Intrinsic::kLaneMin;
      return MakeCall(op, {value, LaneGroup(callee, args[1])}, value->dtype);
    }
    if (callee == "T.sp.lane_shuffle") {
      // T.sp.lane_shuffle(value, source, lanes): the `value` of lane `source`
      // (counted from the group's first lane) of the caller's group of
      // `lanes` consecutive lanes along threadIdx.x (cuda), given to every
      // lane of the group; every lane of the group must reach it.
      arity(3);
      Expr value = BuildExpr(args[0]);
      if (IsWeak(value)) value = CastLiteralTo(value, DataType::kFloat32, args[0]->span);
      if (!IsFloat(value->dtype) && !IsInteger(value->dtype)) {
        ThrowScriptError(callee + " passes a number, got " + ToString(value->dtype), args[0]->span);
      }
      const Expr source = BuildIndexScalar(args[1], "the source lane of T.sp.lane_shuffle");
      return MakeCall(Intrinsic::kLaneShuffle, {value, MakeCast(DataType::kInt32, source), LaneGroup(callee, args[2])},
                      value->dtype);
    }
    if (callee == "T.sp.horizontal_sum") {
      // T.sp.horizontal_sum(buffer[..., first], lanes): the sum of the
      // `lanes` consecutive elements of a local buffer's last axis that start
      // at the one named (a vector's partial sums folded into one).
      arity(2);
      const Expr first = BuildExpr(args[0]);
      const auto* load = first->as<BufferLoadNode>();
      if (!load) {
        ThrowScriptError(callee + " sums a span of a buffer: its first argument names the span's first element, "
                         "as in P[q, 0]", args[0]->span);
      }
      if (load->buffer->scope != "local") {
        ThrowScriptError(callee + " sums a span of a local buffer (T.alloc_buffer(..., scope=\"local\")); '" +
                         load->buffer->name + "' is in scope \"" + load->buffer->scope + "\"", args[0]->span);
      }
      if (load->indices.empty()) {
        ThrowScriptError(callee + " sums along a buffer's last axis; '" + load->buffer->name + "' has no axes",
                         args[0]->span);
      }
      if (!IsFloat(load->dtype)) {
        ThrowScriptError(callee + " sums floating-point elements; '" + load->buffer->name + "' holds " +
                         ToString(load->dtype), args[0]->span);
      }
      return MakeCall(Intrinsic::kHorizontalSum, {first, PowerOfTwoLanes(callee, args[1], kMaxHorizontalSumLanes, "")},
                      load->dtype);
    }
    if (callee == "T.sp.lower_bound") {
      // T.sp.lower_bound(array_handle, begin, end, value): the first position in
      // [begin, end) whose element is >= value (end if none).
      arity(4);
      std::vector<Expr> values = {ResolveHandle(args[0], "the array of T.sp.lower_bound")};
      for (size_t k = 1; k < 4; ++k) values.push_back(BuildIndexScalar(args[k], "an argument of T.sp.lower_bound"));
      return MakeCall(Intrinsic::kLowerBound, values, values[1]->dtype);
    }
    if (callee == "T.sp.sync_threads") {
      ThrowScriptError("T.sp.sync_threads() is a statement of its own (the block's barrier); it has no value",
                       e->children[0]->span);
    }
    ThrowScriptError("unknown function '" + (callee.empty() ? std::string("<expression>") : callee) + "'", e->children[0]->span);
  }

  // ---------------------------------------------------------------- attributes
  AttrPtr BuildAttr(const AstExprPtr& e) {
    auto a = std::make_shared<AttrValue>();
    switch (e->kind) {
      case Kind::kNone: a->kind = AttrValue::Kind::kNone; break;
      case Kind::kBool: a->kind = AttrValue::Kind::kBool; a->bool_value = e->bool_value; break;
      case Kind::kInt: a->kind = AttrValue::Kind::kInt; a->int_value = e->int_value; break;
      case Kind::kFloat: a->kind = AttrValue::Kind::kFloat; a->float_value = e->float_value; break;
      case Kind::kString: a->kind = AttrValue::Kind::kString; a->string_value = e->text; break;
      case Kind::kList:
      case Kind::kTuple:
        a->kind = e->kind == Kind::kList ? AttrValue::Kind::kList : AttrValue::Kind::kTuple;
        for (const auto& c : e->children) a->items.push_back(BuildAttr(c));
        break;
      case Kind::kDict:
        a->kind = AttrValue::Kind::kDict;
        for (size_t i = 0; i < e->keys.size(); ++i) a->entries.emplace_back(BuildAttr(e->keys[i]), BuildAttr(e->children[i]));
        break;
      case Kind::kLambda: {
        a->kind = AttrValue::Kind::kLambda;
        PushScope();
        for (const std::string& p : e->params) {
          Var v = MakeVar(p, DataType::kInt32);
          Define(p, Symbol{Symbol::Kind::kVar, v, nullptr, nullptr}, e->span);
          a->lambda_params.push_back(v);
        }
        const AstExprPtr& body = e->children[0];
        std::vector<AstExprPtr> parts = body->kind == Kind::kTuple ? body->children : std::vector<AstExprPtr>{body};
        for (const auto& part : parts) {
          auto item = std::make_shared<AttrValue>();
          item->kind = AttrValue::Kind::kExpr;
          item->expr = BuildExpr(part);
          a->items.push_back(item);
        }
        PopScope();
        break;
      }
      default:
        a->kind = AttrValue::Kind::kExpr;
        a->expr = BuildExpr(e);
        break;
    }
    return a;
  }

  std::shared_ptr<const SourceFile> file_;
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;
  std::unordered_set<const ExprNode*> weak_;  // untyped literals, typed by context
  std::vector<Expr> literals_;
  std::map<std::string, Span> later_iterators_;
  PrimFuncNode func_;
  std::optional<std::string> enclosing_iteration_;  // set while building an iteration
  int expr_depth_ = 0;                               // nesting of BuildExpr calls
};

}  // namespace

PrimFunc Parse(const std::string& text, const std::string& source_name) {
  auto file = std::make_shared<const SourceFile>(source_name, text);
  return Builder(file).Build(parser::ParseModule(file));
}

}  // namespace sparsetir
