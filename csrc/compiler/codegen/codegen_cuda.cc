#include "codegen/codegen_cuda.h"

#include "codegen/abi.h"
#include "codegen/identifiers.h"
#include "codegen/prelude_cuda.h"
#include "codegen/simt_emulator.h"
#include "codegen/vector_access.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "transforms/lift_workspaces.h"
#include "transforms/check_thread_stores.h"
#include "transforms/lower_lane_reductions.h"
#include "transforms/lower_mma_fragments.h"
#include "transforms/lower_shared_caches.h"

namespace sparsetir {
namespace {

constexpr int64_t kWarpLanes = 32;
// The widest group a lane reduction combines: a block (lower_lane_reductions).
constexpr int64_t kMaxLaneGroup = 1024;
// The static shared memory a block may declare (more needs an opt-in to
// dynamic shared memory at launch).
constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
// The most threads a block may have without a __launch_bounds__: 512 x 128
// registers fit a multiprocessor's 65,536, and the kernels take fewer (a
// bound of 512 made ptxas spill float16 attention tiles at 64 registers
// where 72 fit); blocks of 1024 threads get one, which caps them at 64.
constexpr int64_t kUnboundedBlockThreads = 512;

int TagIndex(const std::string& tag) {
  for (int d = 0; d < 6; ++d) {
    if (tag == kLaunchTags[d]) return d;
  }
  return -1;
}

class CodegenCudaImpl : public CodegenC {
 public:
  CudaSource Run(const PrimFunc& stage3) {
    // The lowerings only this target has: mma accumulators as fragments of a
    // warp, reductions across lanes, and shared caches filled by the whole
    // block.
    const PrimFunc f = LowerLaneReductions(LowerSharedCaches(LowerMmaFragments(stage3)));
    own_barriers_ = f->body && HasBarrier(f->body);
    for (const Buffer& b : f->buffers) {
      if (b->kind != BufferKind::kMatch) continue;
      for (size_t i = 0; i < f->params.size(); ++i) {
        if (f->params[i] == b->data) param_index_[b.get()] = i;
      }
    }
    alignment_.assign(f->params.size(), 1);
    CudaSource out;
    symbol_ = out.symbol = CudaKernelSymbol(f->name);
    out.source = Generate(f);
    CheckThreadStores(f);  // after the loops' own refusals (a ragged extent bound to a thread axis)
    out.param_alignment = alignment_;
    CheckLaneGroups();
    out.launch = launch_;
    out.emulator_entry = EmulatorEntry(f);
    out.synchronizes = synchronizes_;
    return out;
  }

 protected:
  void EmitPrelude() override { out_ << kCudaPrelude << "\n"; }
  // Through the prelude's functions, which the emulator checks (a zero divisor traps).
  std::string IntegerDivision(BinaryOp op, const std::string& a, const std::string& b) override {
    if (op == BinaryOp::kDiv) return "sparsetir_truncdiv(" + a + ", " + b + ")";
    return CodegenC::IntegerDivision(op, a, b);
  }

  void EmitEntry(const PrimFunc& f) override {
    std::string params;
    for (const Var& p : f->params) {
      params += params.empty() ? "" : ", ";
      if (p->dtype != DataType::kHandle) {
        params += std::string("const ") + StorageType(p->dtype) + " " + Name(p.get(), p->name);
        continue;
      }
      const BufferNode* bound = nullptr;
      for (const Buffer& b : f->buffers) {
        if (b->kind == BufferKind::kMatch && b->data == p) bound = b.get();
      }
      if (!bound) {  // a handle no buffer reads (a format function's): passed, unused
        params += "void* " + Name(p.get(), p->name);
        continue;
      }
      std::string name = Name(bound, bound->name);
      names_[p.get()] = name;
      params += std::string(BufferStorage(bound)) + "* __restrict__ " + name;
    }
    for (const Buffer& b : f->buffers) {
      if (b->kind != BufferKind::kMatch || IsWorkspace(b.get())) {
        throw UserError(UserErrorKind::kSchedule,
                        "buffer '" + b->name + "' is allocated by the kernel (a workspace); the cuda target does "
                        "not allocate workspaces yet: cache it in local scope or leave the reduction unfactored");
      }
    }
    std::ostringstream body;
    out_.swap(body);
    indent_ = 1;
    if (f->body) EmitStmt(f->body);
    out_.swap(body);
    // The signature after the body, whose bound loops make the block.
    functions_.push_back("extern \"C\" __global__ void " + LaunchBounds() + symbol_ + "(" + params + ") {\n" +
                         body.str() + "}\n");
  }

