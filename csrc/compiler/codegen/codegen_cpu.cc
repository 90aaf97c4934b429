#include "codegen/codegen_cpu.h"

#include "codegen/abi.h"
#include "codegen/codegen_c.h"
#include "codegen/identifiers.h"
#include "codegen/prelude_cpu.h"
#include "codegen/vector_access.h"
#include "ir/functor.h"
#include "ir/linear_form.h"
#include "ir/printer.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

class CodegenCpuImpl : public CodegenC {
 public:
  std::string Run(const PrimFunc& f) { return Generate(f); }

 protected:
  void EmitPrelude() override;
  void EmitEntry(const PrimFunc& f) override;
  void EmitFor(const ForNode* loop) override;
  void EmitPrefetch(const PrefetchNode* n) override;
  std::string IntegerDivision(BinaryOp op, const std::string& a, const std::string& b) override;

 private:
  // A parallel loop's body becomes a task over a sub-range of iterations,
  // which the host's launcher runs (codegen/abi.h).
  void EmitParallelFor(const ForNode* loop);
  // The parameters / arguments of an outlined task: the declarations in scope,
  // pointers restrict-qualified.
  std::string ParamList(const std::vector<ScopeEntry>& scope) const;
  std::string ArgList(const std::vector<ScopeEntry>& scope) const;
  const BufferNode* BalancingIndptr(const ForNode* loop);
  // A vectorized loop with a power-of-two constant trip count whose body is one
  // store of contiguous or loop-invariant operands becomes a single statement
  // on GCC vector types (explicit SIMD). Returns false to fall back to a scalar
  // loop the C++ compiler may vectorize.
  bool TryEmitVectorLoop(const ForNode* loop);
  std::string VectorExpr(const Expr& e, const VarNode* lane, const std::string& vector_type, bool* ok);
  std::string HorizontalSums(const CallNode* n, const VarNode* lane, const std::string& vector_type, bool* ok);

  int task_count_ = 0;
};

// Whether the body divides integers by a divisor that may be 0 (or -1, whose
// quotient of the smallest integer overflows): on x86 both stop the process
// with SIGFPE, so such a kernel takes a status it reports them through.
bool HasTrappingDivision(const Stmt& body) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit(const BinaryNode* n) override {
      const bool integer = n->op == BinaryOp::kFloorDiv || n->op == BinaryOp::kFloorMod ||
                           (n->op == BinaryOp::kDiv && IsInteger(n->dtype));
      if (integer && CodegenC::DivisorMayTrap(n->b)) found = true;
      IRVisitor::Visit(n);
    }
  } finder;
  if (body) finder.VisitStmt(body);
  return finder.found;
}

// The status variable of a kernel that may divide by zero (codegen/abi.h).
constexpr char kStatus[] = "sparsetir_status";

void CodegenCpuImpl::EmitPrelude() {
  out_ << kCpuPrelude << "\n" << kAbiText << "\n";
}

std::string CodegenCpuImpl::ParamList(const std::vector<ScopeEntry>& scope) const {
  std::string out;
  for (const ScopeEntry& e : scope) out += (out.empty() ? "" : ", ") + e.type + " " + e.name;
  return out;
}

std::string CodegenCpuImpl::ArgList(const std::vector<ScopeEntry>& scope) const {
  std::string out;
  for (const ScopeEntry& e : scope) out += (out.empty() ? "" : ", ") + e.name;
  return out;
}

