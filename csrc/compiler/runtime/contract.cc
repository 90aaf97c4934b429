#include "runtime/contract.h"

#include <algorithm>
#include <sstream>

#include "codegen/codegen_c.h"
#include "ir/functor.h"
#include "support/error.h"
#include "transforms/lift_workspaces.h"
#include "transforms/specialize.h"

namespace sparsetir {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << (shape.size() == 1 ? ",)" : ")");
  return s.str();
}

// Evaluates the integer expressions of a kernel's contract: scalar parameters
// and loads from structure arrays that were already validated.
class ContractEvaluator {
 public:
  std::map<const VarNode*, int64_t> scalars;
  std::map<const BufferNode*, const KernelArg*> arrays;

  int64_t Eval(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::kIntImm: return e->as<IntImmNode>()->value;
      case ExprKind::kVar: {
        auto found = scalars.find(e->as<VarNode>());
        ICHECK(found != scalars.end()) << "contract mentions unbound " << e->as<VarNode>()->name;
        return found->second;
      }
      case ExprKind::kCast: return Eval(e->as<CastNode>()->value);
      case ExprKind::kBinary: {
        const auto* n = e->as<BinaryNode>();
        int64_t a = Eval(n->a), b = Eval(n->b);
        switch (n->op) {
          case BinaryOp::kAdd: return a + b;
          case BinaryOp::kSub: return a - b;
          case BinaryOp::kMul: return a * b;
          case BinaryOp::kMin: return a < b ? a : b;
          case BinaryOp::kMax: return a > b ? a : b;
          case BinaryOp::kDiv:
          case BinaryOp::kFloorDiv:
            if (b == 0) ThrowArgumentError("a size in the kernel's contract divides by zero");
            return n->op == BinaryOp::kDiv ? a / b : (a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
          case BinaryOp::kFloorMod:
            if (b == 0) ThrowArgumentError("a size in the kernel's contract divides by zero");
            return ((a % b) + b) % b;
          default: break;
        }
        break;
      }
      case ExprKind::kBufferLoad: {
        const auto* n = e->as<BufferLoadNode>();
        auto found = arrays.find(n->buffer.get());
        ICHECK(found != arrays.end() && n->indices.size() == 1) << "contract reads unchecked " << n->buffer->name;
        int64_t index = Eval(n->indices[0]);
        const KernelArg& arg = *found->second;
        if (index < 0 || arg.shape.empty() || index >= arg.shape[0]) {
          ThrowArgumentError("structure array of '" + n->buffer->name + "' is too short");
        }
        return Element(arg, index);
      }
      default: break;
    }
    ICHECK(false) << "cannot evaluate contract expression";
    return 0;
  }

  static int64_t Element(const KernelArg& arg, int64_t index) {
    if (arg.dtype == DataType::kInt64) return static_cast<const int64_t*>(arg.data)[index];
    return static_cast<const int32_t*>(arg.data)[index];
  }
};

struct HandleBinding {
  size_t param;
  Buffer buffer;
};

// The names that errors about a call's arguments use.
struct ArgumentNames {
  const std::string& kernel;
  const std::vector<Var>& params;
  const std::vector<KernelArg>& args;

  std::string Where(size_t i) const { return kernel + "(): argument '" + params[i]->name + "'"; }

  // "'n' = -3, 'k' = -1": the negative scalar arguments, which a negative size comes from.
  std::string Negative() const {
    std::string text;
    for (size_t i = 0; i < args.size(); ++i) {
      if (params[i]->dtype != DataType::kHandle && args[i].int_value < 0) {
        text += (text.empty() ? "" : ", ") + std::string("'") + params[i]->name + "' = " +
                std::to_string(args[i].int_value);
      }
    }
    return text;
  }
};