  void EmitFor(const ForNode* loop) override {
    std::string type = StorageType(loop->var->dtype);
    std::string var = Name(loop->var.get(), loop->var->name);
    std::string begin = Expr2C(loop->min);
    if (loop->for_kind == ForKind::kParallel) {
      throw UserError(UserErrorKind::kSchedule, "loop '" + loop->var->name +
                                                    "' is parallel, a CPU schedule; for the cuda target bind it "
                                                    "to blockIdx / threadIdx (sch.bind)");
    }
    if (loop->for_kind == ForKind::kThreadBinding) {
      int dim = TagIndex(loop->thread_tag);
      if (dim < 0) {
        throw UserError(UserErrorKind::kSchedule, "loop '" + loop->var->name + "' is bound to '" + loop->thread_tag +
                                                      "'; the cuda target knows blockIdx.{x,y,z} and threadIdx.{x,y,z}");
      }
      // A launch extent is evaluated by the host before the kernel runs:
      // in terms of the parameters, with the lets it names (hoisted
      // invariants such as a split's ceil(batch / 4)) substituted.
      const Expr extent = Substitute(loop->extent, lets_);
      if (ReadsBuffer(extent)) {
        throw UserError(UserErrorKind::kSchedule,
                        "loop '" + loop->var->name + "' bound to " + loop->thread_tag +
                            " has an extent that reads a buffer; bind loops whose extent the host knows (a dense "
                            "dimension, or a split of one)");
      }
      launch_[dim].push_back(extent);
      Line("{");
      ++indent_;
      const auto* zero = AsConstInt(loop->min);
      Line("const " + type + " " + var + " = (" + type + ")" + loop->thread_tag +
           (zero && *zero == 0 ? "" : " + " + begin) + ";");
      Line("if (" + var + " < " + (zero && *zero == 0 ? "" : begin + " + ") + Expr2C(loop->extent) + ") {");
      ++indent_;
      EmitStmt(loop->body);
      --indent_;
      Line("}");
      --indent_;
      Line("}");
      return;
    }
    if (loop->for_kind == ForKind::kVectorized) {
      EmitVectorizedFor(loop);
      return;
    }
    EmitSerialFor(loop, loop->for_kind == ForKind::kUnrolled ? "#pragma unroll" : KeptLoop(loop) ? "#pragma unroll 1" : "");
  }

  // A vectorized loop: its lanes run as an unrolled loop over registers, and
  // the accesses that qualify (vector_access.h) move as vectors: each load
  // once before the loop, the store once after it. The kernel's arguments
  // that such an access reads or writes must start at an address aligned
  // for it (CudaSource::param_alignment, checked at launch).
  void EmitVectorizedFor(const ForNode* loop) {
    const VectorAccesses plan = PlanVectorAccesses(loop, [this](const VarNode* v) { return LetFactor(v); });
    if (plan.empty()) {
      EmitSerialFor(loop, "#pragma unroll");
      return;
    }
    const std::string lane = Name(loop->var.get(), loop->var->name), lanes = std::to_string(plan.lanes);
    auto vector_type = [&](const BufferNode* b) {
      return std::string("sparsetir_vec<") + BufferStorage(b) + ", " + lanes + ">";
    };
    auto first = [&](const Buffer& b, const std::vector<Expr>& indices) { return AddressOf(b, indices); };
    Line("{  // " + CommentText(loop->var->name) + ": " + lanes + " lanes, vector accesses");
    ++indent_;
    for (const VectorLoad& v : plan.loads) {
      const std::string name = Fresh(Name(v.buffer.get(), v.buffer->name) + "_v");
      Line("const " + vector_type(v.buffer.get()) + " " + name + " = sparsetir_vload<" + BufferStorage(v.buffer.get()) +
           ", " + lanes + ">(" + first(v.buffer, v.first) + ");");
      for (const BufferLoadNode* use : v.uses) load_accesses_[use] = name + ".v[" + lane + "]";
      RequireAlignment(v.buffer.get(), plan.lanes);
    }
    std::string stored;
    if (plan.store) {
      const BufferNode* b = plan.store->store->buffer.get();
      stored = Fresh(Name(b, b->name) + "_v");
      Line(vector_type(b) + " " + stored + ";");
      store_targets_[plan.store->store] = stored + ".v[" + lane + "]";
      RequireAlignment(b, plan.lanes);
    }
    EmitSerialFor(loop, "#pragma unroll");
    if (plan.store) Line("sparsetir_vstore(" + first(plan.store->store->buffer, plan.store->first) + ", " + stored + ");");
    for (const VectorLoad& v : plan.loads) {
      for (const BufferLoadNode* use : v.uses) load_accesses_.erase(use);
    }
    if (plan.store) store_targets_.erase(plan.store->store);
    --indent_;
    Line("}");
  }