// The body runs in a function whose pointers are restrict-qualified parameters:
// GCC relies on restrict only for parameters, and it is what lets it keep
// accumulators in registers across a reduction loop.
void CodegenCpuImpl::EmitEntry(const PrimFunc& f) {
  std::map<const VarNode*, size_t> param_index;
  for (size_t i = 0; i < f->params.size(); ++i) param_index[f->params[i].get()] = i;
  std::vector<std::string> unpack;
  scope_.push_back({"const SparsetirLauncher*", "launcher"});
  taken_.insert("launcher");
  const bool status = HasTrappingDivision(f->body);
  if (status) scope_.push_back({"int32_t*", kStatus});
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Var& p = f->params[i];
    if (p->dtype == DataType::kHandle) continue;
    std::string type = StorageType(p->dtype);
    std::string name = Name(p.get(), p->name);
    scope_.push_back({"const " + type, name});
    unpack.push_back("(" + type + ")args[" + std::to_string(i) + "].i64");
  }
  for (const Buffer& b : f->buffers) {
    // Workspaces are parameters by now (transforms/lift_workspaces.h): the
    // kernel allocates nothing but its stack arrays.
    ICHECK(b->kind == BufferKind::kMatch) << "buffer " << b->name << " is allocated by the kernel";
    std::string type = BufferStorage(b.get());
    std::string name = Name(b.get(), b->name);
    names_[b->data.get()] = name;  // the handle names its buffer (T.sp.lower_bound)
    scope_.push_back({type + "* __restrict__", name});
    unpack.push_back("(" + type + "*)args[" + std::to_string(param_index.at(b->data.get())) + "].ptr");
  }
  // The kernel function.
  std::ostringstream kernel;
  out_.swap(kernel);
  out_ << "static void sparsetir_kernel(" << ParamList(scope_) << ") {\n";
  indent_ = 1;
  std::vector<ScopeEntry> outer = scope_;
  if (f->body) EmitStmt(f->body);
  out_ << "}\n";
  out_.swap(kernel);
  functions_.push_back(kernel.str());
  scope_ = outer;
  // The entry point: unpacks the arguments.
  std::ostringstream entry;
  entry << "extern \"C\" int32_t " << kEntrySymbol
        << "(const SparsetirArg* __restrict__ args, const SparsetirLauncher* launcher) {\n";
  if (status) entry << "  int32_t " << kStatus << " = 0;\n";
  entry << "  sparsetir_kernel(launcher" << (status ? std::string(", &") + kStatus : "");
  for (const std::string& value : unpack) entry << ",\n      " << value;
  entry << ");\n  return " << (status ? kStatus : "0") << ";\n}\n";
  functions_.push_back(entry.str());
}

std::string CodegenCpuImpl::IntegerDivision(BinaryOp op, const std::string& a, const std::string& b) {
  const char* function = op == BinaryOp::kFloorDiv ? "sparsetir_checked_floordiv"
                         : op == BinaryOp::kFloorMod ? "sparsetir_checked_floormod"
                                                     : "sparsetir_checked_truncdiv";
  return std::string(function) + "(" + a + ", " + b + ", " + kStatus + ")";
}

void CodegenCpuImpl::EmitPrefetch(const PrefetchNode* n) {
  // One prefetch per 64-byte line of the span, for read. GCC's locality 3
  // brings the lines into every cache level (prefetcht0 on x86-64, pldl1keep
  // on AArch64), 2 into L2 and below (prefetcht1, pldl2keep). A span that
  // starts mid-line may leave its last line out; the rows prefetched in
  // practice (dense operand rows) start on a line.
  const auto* load = n->address->as<BufferLoadNode>();
  const int64_t bytes = n->extent * (Widened(load->buffer.get()) ? 4 : BytesOf(load->buffer->dtype));
  std::string base = "(const char*)&" + Name(load->buffer.get(), load->buffer->name) + "[" +
                     Index(load->buffer, load->indices) + "]";
  const std::string locality = n->cache_level == 1 ? "3" : "2";
  if (bytes <= 64) {
    Line("__builtin_prefetch(" + base + ", 0, " + locality + ");");
    return;
  }
  Line("{");
  ++indent_;
  Line("const char* sparsetir_line = " + base + ";");
  Line("#pragma GCC unroll 16");
  Line("for (int64_t sparsetir_off = 0; sparsetir_off < " + std::to_string(bytes) +
       "; sparsetir_off += 64) __builtin_prefetch(sparsetir_line + sparsetir_off, 0, " + locality + ");");
  --indent_;
  Line("}");
}

void CodegenCpuImpl::EmitFor(const ForNode* loop) {
  // Named and printed in the order the serial loop names them, so that every
  // kind of loop leaves the unit's names as a serial one would.
  Name(loop->var.get(), loop->var->name);
  Expr2C(loop->min);
  Expr2C(loop->extent);
  if (loop->for_kind == ForKind::kThreadBinding) {
    throw UserError(UserErrorKind::kSchedule, "loop '" + loop->var->name + "' is bound to " + loop->thread_tag +
                                                  ", which only a GPU target has; the cpu target cannot run it");
  }
  if (loop->for_kind == ForKind::kParallel) {
    EmitParallelFor(loop);
    return;
  }
  if (loop->for_kind == ForKind::kVectorized && TryEmitVectorLoop(loop)) return;
  std::string pragma;
  if (loop->for_kind == ForKind::kVectorized) pragma = "#pragma GCC ivdep";
  if (loop->for_kind == ForKind::kUnrolled) pragma = "#pragma GCC unroll 16";
  EmitSerialFor(loop, pragma);
}