// Every argument is present and of its parameter's kind; a scalar fits its
// type and equals the value the kernel was specialized for, if any. The
// scalars are bound in `eval`.
void CheckScalars(const std::string& kernel, const PrimFunc& f, const std::vector<KernelArg>& args,
                  ContractEvaluator* eval) {
  for (size_t i = 0; i < args.size(); ++i) {
    const Var& p = f->params[i];
    const KernelArg& a = args[i];
    const std::string where = kernel + "(): argument '" + p->name + "'";
    if (a.kind == KernelArg::Kind::kMissing) ThrowArgumentError(kernel + "(): missing argument '" + p->name + "'");
    if (p->dtype == DataType::kHandle) {
      if (a.kind != KernelArg::Kind::kTensor) ThrowArgumentError(where + " must be a tensor, got " + a.type_name);
      continue;
    }
    if (a.kind != KernelArg::Kind::kInt) ThrowArgumentError(where + " must be an int, got " + a.type_name);
    if (p->dtype == DataType::kInt32 && (a.int_value > INT32_MAX || a.int_value < INT32_MIN)) {
      ThrowArgumentError(where + " = " + std::to_string(a.int_value) + " does not fit its type int32");
    }
    eval->scalars[p.get()] = a.int_value;
  }
  for (const auto& [name, value] : SpecializedValues(f)) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (f->params[i]->name == name && args[i].int_value != value) {
        ThrowArgumentError(kernel + "(): argument '" + name + "' must be " + std::to_string(value) +
                           ": the kernel was specialized for it (got " + std::to_string(args[i].int_value) + ")");
      }
    }
  }
}

// Each tensor argument's device (one for all, and one the target runs on),
// dtype (its buffer's) and layout (contiguous); returns the tensors with
// their buffers. Workspaces are the host's and are not checked.
std::vector<HandleBinding> CheckTensors(const std::string& kernel, const PrimFunc& f, const Target& target,
                                        const std::vector<KernelArg>& args) {
  std::map<const VarNode*, size_t> index_of;
  for (size_t i = 0; i < f->params.size(); ++i) index_of[f->params[i].get()] = i;
  std::vector<HandleBinding> bindings;
  std::string device, device_param;
  for (const Buffer& b : f->buffers) {
    if (b->kind != BufferKind::kMatch || IsWorkspace(b.get())) continue;
    const size_t i = index_of.at(b->data.get());
    const KernelArg& a = args[i];
    const std::string where = kernel + "(): argument '" + f->params[i]->name + "'";
    if (target.is_cpu() && a.device != "cpu") {
      ThrowArgumentError(where + " is on " + a.device + " but the kernel was compiled for cpu");
    }
    if (target.is_cuda() && a.device != "cpu" && a.device.rfind("cuda", 0) != 0) {
      ThrowArgumentError(where + " is on " + a.device + "; a cuda kernel takes CUDA tensors (or CPU tensors, run "
                         "under the SIMT emulator)");
    }
    if (!device.empty() && a.device != device) {
      ThrowArgumentError(where + " is on " + a.device + " but argument '" + device_param + "' is on " + device +
                         "; all tensors must be on one device");
    }
    if (device.empty()) {
      device = a.device;
      device_param = f->params[i]->name;
    }
    if (a.dtype != b->dtype) {
      ThrowArgumentError(where + " must have dtype " + ToString(b->dtype) + " (buffer '" + b->name + "'), got " +
                         a.type_name);
    }
    if (!a.contiguous) ThrowArgumentError(where + " must be contiguous (call .contiguous() on it)");
    bindings.push_back({i, b});
  }
  return bindings;
}

// The tensor's shape is its buffer's, evaluated from the scalars and the
// structure arrays checked so far; returns it.
std::vector<int64_t> CheckShape(const ArgumentNames& names, const HandleBinding& h, const ContractEvaluator& eval) {
  std::vector<int64_t> expected;
  for (const Expr& dim : h.buffer->shape) expected.push_back(eval.Eval(dim));
  for (int64_t d : expected) {
    if (d >= 0) continue;
    const std::string negative = names.Negative();
    ThrowArgumentError(names.kernel + "(): argument" + (negative.empty() ? "s" : " " + negative) +
                       " give argument '" + names.params[h.param]->name + "' the negative shape " +
                       ShapeText(expected) + "; sizes must be non-negative");
  }
  const KernelArg& a = names.args[h.param];
  if (a.shape != expected) {
    ThrowArgumentError(names.Where(h.param) + " must have shape " + ShapeText(expected) + " (buffer '" +
                       h.buffer->name + "', from the scalar arguments), got " + ShapeText(a.shape));
  }
  return expected;
}

