#include "runtime/kernel.h"

#include <algorithm>

#include "codegen/codegen_cpu.h"
#include "codegen/codegen_cuda.h"
#include "codegen/simt_emulator.h"
#include "lower.h"
#include "runtime/kernel_cache.h"
#include "support/error.h"

namespace sparsetir {

std::shared_ptr<Kernel> Kernel::Build(const PrimFunc& f, const Target& target) {
  auto kernel = std::shared_ptr<Kernel>(new Kernel());
  kernel->name_ = f->name;
  // Stage-I and stage-II functions list their iterators (stage III has none,
  // and then only the assume_buffer_domain facts are checked).
  std::vector<IndptrRule> rules;
  for (const SparseIterator& it : f->iterators) {
    if (IsVaried(it->kind)) rules.push_back({it->indptr, it->nnz});
  }
  static std::atomic<uint64_t> next_id{1};
  kernel->id_ = next_id++;
  kernel->target_ = target;
  kernel->lowered_ = LowerToStageIII(f);
  kernel->contract_ = Contract(f->name, kernel->lowered_, std::move(rules), target);
  if (target.is_cpu()) {
    kernel->source_ = CodegenCpu(kernel->lowered_);
    kernel->module_ = GetOrBuildCpuModule(kernel->source_, target);
  } else {
    CudaSource cuda = CodegenCuda(kernel->lowered_);
    kernel->source_ = cuda.source;
    kernel->cuda_symbol_ = cuda.symbol;
    kernel->launch_ = cuda.launch;
    kernel->alignment_ = cuda.param_alignment;
    const Kernel* self = kernel.get();  // the module lives no longer than its kernel
    kernel->module_ = std::make_shared<EmulatedCudaModule>(
        kSimtEmulatorHeader + "\n" + cuda.source + "\n" + cuda.emulator_entry, f->name,
        cuda.synchronizes, kernel->lowered_->params.size(),
        [self](const SparsetirArg* args) { return self->LaunchDims(args); });
  }
  return kernel;
}

void Kernel::Check(const std::vector<KernelArg>& args, bool contents) const {
  contract_.Check(args, contents);
  for (size_t i = 0; i < args.size(); ++i) {
    const int64_t bytes = alignment(i);
    const auto address = reinterpret_cast<uintptr_t>(args[i].data);
    if (args[i].kind != KernelArg::Kind::kTensor || bytes <= 1 || address % bytes == 0) continue;
    throw UserError(UserErrorKind::kArgument,
                    "kernel " + name_ + ": argument '" + lowered_->params[i]->name + "' must start at a multiple of " +
                        std::to_string(bytes) + " bytes, as the kernel moves its elements in vectors of that many "
                        "(sch.vectorize), but it starts " + std::to_string(address % bytes) +
                        " bytes past one (a view with a storage offset?); pass a copy (tensor.clone()) or leave the "
                        "loop unvectorized");
  }
}

std::vector<std::string> Kernel::param_names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < contract_.call_params(); ++i) names.push_back(lowered_->params[i]->name);
  return names;
}

void Kernel::Run(const std::vector<KernelArg>& args, const SparsetirLauncher* launcher, bool check) const {
  if (check) Check(args);
  ICHECK(args.size() == contract_.call_params()) << name_ << ": run with " << args.size() << " arguments";
  std::vector<SparsetirArg> packed(lowered_->params.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind == KernelArg::Kind::kTensor) {
      packed[i].ptr = args[i].data;
    } else {
      packed[i].i64 = args[i].int_value;
    }
  }
  std::vector<std::vector<uint64_t>> workspaces = contract_.AllocateWorkspaces(args);
  const std::vector<size_t> slots = contract_.workspace_params();
  for (size_t k = 0; k < workspaces.size(); ++k) packed[slots[k]].ptr = workspaces[k].data();
  RunUnchecked(packed.data(), launcher);
}

std::array<int64_t, 6> Kernel::LaunchDims(const SparsetirArg* args) const {
  ICHECK(target_.is_cuda()) << "launch dimensions of a " << target_.str() << " kernel";
  std::vector<Expr> extents;  // every dimension's, evaluated with the scalars bound once
  for (const std::vector<Expr>& dim : launch_) extents.insert(extents.end(), dim.begin(), dim.end());
  const std::vector<int64_t> values = contract_.EvalScalars(extents, args);
  std::array<int64_t, 6> dims;
  size_t next = 0;
  for (int d = 0; d < 6; ++d) {
    int64_t extent = 1;
    if (!launch_[d].empty()) {
      extent = 0;
      for (size_t k = 0; k < launch_[d].size(); ++k) extent = std::max(extent, values[next++]);
    }
    dims[d] = std::max<int64_t>(extent, 0);
  }
  const int64_t threads = dims[3] * dims[4] * dims[5];
  if (threads > 1024) {
    throw UserError(UserErrorKind::kSchedule, "kernel " + name_ + " launches blocks of " + std::to_string(threads) +
                                                  " threads; a CUDA block holds at most 1024");
  }
  return dims;
}

void Kernel::RunUnchecked(const SparsetirArg* args, const SparsetirLauncher* launcher) const {
  try {
    module_->Launch(args, launcher ? launcher : SerialLauncher());
  } catch (const KernelStatusError& e) {
    ThrowArgumentError(name_ + "(): " + e.what());
  }
}

const SparsetirLauncher* SerialLauncher() {
  static const SparsetirLauncher launcher = {
      nullptr,
      [](void*, int64_t begin, int64_t end, int64_t, SparsetirTask task, void* closure) {
        if (begin < end) task(closure, begin, end);
      },
      1};
  return &launcher;
}

}  // namespace sparsetir