  // The power of two known to divide a let-bound variable (its value in
  // terms of the parameters and loops); 1 for anything else.
  int64_t LetFactor(const VarNode* v) {
    auto found = lets_.find(v);
    if (found == lets_.end()) return 1;
    return KnownPowerOfTwoFactor(found->second, [](const VarNode*) { return int64_t{1}; });
  }

  // A vector access of `lanes` elements of `b`: if it is a kernel argument,
  // its start must be aligned for the vector.
  void RequireAlignment(const BufferNode* b, int64_t lanes) {
    auto param = param_index_.find(b);
    if (param == param_index_.end()) return;  // shared memory: declared aligned
    alignment_[param->second] = std::max(alignment_[param->second], VectorAlignment(b, lanes));
  }

  // A serial loop of constant extent around an unrolled one (a shared
  // cache's fill in groups of rounds): the schedule unrolled the inner loop
  // to issue its loads together and kept the outer one a loop. nvcc would
  // unroll a short constant loop whole, and the registers with it (a
  // tensor-core bsrmm kernel went from 40 to 191 on sm_90).
  static bool KeptLoop(const ForNode* loop) {
    if (!AsConstInt(loop->extent)) return false;
    Stmt body = loop->body;
    while (const auto* let = body->as<LetNode>()) body = let->body;
    const auto* inner = body->as<ForNode>();
    return inner && (inner->for_kind == ForKind::kUnrolled || inner->for_kind == ForKind::kVectorized);
  }

  // A butterfly of __shfl_xor_sync over the caller's group of lanes (the
  // prelude's sparsetir_lane_reduce); beyond a warp, the whole block's
  // reduction through shared memory (sparsetir_block_reduce).
  std::string LaneReduction(const CallNode* n) override {
    synchronizes_ = true;
    const char* op = n->op == Intrinsic::kLaneSum ? "SparsetirSum" : n->op == Intrinsic::kLaneMax ? "SparsetirMax"
                                                                                                   : "SparsetirMin";
    const int64_t lanes = LaneGroup(n, n->args[1]);
    lane_groups_.emplace_back(n->op, lanes);
    const char* reduce = lanes > kWarpLanes ? "sparsetir_block_reduce<" : "sparsetir_lane_reduce<";
    return std::string(reduce) + op + ">(" + Expr2C(n->args[0]) + ", " + std::to_string(lanes) + ")";
  }

  // __shfl_sync over the caller's group of lanes (the prelude's
  // sparsetir_lane_shuffle).
  std::string LaneShuffle(const CallNode* n) override {
    synchronizes_ = true;
    const int64_t lanes = LaneGroup(n, n->args[2]);
    lane_groups_.emplace_back(n->op, lanes);
    return "sparsetir_lane_shuffle(" + Expr2C(n->args[0]) + ", " + Expr2C(n->args[1]) + ", " + std::to_string(lanes) +
           ")";
  }

  // The lanes of a lane operation's group: a script may name a size
  // parameter, which must have been specialized to a power of two (a
  // reduction that lower_lane_reductions made may span a block).
  static int64_t LaneGroup(const CallNode* n, const Expr& lanes) {
    const int64_t* count = AsConstInt(lanes);
    const int64_t most = IsLaneReduction(n->op) ? kMaxLaneGroup : kWarpLanes;
    if (!count || *count < 1 || *count > most || (*count & (*count - 1)) != 0) {
      throw UserError(UserErrorKind::kSchedule,
                      std::string("T.sp.") + ToString(n->op) + ": the lanes must be a power of two from 1 to " +
                          std::to_string(most) + " when the kernel is built; specialize the size parameter " +
                          "that names them");
    }
    return *count;
  }