// A row pointer array starts at 0, never decreases and ends at its rule's nnz.
void CheckIndptr(const std::string& where, const KernelArg& a, const std::vector<int64_t>& shape,
                 const IndptrRule& rule, const ContractEvaluator& eval) {
  const int64_t length = shape.empty() ? 1 : shape[0];
  if (length <= 0) return;
  auto at = [&](int64_t k) { return ContractEvaluator::Element(a, k); };
  if (at(0) != 0) ThrowArgumentError(where + " (indptr) must start at 0, got " + std::to_string(at(0)));
  for (int64_t k = 1; k < length; ++k) {
    if (at(k) < at(k - 1)) {
      ThrowArgumentError(where + " (indptr) must be non-decreasing, but element " + std::to_string(k) + " (" +
                         std::to_string(at(k)) + ") is smaller than element " + std::to_string(k - 1) + " (" +
                         std::to_string(at(k - 1)) + ")");
    }
  }
  if (!rule.nnz) return;
  const int64_t nnz = eval.Eval(rule.nnz);
  if (at(length - 1) != nnz) {
    ThrowArgumentError(where + " (indptr) must end at nnz = " + std::to_string(nnz) + ", got " +
                       std::to_string(at(length - 1)));
  }
}

// Each row's segment indices[indptr[r]:indptr[r + 1]] is in non-decreasing
// order, as the kernel's binary search over it needs. Both arrays were
// checked already (indptr non-decreasing, in range).
void CheckRowsSorted(const ArgumentNames& names, const std::vector<HandleBinding>& bindings, const VarNode* indices,
                     const BufferNode* indptr) {
  const HandleBinding* rows = nullptr;
  const HandleBinding* columns = nullptr;
  for (const HandleBinding& h : bindings) {
    if (h.buffer.get() == indptr) rows = &h;
    if (h.buffer->data.get() == indices) columns = &h;
  }
  if (!rows || !columns) return;
  const KernelArg& p = names.args[rows->param];
  const KernelArg& c = names.args[columns->param];
  const int64_t row_count = p.shape.empty() ? 0 : p.shape[0] - 1;
  int64_t stored = 1;
  for (int64_t d : c.shape) stored *= d;
  for (int64_t r = 0; r < row_count; ++r) {
    const int64_t begin = ContractEvaluator::Element(p, r), end = ContractEvaluator::Element(p, r + 1);
    if (begin < 0 || end > stored) continue;  // not this check's to report (nor to read past)
    for (int64_t k = begin + 1; k < end; ++k) {
      const int64_t before = ContractEvaluator::Element(c, k - 1), value = ContractEvaluator::Element(c, k);
      if (value < before) {
        ThrowArgumentError(names.Where(columns->param) + " must list each row's coordinates in increasing order: "
                           "the kernel looks coordinates up by binary search, but row " + std::to_string(r) +
                           " has " + std::to_string(value) + " after " + std::to_string(before) +
                           " (element " + std::to_string(k) + ")");
      }
    }
  }
}

// Every element of an index array lies in the range its assume_buffer_domain gives.
void CheckDomain(const std::string& where, const KernelArg& a, const std::vector<int64_t>& shape,
                 const std::pair<Expr, Expr>& range, const ContractEvaluator& eval) {
  const int64_t lo = eval.Eval(range.first), hi = eval.Eval(range.second);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t v = ContractEvaluator::Element(a, k);
    if (v < lo || v > hi) {
      ThrowArgumentError(where + ": element " + std::to_string(k) + " is " + std::to_string(v) +
                         ", outside the valid range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
  }
}

}  // namespace


Contract::Contract(std::string name, PrimFunc lowered, std::vector<IndptrRule> rules, Target target)
    : name_(std::move(name)), func_(std::move(lowered)), indptr_rules_(std::move(rules)), target_(std::move(target)) {
  domain_ = DomainFacts();
  shape_read_ = ShapeReadBuffers();
  structure_params_ = StructureParams();
  written_params_ = WrittenParams();
  workspaces_ = Workspaces();
  loop_extents_ = ScalarLoopExtents();
  searches_ = Searches();
  call_params_ = func_->params.size() - workspaces_.size();
}

std::vector<Contract::SearchedRows> Contract::Searches() const {
  struct Finder : IRVisitor {
    std::vector<SearchedRows> out;
    void Visit(const CallNode* n) override {
      if (n->op == Intrinsic::kLowerBound && n->args.size() == 4) {
        const auto* indices = n->args[0]->as<VarNode>();
        const auto* begin = n->args[1]->as<BufferLoadNode>();
        if (indices && begin) {
          const bool known = std::any_of(out.begin(), out.end(), [&](const SearchedRows& s) {
            return s.indices == indices && s.indptr == begin->buffer.get();
          });
          if (!known) out.push_back({indices, begin->buffer.get()});
        }
      }
      IRVisitor::Visit(n);
    }
  } finder;
  if (func_->body) finder.VisitStmt(func_->body);
  return finder.out;
}