// The loop body becomes a function over a sub-range of iterations that takes
// everything in scope as (restrict) parameters; the host's launcher calls it
// through a small lambda.
void CodegenCpuImpl::EmitParallelFor(const ForNode* loop) {
  std::string type = StorageType(loop->var->dtype);
  std::string var = Name(loop->var.get(), loop->var->name);
  std::string begin = Expr2C(loop->min);
  std::string end = "(" + begin + " + " + Expr2C(loop->extent) + ")";
  std::string task = "sparsetir_task" + std::to_string(task_count_++);
  std::vector<ScopeEntry> captured = scope_;
  std::ostringstream function;
  out_.swap(function);
  int saved_indent = indent_;
  out_ << "static void " << task << "(int64_t sparsetir_begin, int64_t sparsetir_end"
       << (captured.empty() ? "" : ", " + ParamList(captured)) << ") {\n";
  indent_ = 1;
  Line("for (" + type + " " + var + " = (" + type + ")sparsetir_begin; " + var + " < (" + type + ")sparsetir_end; ++" +
       var + ") {");
  ++indent_;
  scope_.push_back({"const " + type, var});
  EmitStmt(loop->body);
  scope_ = captured;
  --indent_;
  Line("}");
  out_ << "}\n";
  out_.swap(function);
  functions_.push_back(function.str());
  indent_ = saved_indent;
  std::string call = task + "(sparsetir_begin, sparsetir_end" + (captured.empty() ? "" : ", " + ArgList(captured)) + ");";
  Line("{");
  ++indent_;
  if (const BufferNode* indptr = BalancingIndptr(loop)) {
    // Rows differ in work: one task per thread, each with an equal share of
    // the non-zeros (sparsetir_balanced_row).
    std::string p = names_.at(indptr);
    Line("const int64_t sparsetir_rows_begin = " + begin + ", sparsetir_rows_end = " + end + ";");
    Line("const int64_t sparsetir_tasks = launcher->num_threads > 1 ? launcher->num_threads : 1;");
    Line("auto sparsetir_body = [&](int64_t sparsetir_t_begin, int64_t sparsetir_t_end) {");
    Line("  for (int64_t sparsetir_t = sparsetir_t_begin; sparsetir_t < sparsetir_t_end; ++sparsetir_t) {");
    Line("    const int64_t sparsetir_begin = sparsetir_balanced_row(" + p +
         ", sparsetir_rows_begin, sparsetir_rows_end, sparsetir_t, sparsetir_tasks);");
    Line("    const int64_t sparsetir_end = sparsetir_balanced_row(" + p +
         ", sparsetir_rows_begin, sparsetir_rows_end, sparsetir_t + 1, sparsetir_tasks);");
    Line("    if (sparsetir_begin < sparsetir_end) " + call);
    Line("  }");
    Line("};");
    Line("launcher->parallel_for(launcher->ctx, 0, sparsetir_tasks, 1, sparsetir_task<decltype(sparsetir_body)>, "
         "&sparsetir_body);");
  } else {
    Line("auto sparsetir_body = [&](int64_t sparsetir_begin, int64_t sparsetir_end) { " + call + " };");
    Line("launcher->parallel_for(launcher->ctx, " + begin + ", " + end +
         ", 1, sparsetir_task<decltype(sparsetir_body)>, &sparsetir_body);");
  }
  --indent_;
  Line("}");
}

// The indptr array whose rows a parallel loop walks, when its body holds a
// loop whose extent involves P[v + 1] - P[v] of the parallel variable v (the
// row length itself, or a function of it such as a split's ceil(len / 2)):
// then work per iteration follows P and the split balances it.
const BufferNode* CodegenCpuImpl::BalancingIndptr(const ForNode* loop) {
  struct Finder : IRVisitor {
    const VarNode* var;
    const BufferNode* found = nullptr;
    const BufferNode* RowLength(const Expr& e) const {
      const auto* n = e->as<BinaryNode>();
      if (!n) return nullptr;
      if (n->op == BinaryOp::kSub) {
        const auto* hi = n->a->as<BufferLoadNode>();
        const auto* lo = n->b->as<BufferLoadNode>();
        if (hi && lo && hi->buffer == lo->buffer && lo->indices.size() == 1 && hi->indices.size() == 1 &&
            lo->indices[0].get() == var) {
          const auto* next = hi->indices[0]->as<BinaryNode>();
          const int64_t* one = next ? AsConstInt(next->b) : nullptr;
          if (next && next->op == BinaryOp::kAdd && next->a.get() == var && one && *one == 1) return lo->buffer.get();
        }
      }
      if (const BufferNode* b = RowLength(n->a)) return b;
      return RowLength(n->b);
    }
    void Visit(const ForNode* n) override {
      if (!found) found = RowLength(n->extent);
      IRVisitor::Visit(n);
    }
  } finder;
  finder.var = loop->var.get();
  finder.VisitStmt(loop->body);
  if (finder.found && !names_.count(finder.found)) return nullptr;
  return finder.found;
}

