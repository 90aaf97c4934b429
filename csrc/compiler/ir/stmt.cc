#include "ir/stmt.h"

#include "support/error.h"

namespace sparsetir {

const char* ToString(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unroll";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

Stmt MakeStore(Buffer buffer, std::vector<Expr> indices, Expr value) {
  ICHECK(buffer && value) << "store without buffer or value";
  ICHECK(value->dtype == buffer->dtype) << "store of " << ToString(value->dtype) << " into "
                                        << buffer->name << " of " << ToString(buffer->dtype);
  for (const Expr& index : indices) ICHECK(index && IsInteger(index->dtype)) << "store index";
  return std::make_shared<BufferStoreNode>(std::move(buffer), std::move(indices), std::move(value));
}

Stmt MakeSeq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s) continue;
    if (const auto* seq = s->as<SeqNode>()) {
      flat.insert(flat.end(), seq->stmts.begin(), seq->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return std::make_shared<SeqNode>(std::move(flat));
}

Stmt MakeIteration(SparseIterationNode node) {
  ICHECK(node.iterators.size() == node.vars.size()) << "iteration " << node.name << " vars";
  ICHECK(node.iterators.size() == node.roles.size()) << "iteration " << node.name << " roles";
  for (char c : node.roles) ICHECK(c == 'S' || c == 'R') << "iteration role " << c;
  ICHECK(node.body) << "iteration " << node.name << " without body";
  return std::make_shared<SparseIterationNode>(std::move(node));
}

Stmt MakeFor(Var var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  ICHECK(var && min && extent && body) << "incomplete for loop";
  ICHECK(IsInteger(var->dtype) && IsInteger(extent->dtype)) << "for loop over non-integer";
  ICHECK((kind == ForKind::kThreadBinding) == !thread_tag.empty()) << "thread tag of loop " << var->name;
  return std::make_shared<ForNode>(std::move(var), std::move(min), std::move(extent), kind, std::move(body),
                                   std::move(thread_tag));
}

int ThreadAxis(const ForNode* loop) {
  if (loop->for_kind != ForKind::kThreadBinding) return -1;
  static const char* const kAxes[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int axis = 0; axis < 3; ++axis) {
    if (loop->thread_tag == kAxes[axis]) return axis;
  }
  return -1;
}

Stmt MakeAllocate(Buffer buffer, Stmt body) {
  ICHECK(buffer && body && buffer->kind == BufferKind::kAlloc) << "malformed allocate";
  return std::make_shared<AllocateNode>(std::move(buffer), std::move(body));
}

Stmt MakeBlock(std::string name, Stmt body) {
  ICHECK(!name.empty() && body) << "malformed block";
  return std::make_shared<BlockNode>(std::move(name), std::move(body));
}

Stmt MakeIf(Expr cond, Stmt then_case, Stmt else_case) {
  ICHECK(cond && cond->dtype == DataType::kBool && then_case) << "malformed if";
  return std::make_shared<IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case));
}

Stmt MakeLet(Var var, Expr value, Stmt body) {
  ICHECK(var && value && body && var->dtype == value->dtype) << "malformed let";
  return std::make_shared<LetNode>(std::move(var), std::move(value), std::move(body));
}

Stmt MakeAssume(Buffer buffer, Expr lo, Expr hi) {
  ICHECK(buffer && lo && hi) << "malformed assume_buffer_domain";
  return std::make_shared<AssumeNode>(std::move(buffer), std::move(lo), std::move(hi));
}

Stmt MakePrefetch(Expr address, int64_t extent, int cache_level) {
  ICHECK(address && address->as<BufferLoadNode>()) << "a prefetch address must be a buffer element";
  ICHECK(extent > 0) << "a prefetch covers at least one element";
  ICHECK(cache_level == 1 || cache_level == 2) << "a prefetch brings lines into cache level 1 or 2";
  return std::make_shared<PrefetchNode>(std::move(address), extent, cache_level);
}

Stmt MakeBarrier() { return std::make_shared<BarrierNode>(); }

bool AccumulatesInFloat32(const BufferNode* buffer) {
  const bool low = buffer->dtype == DataType::kFloat16 || buffer->dtype == DataType::kBFloat16;
  return buffer->dtype == DataType::kFloat32 || (low && buffer->scope == "local");
}

Stmt MakeMma(std::string shape, Expr acc, Expr a, Expr b, std::array<Expr, 4> strides) {
  ICHECK(shape == kMmaShape) << "mma shape " << shape << " is not " << kMmaShape;
  for (const Expr* operand : {&acc, &a, &b}) {
    const auto* load = *operand ? (*operand)->as<BufferLoadNode>() : nullptr;
    ICHECK(load) << "an mma operand is a buffer element";
  }
  ICHECK(acc->as<BufferLoadNode>()->indices.size() >= 2) << "an mma accumulator is a 2-D tile";
  for (const Expr& stride : strides) ICHECK(stride && IsInteger(stride->dtype)) << "mma strides are integers";
  const BufferNode* accumulator = acc->as<BufferLoadNode>()->buffer.get();
  ICHECK(AccumulatesInFloat32(accumulator)) << "mma accumulator " << accumulator->name << " is not float32";
  const DataType in = a->as<BufferLoadNode>()->buffer->dtype;
  ICHECK(in == DataType::kFloat16 || in == DataType::kBFloat16) << "mma multiplies float16 or bfloat16 tiles";
  ICHECK(b->as<BufferLoadNode>()->buffer->dtype == in) << "mma multiplicands differ in dtype";
  return std::make_shared<MmaNode>(std::move(shape), std::move(acc), std::move(a), std::move(b), std::move(strides));
}

Stmt MakeAtomicAdd(Expr target, Expr value) {
  ICHECK(target && value) << "incomplete atomic_add";
  const auto* load = target->as<BufferLoadNode>();
  ICHECK(load) << "atomic_add target is not a buffer element";
  ICHECK(IsFloat(load->buffer->dtype)) << "atomic_add into non-float buffer " << load->buffer->name;
  ICHECK(value->dtype == load->buffer->dtype) << "atomic_add value dtype differs from buffer " << load->buffer->name;
  return std::make_shared<AtomicAddNode>(std::move(target), std::move(value));
}

}  // namespace sparsetir