std::vector<Contract::LoopExtent> Contract::ScalarLoopExtents() const {
  struct Loops : IRVisitor {
    std::set<const VarNode*> scalars;
    std::vector<LoopExtent> out;
    void Visit(const ForNode* n) override {
      if (!n->extent->as<IntImmNode>() && Evaluable(n->extent)) {
        out.push_back({n->var->name, n->extent, n->var->dtype});
      }
      IRVisitor::Visit(n);
    }
    // What ContractEvaluator computes from the scalars alone.
    bool Evaluable(const Expr& e) const {
      switch (e->kind) {
        case ExprKind::kIntImm: return true;
        case ExprKind::kVar: return scalars.count(e->as<VarNode>()) > 0;
        case ExprKind::kCast: return Evaluable(e->as<CastNode>()->value);
        case ExprKind::kBinary: {
          const auto* b = e->as<BinaryNode>();
          static const std::set<BinaryOp> kOps = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kMin,
                                                  BinaryOp::kMax, BinaryOp::kDiv, BinaryOp::kFloorDiv,
                                                  BinaryOp::kFloorMod};
          return kOps.count(b->op) > 0 && Evaluable(b->a) && Evaluable(b->b);
        }
        default: return false;
      }
    }
  } loops;
  for (const Var& p : func_->params) {
    if (p->dtype != DataType::kHandle) loops.scalars.insert(p.get());
  }
  if (func_->body) loops.VisitStmt(func_->body);
  return loops.out;
}

std::vector<size_t> Contract::workspace_params() const {
  std::vector<size_t> out;
  for (const Workspace& w : workspaces_) out.push_back(w.param);
  return out;
}

std::vector<int64_t> Contract::EvalScalars(const std::vector<Expr>& exprs, const SparsetirArg* args) const {
  ContractEvaluator eval;
  for (size_t i = 0; i < func_->params.size(); ++i) {
    if (func_->params[i]->dtype != DataType::kHandle) eval.scalars[func_->params[i].get()] = args[i].i64;
  }
  std::vector<int64_t> values;
  for (const Expr& e : exprs) values.push_back(eval.Eval(e));
  return values;
}

// lift_workspaces appends the workspace parameters after the function's own.
std::vector<Contract::Workspace> Contract::Workspaces() const {
  std::vector<Workspace> out;
  const auto& params = func_->params;
  for (size_t i = 0; i < params.size(); ++i) {
    for (const Buffer& b : func_->buffers) {
      if (b->data == params[i] && IsWorkspace(b.get())) out.push_back({i, b});
    }
  }
  for (size_t k = 0; k < out.size(); ++k) {
    ICHECK(out[k].param == params.size() - out.size() + k) << "workspace parameters must come last";
  }
  return out;
}

std::map<const BufferNode*, std::pair<Expr, Expr>> Contract::DomainFacts() const {
  std::map<const BufferNode*, std::pair<Expr, Expr>> domain;
  if (func_->body) {
    struct Facts : IRVisitor {
      std::map<const BufferNode*, std::pair<Expr, Expr>>* out;
      void Visit(const AssumeNode* n) override { (*out)[n->buffer.get()] = {n->lo, n->hi}; }
    } facts;
    facts.out = &domain;
    facts.VisitStmt(func_->body);
  }
  return domain;
}

std::set<const BufferNode*> Contract::ShapeReadBuffers() const {
  struct Reads : IRVisitor {
    std::set<const BufferNode*> buffers;
    void Visit(const BufferLoadNode* n) override {
      buffers.insert(n->buffer.get());
      IRVisitor::Visit(n);
    }
  } reads;
  for (const Buffer& b : func_->buffers) {
    for (const Expr& dim : b->shape) {
      if (dim) reads.VisitExpr(dim);
    }
  }
  return reads.buffers;
}

bool Contract::IsStructure(const Buffer& b) const {
  if (domain_.count(b.get()) > 0 || shape_read_.count(b.get()) > 0) return true;
  for (const IndptrRule& rule : indptr_rules_) {
    if (rule.handle == b->data) return true;
  }
  return false;
}