namespace {

// "half" / "bf16" for a float16 / bfloat16 buffer stored as 16-bit patterns
// (the suffix of the prelude's vector conversions), null otherwise.
const char* Narrow(const BufferNode* b) {
  if (Widened(b)) return nullptr;
  if (b->dtype == DataType::kFloat16) return "half";
  if (b->dtype == DataType::kBFloat16) return "bf16";
  return nullptr;
}

bool IsFloatVector(const std::string& vector_type) { return vector_type.rfind("sparsetir_floatx", 0) == 0; }

}  // namespace

bool CodegenCpuImpl::TryEmitVectorLoop(const ForNode* loop) {
  const int64_t* lanes = AsConstInt(loop->extent);
  const int64_t* min = AsConstInt(loop->min);
  if (!lanes || !min || *min != 0 || *lanes < 2 || (*lanes & (*lanes - 1)) != 0) return false;
  Stmt body = loop->body;
  while (const auto* block = body->as<BlockNode>()) body = block->body;
  const auto* store = body->as<BufferStoreNode>();
  if (!store) return false;
  // A float16 / bfloat16 buffer is computed in float32 lanes and stored
  // through the prelude's vector conversions.
  const char* narrow_store = Narrow(store->buffer.get());
  DataType dtype = Widened(store->buffer.get()) || narrow_store ? DataType::kFloat32 : store->buffer->dtype;
  if (dtype != DataType::kFloat32 && dtype != DataType::kFloat64 && dtype != DataType::kInt32 &&
      dtype != DataType::kInt64) {
    return false;
  }
  const VarNode* lane = loop->var.get();
  if (ClassifyLaneAccess(store->indices, lane) != LaneAccess::kContiguous) return false;
  int64_t bytes = *lanes * BytesOf(dtype);
  std::string type = std::string("sparsetir_") + StorageType(dtype) + "x" + std::to_string(*lanes);
  // Lanes are bound to 0 so that every contiguous access names its first element.
  Name(lane, lane->name);
  bool ok = true;
  std::string value = VectorExpr(store->value, lane, type, &ok);
  if (!ok) return false;
  std::vector<Expr> base = LaneZero(store->indices, lane);
  std::string target = "*(" + type + "*)&" + Name(store->buffer.get(), store->buffer->name) + "[" +
                       Index(store->buffer, base) + "]";
  Line("{  // " + CommentText(loop->var->name) + ": " + std::to_string(*lanes) + " lanes");
  ++indent_;
  // aligned(alignof(element)): the accesses need not be vector aligned. GCC
  // vector types alias their element type, so restrict still separates buffers.
  Line(std::string("typedef ") + StorageType(dtype) + " " + type + " __attribute__((vector_size(" +
       std::to_string(bytes) + "), aligned(" + std::to_string(BytesOf(dtype)) + ")));");
  if (narrow_store) {
    Line(std::string("sparsetir_vstore_") + narrow_store + "<" + type + ">(&" +
         Name(store->buffer.get(), store->buffer->name) + "[" + Index(store->buffer, base) + "], " + value + ");");
  } else {
    Line(target + " = " + value + ";");
  }
  --indent_;
  Line("}");
  return true;
}

