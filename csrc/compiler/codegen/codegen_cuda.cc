#include "codegen/codegen_cuda.h"

#include "codegen/abi.h"
#include "codegen/identifiers.h"
#include "codegen/prelude_cuda.h"
#include "ir/functor.h"
#include "support/error.h"
#include "transforms/lift_workspaces.h"

namespace sparsetir {
namespace {

int TagIndex(const std::string& tag) {
  for (int d = 0; d < 6; ++d) {
    if (tag == kLaunchTags[d]) return d;
  }
  return -1;
}

// True if `e` reads a buffer: a launch extent must be computable from the
// scalar arguments alone (structure arrays live on the device).
bool ReadsBuffer(const Expr& e) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit(const BufferLoadNode*) override { found = true; }
  } finder;
  finder.VisitExpr(e);
  return finder.found;
}

class CodegenCudaImpl : public CodegenC {
 public:
  CudaSource Run(const PrimFunc& f) {
    CudaSource out;
    out.source = Generate(f);
    out.launch = launch_;
    out.emulator_entry = EmulatorEntry(f);
    return out;
  }

 protected:
  void EmitPrelude() override { out_ << kCudaPrelude << "\n"; }

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
    std::ostringstream kernel;
    out_.swap(kernel);
    out_ << "extern \"C\" __global__ void " << kCudaKernelSymbol << "(" << params << ") {\n";
    indent_ = 1;
    if (f->body) EmitStmt(f->body);
    out_ << "}\n";
    out_.swap(kernel);
    functions_.push_back(kernel.str());
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
    const bool unrolled = loop->for_kind == ForKind::kVectorized || loop->for_kind == ForKind::kUnrolled;
    EmitSerialFor(loop, unrolled ? "#pragma unroll" : "");
  }

  // No EmitPrefetch: cache hints have no CUDA counterpart worth emitting, as
  // other warps hide the latency of a gather.

 private:
  // sparsetir_main(args, launcher) for the emulator: args holds the kernel's
  // arguments in parameter order, then the six launch dimensions.
  std::string EmulatorEntry(const PrimFunc& f) {
    // Built with std::string and std::to_string only (no stream formatting of
    // integers, which is locale-dependent and differs between the C++
    // runtimes a host process may have loaded).
    const size_t n = f->params.size();
    auto arg = [&](size_t i) { return "args[" + std::to_string(i) + "]"; };
    std::string s = "extern \"C\" int32_t " + std::string(kEntrySymbol) +
                    "(const SparsetirArg* __restrict__ args, const SparsetirLauncher* launcher) {\n";
    s += "  const sparsetir_uint3 grid = {(unsigned)" + arg(n) + ".i64, (unsigned)" + arg(n + 1) + ".i64, (unsigned)" +
         arg(n + 2) + ".i64};\n";
    s += "  const sparsetir_uint3 block = {(unsigned)" + arg(n + 3) + ".i64, (unsigned)" + arg(n + 4) +
         ".i64, (unsigned)" + arg(n + 5) + ".i64};\n";
    s += "  auto sparsetir_body = [&](int64_t sparsetir_begin, int64_t sparsetir_end) {\n";
    s += "    sparsetir_emulate_blocks(grid, block, sparsetir_begin, sparsetir_end, [&] {\n";
    s += "      " + std::string(kCudaKernelSymbol) + "(";
    for (size_t i = 0; i < n; ++i) {
      const Var& p = f->params[i];
      s += i ? ",\n          " : "";
      if (p->dtype == DataType::kHandle) {
        const BufferNode* bound = nullptr;
        for (const Buffer& b : f->buffers) {
          if (b->kind == BufferKind::kMatch && b->data == p) bound = b.get();
        }
        s += "(" + std::string(bound ? BufferStorage(bound) : "void") + "*)" + arg(i) + ".ptr";
      } else {
        s += "(" + std::string(StorageType(p->dtype)) + ")" + arg(i) + ".i64";
      }
    }
    s += ");\n    });\n  };\n";
    s += "  const int64_t sparsetir_blocks = (int64_t)grid.x * grid.y * grid.z;\n";
    s += "  launcher->parallel_for(launcher->ctx, 0, sparsetir_blocks, 1, sparsetir_task<decltype(sparsetir_body)>, "
         "&sparsetir_body);\n";
    s += "  return 0;\n}\n";
    return std::string(kAbiText) + "\ntemplate <typename F> static void sparsetir_task(void* closure, int64_t begin, "
                                   "int64_t end) {\n  (*static_cast<F*>(closure))(begin, end);\n}\n" +
           s;
  }

  std::array<std::vector<Expr>, 6> launch_;
};

}  // namespace

CudaSource CodegenCuda(const PrimFunc& f) { return CodegenCudaImpl().Run(f); }

}  // namespace sparsetir