  // "&name[index]", the address of an element. Appended piece by piece: GCC
  // 12 warns, wrongly, of an overlapping copy in `"&" + std::string(...)`
  // (its bug 105651).
  std::string AddressOf(const Buffer& b, const std::vector<Expr>& indices) {
    std::string s = "&";
    s += Name(b.get(), b->name);
    s += "[";
    s += Index(b, indices);
    s += "]";
    return s;
  }

  // A warp's m16n8k16 tile (the prelude's sparsetir_mma_m16n8k16): the
  // accumulator is this lane's fragment of the tile (lower_mma_fragments),
  // A and B the tiles' first elements with the distances between their rows
  // and columns.
  void EmitMma(const MmaNode* n) override {
    synchronizes_ = true;  // lanes exchange operands (shuffles before sm_80 and under the emulator)
    const auto* acc = n->acc->as<BufferLoadNode>();
    const auto* a = n->a->as<BufferLoadNode>();
    const auto* b = n->b->as<BufferLoadNode>();
    auto element = [&](const BufferLoadNode* load) { return AddressOf(load->buffer, load->indices); };
    const char* bf16 = a->buffer->dtype == DataType::kBFloat16 ? "true" : "false";
    auto stride = [&](int s) { return ", (int64_t)" + Expr2C(n->strides[s]); };
    Line(std::string("sparsetir_mma_m16n8k16<") + bf16 + ">(" + element(acc) + ", " + element(a) + stride(0) +
         stride(1) + ", " + element(b) + stride(2) + stride(3) + ");");
  }

  void EmitBarrier() override {
    synchronizes_ = true;
    Line("__syncthreads();");
  }

  // A shared cache: one __shared__ array per block, whose first statement
  // (lower_shared_caches) is the fill that the block's threads share, between
  // two barriers: before it, no thread may still read the previous
  // iteration's tile; after it, every element is written. Caches nested
  // directly in one another (a loop's two operands) are filled between the
  // same two barriers.
  void EmitAllocate(const AllocateNode* n) override {
    if (n->buffer->scope != "shared") {
      CodegenC::EmitAllocate(n);
      return;
    }
    synchronizes_ = true;
    if (own_barriers_) {
      // The script's own shared buffer: its T.sp.sync_threads() order the
      // threads' writes and reads.
      DeclareShared(n->buffer);
      EmitStmt(n->body);
      scope_.pop_back();
      return;
    }
    std::vector<const AllocateNode*> caches;
    Stmt rest;
    for (const AllocateNode* cache = n; cache;) {
      const auto* seq = cache->body->as<SeqNode>();
      ICHECK(seq && seq->stmts.size() == 2) << "lower_shared_caches leaves a shared cache's fill and the rest";
      caches.push_back(cache);
      rest = seq->stmts[1];
      cache = rest->as<AllocateNode>();
      if (cache && cache->buffer->scope != "shared") cache = nullptr;
    }
    Line("{");
    ++indent_;
    for (const AllocateNode* cache : caches) DeclareShared(cache->buffer);
    Line("__syncthreads();  // the block is done with the previous tiles");
    for (const AllocateNode* cache : caches) EmitStmt(cache->body->as<SeqNode>()->stmts[0]);
    Line("__syncthreads();  // the tiles are filled");
    EmitStmt(rest);
    scope_.resize(scope_.size() - caches.size());
    --indent_;
    Line("}");
  }

  // No EmitPrefetch: cache hints have no CUDA counterpart worth emitting, as
  // other warps hide the latency of a gather.

 private:
  // The emulator's entry (simt_emulator.h), with the C type of each parameter
  // as the kernel declares it.
  std::string EmulatorEntry(const PrimFunc& f) {
    std::vector<std::string> types;
    for (const Var& p : f->params) {
      if (p->dtype != DataType::kHandle) {
        types.push_back(StorageType(p->dtype));
        continue;
      }
      const BufferNode* bound = nullptr;
      for (const Buffer& b : f->buffers) {
        if (b->kind == BufferKind::kMatch && b->data == p) bound = b.get();
      }
      types.push_back(std::string(bound ? BufferStorage(bound) : "void") + "*");
    }
    return SimtEmulatorEntry(symbol_, types);
  }