// Lane r of the loop sums the span that starts `stride` elements after lane
// 0's, a constant stride: the spans of all lanes merge in registers
// (the prelude's sparsetir_horizontal_sums). The span's elements must be
// what the vector's lanes hold (a float32 local buffer for float32 lanes).
std::string CodegenCpuImpl::HorizontalSums(const CallNode* n, const VarNode* lane, const std::string& vector_type,
                                           bool* ok) {
  const auto* first = n->args[0]->as<BufferLoadNode>();
  if (!first || first->indices.empty()) {  // refused by HorizontalSumLanes on the scalar path
    *ok = false;
    return "";
  }
  const Buffer& b = first->buffer;
  Expr flat = first->indices[0];
  for (size_t k = 1; k < first->indices.size(); ++k) flat = Add(Mul(flat, b->shape[k]), first->indices[k]);
  const std::optional<LinearForm> form = AsLinear(flat);
  const int64_t stride = form ? form->CoefficientOf(lane) : 0;
  const std::string element = std::string("sparsetir_") + BufferStorage(b.get()) + "x";
  if (stride < 1 || Uses(n->args[1], lane) || vector_type.rfind(element, 0) != 0) {
    *ok = false;
    return "";
  }
  return "sparsetir_horizontal_sums<" + vector_type + ", " + std::to_string(HorizontalSumLanes(n)) + ", " +
         std::to_string(stride) + ">(&" + Name(b.get(), b->name) + "[" + Index(b, LaneZero(first->indices, lane)) +
         "])";
}

std::string CodegenCpuImpl::VectorExpr(const Expr& e, const VarNode* lane, const std::string& vector_type, bool* ok) {
  if (!Uses(e, lane)) return "sparsetir_broadcast<" + vector_type + ">(" + Expr2C(e) + ")";
  switch (e->kind) {
    case ExprKind::kBufferLoad: {
      const auto* n = e->as<BufferLoadNode>();
      const char* narrow = Narrow(n->buffer.get());
      if (narrow && ClassifyLaneAccess(n->indices, lane) == LaneAccess::kContiguous && IsFloatVector(vector_type)) {
        return std::string("sparsetir_vload_") + narrow + "<" + vector_type + ">(&" +
               Name(n->buffer.get(), n->buffer->name) + "[" + Index(n->buffer, LaneZero(n->indices, lane)) + "])";
      }
      if (n->dtype != e->dtype || ClassifyLaneAccess(n->indices, lane) != LaneAccess::kContiguous ||
          BufferStorage(n->buffer.get()) != std::string(ValueType(n->buffer->dtype))) {
        *ok = false;
        return "";
      }
      return "(*(" + vector_type + "*)&" + Name(n->buffer.get(), n->buffer->name) + "[" +
             Index(n->buffer, LaneZero(n->indices, lane)) + "])";
    }
    case ExprKind::kBinary: {
      const auto* n = e->as<BinaryNode>();
      std::string a = VectorExpr(n->a, lane, vector_type, ok), b = VectorExpr(n->b, lane, vector_type, ok);
      switch (n->op) {
        case BinaryOp::kAdd:
        case BinaryOp::kSub:
        case BinaryOp::kMul: return "(" + a + " " + ToString(n->op) + " " + b + ")";
        case BinaryOp::kDiv:
          if (IsInteger(e->dtype)) break;  // integer lanes: the scalar code checks the divisor
          return "(" + a + " " + ToString(n->op) + " " + b + ")";
        case BinaryOp::kMin: return "sparsetir_vmin(" + a + ", " + b + ")";
        case BinaryOp::kMax: return "sparsetir_vmax(" + a + ", " + b + ")";
        default: break;
      }
      break;
    }
    case ExprKind::kUnary:
      if (e->as<UnaryNode>()->op == UnaryOp::kNeg) return "(-" + VectorExpr(e->as<UnaryNode>()->a, lane, vector_type, ok) + ")";
      break;
    case ExprKind::kCast: {
      // Between float32 and the 16-bit types, in float32 lanes (where 16-bit
      // values are computed): widening is exact, so the lanes stay as they
      // are; narrowing rounds each lane to the 16-bit type.
      const auto* n = e->as<CastNode>();
      auto in_float_lanes = [](DataType t) {
        return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
      };
      if (!IsFloatVector(vector_type) || !in_float_lanes(e->dtype) || !in_float_lanes(n->value->dtype)) break;
      std::string value = VectorExpr(n->value, lane, vector_type, ok);
      if (e->dtype == DataType::kFloat32) return value;
      const char* round = e->dtype == DataType::kBFloat16 ? "sparsetir_vround_bf16<" : "sparsetir_vround_half<";
      return round + vector_type + ">(" + value + ")";
    }
    case ExprKind::kCall: {
      const auto* n = e->as<CallNode>();
      if (n->op == Intrinsic::kHorizontalSum) return HorizontalSums(n, lane, vector_type, ok);
      break;
    }
    default:
      break;
  }
  *ok = false;
  return "";
}


}  // namespace

std::string CodegenCpu(const PrimFunc& f) { return CodegenCpuImpl().Run(f); }

}  // namespace sparsetir