std::vector<size_t> Contract::StructureParams() const {
  std::vector<size_t> out;
  const auto& params = func_->params;
  for (size_t i = 0; i < params.size(); ++i) {
    for (const Buffer& b : func_->buffers) {
      if (b->kind == BufferKind::kMatch && !IsWorkspace(b.get()) && b->data == params[i] && IsStructure(b)) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

// Handle parameters whose buffer the kernel stores into (plain or atomic).
std::vector<size_t> Contract::WrittenParams() const {
  struct Finder : IRVisitor {
    std::set<const BufferNode*> written;
    void Visit(const BufferStoreNode* n) override {
      written.insert(n->buffer.get());
      IRVisitor::Visit(n);
    }
    void Visit(const AtomicAddNode* n) override {
      if (const auto* load = n->target->as<BufferLoadNode>()) written.insert(load->buffer.get());
      IRVisitor::Visit(n);
    }
  } finder;
  if (func_->body) finder.VisitStmt(func_->body);
  std::vector<size_t> out;
  const auto& params = func_->params;
  for (size_t i = 0; i < params.size(); ++i) {
    for (const Buffer& b : func_->buffers) {
      if (b->kind == BufferKind::kMatch && !IsWorkspace(b.get()) && b->data == params[i] &&
          finder.written.count(b.get()) > 0) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

void Contract::Check(const std::vector<KernelArg>& args, bool contents) const {
  if (args.size() != call_params_) {
    ThrowArgumentError(name_ + "() takes " + std::to_string(call_params_) + " arguments but got " +
                       std::to_string(args.size()));
  }
  ContractEvaluator eval;
  CheckScalars(name_, func_, args, &eval);
  for (const LoopExtent& loop : loop_extents_) {
    const int64_t trips = eval.Eval(loop.extent);
    if (trips > MaxValue(loop.dtype)) {
      ThrowArgumentError(name_ + "(): loop '" + loop.loop + "' would run " + std::to_string(trips) +
                         " times for these arguments, more than its " + ToString(loop.dtype) + " index holds (" +
                         std::to_string(MaxValue(loop.dtype)) + ")");
    }
  }
  const std::vector<HandleBinding> bindings = CheckTensors(name_, func_, target_, args);
  // Shapes and contents, structure arrays first: other shapes may read them.
  const ArgumentNames names{name_, func_->params, args};
  for (int pass = 0; pass < 2; ++pass) {
    for (const HandleBinding& h : bindings) {
      if (IsStructure(h.buffer) != (pass == 0)) continue;
      const KernelArg& a = args[h.param];
      const std::vector<int64_t> shape = CheckShape(names, h, eval);
      if (pass != 0) continue;
      eval.arrays[h.buffer.get()] = &a;
      if (!contents) continue;
      const std::string where = names.Where(h.param);
      for (const IndptrRule& rule : indptr_rules_) {
        if (rule.handle == h.buffer->data) CheckIndptr(where, a, shape, rule, eval);
      }
      auto range = domain_.find(h.buffer.get());
      if (range != domain_.end()) CheckDomain(where, a, shape, range->second, eval);
    }
  }
  if (contents) {
    for (const SearchedRows& search : searches_) CheckRowsSorted(names, bindings, search.indices, search.indptr);
  }
}

// Zeroed host memory for each workspace (8-byte aligned: every element type
// is at most that), sized from the scalar arguments and the structure arrays
// as the contract sizes the other buffers.
std::vector<std::vector<uint64_t>> Contract::AllocateWorkspaces(const std::vector<KernelArg>& args) const {
  std::vector<std::vector<uint64_t>> out;
  if (workspaces_.empty()) return out;
  ContractEvaluator eval;
  const auto& params = func_->params;
  for (size_t i = 0; i < call_params_; ++i) {
    if (params[i]->dtype != DataType::kHandle) eval.scalars[params[i].get()] = args[i].int_value;
  }
  for (const Buffer& b : func_->buffers) {
    if (b->kind != BufferKind::kMatch || IsWorkspace(b.get())) continue;
    for (size_t i = 0; i < call_params_; ++i) {
      if (b->data == params[i]) eval.arrays[b.get()] = &args[i];
    }
  }
  for (const Workspace& w : workspaces_) {
    int64_t elements = 1;
    for (const Expr& dim : w.buffer->shape) {
      const int64_t d = eval.Eval(dim);
      if (d < 0) ThrowArgumentError(name_ + "(): the arguments give workspace '" + w.buffer->name + "' a negative size");
      elements *= d;
    }
    const int64_t bytes = elements * (Widened(w.buffer.get()) ? 4 : BytesOf(w.buffer->dtype));
    out.emplace_back(static_cast<size_t>((bytes + 7) / 8), 0);
  }
  return out;
}

}  // namespace sparsetir