  // __launch_bounds__ for a block of more than kUnboundedBlockThreads (a
  // constant number): ptxas then keeps to the registers that many threads
  // may share (65,536 / threads each), where it could take up to 255 and the
  // launch would fail for want of registers.
  std::string LaunchBounds() const {
    int64_t threads = 1;
    for (int axis = 3; axis < 6; ++axis) {
      int64_t most = 1;
      for (const Expr& extent : launch_[axis]) {
        const int64_t* c = AsConstInt(extent);
        if (!c) return "";  // the host's launch decides
        most = std::max(most, *c);
      }
      threads *= most;
    }
    return threads > kUnboundedBlockThreads ? "__launch_bounds__(" + std::to_string(threads) + ") " : "";
  }

  // A lane reduction within a warp combines groups of consecutive threads
  // along threadIdx.x: the block's x extent must be a multiple of the group
  // (a script's T.sp.lane_sum as much as lower_lane_reductions' own).
  void CheckLaneGroups() const {
    int64_t threads = 1;
    for (const Expr& extent : launch_[3]) {
      const int64_t* c = AsConstInt(extent);
      if (!c) return;  // the host's launch decides; nothing to check here
      threads = std::max(threads, *c);
    }
    for (const auto& [op, lanes] : lane_groups_) {
      if (lanes <= kWarpLanes && threads % lanes != 0) {
        throw UserError(UserErrorKind::kSchedule,
                        std::string("T.sp.") + ToString(op) + "(..., " + std::to_string(lanes) +
                            ") combines groups of " + std::to_string(lanes) +
                            " lanes along threadIdx.x, but the block has " +
                            std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
                            " along threadIdx.x; bind a loop of a multiple of " + std::to_string(lanes) +
                            " threads to it");
      }
    }
  }

  void DeclareShared(const Buffer& buffer) {
    int64_t elements = 1;
    for (const Expr& dim : buffer->shape) {
      const int64_t* extent = AsConstInt(dim);
      if (!extent) {
        throw UserError(UserErrorKind::kSchedule, "shared buffer '" + buffer->name + "' has the extent " + Print(dim) +
                                                      ", not a constant: a block declares its shared memory when "
                                                      "the kernel is built; specialize the sizes it depends on");
      }
      elements *= *extent;
    }
    shared_bytes_ += elements * BytesOf(buffer->dtype);
    if (shared_bytes_ > kMaxStaticSharedBytes) {
      const std::string what = own_barriers_ ? "buffers" : "caches";
      throw UserError(UserErrorKind::kSchedule,
                      "the shared " + what + " of this kernel take " + std::to_string(shared_bytes_) + " bytes with '" +
                          buffer->name + "', more than the " + std::to_string(kMaxStaticSharedBytes) +
                          " a block may declare; " +
                          (own_barriers_ ? "allocate smaller tiles" : "cache a smaller loop (split it first)"));
    }
    const std::string type = BufferStorage(buffer.get()), name = Name(buffer.get(), buffer->name);
    Line("__shared__ __align__(16) " + type + " " + name + "[" + std::to_string(elements) + "];  // one per block");
    scope_.push_back({type + "*", name});
  }

  std::string symbol_;  // the kernel's name (CudaKernelSymbol)
  std::array<std::vector<Expr>, 6> launch_;
  std::map<const BufferNode*, size_t> param_index_;  // an argument's buffer -> the parameter it binds
  std::vector<int64_t> alignment_;                    // per parameter, in bytes
  std::vector<std::pair<Intrinsic, int64_t>> lane_groups_;  // every lane reduction's combiner and lanes
  bool synchronizes_ = false;
  bool own_barriers_ = false;  // the kernel writes T.sp.sync_threads(): its shared buffers are its own
  int64_t shared_bytes_ = 0;  // the static shared memory declared so far
};

}  // namespace

std::string CudaKernelSymbol(const std::string& function_name) {
  return IsScriptName(function_name) ? "sparsetir_kernel_" + function_name : "sparsetir_kernel";
}

CudaSource CodegenCuda(const PrimFunc& f) { return CodegenCudaImpl().Run(f); }

}  // namespace sparsetir
