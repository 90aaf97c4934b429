#include "kernel_library.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "ir_dump.h"
#include "launcher.h"
#include "parser/parser.h"
#include "cuda_launch.h"
#include "recipes/cpu_recipes.h"
#include "recipes/cuda_recipes.h"
#include "race_checked_tensors.h"
#include "runtime/simt_scheduler.h"
#include "support/error.h"
#include "tensor_args.h"
#include "transforms/format_decompose.h"

namespace sparsetir::ops {
namespace {

// Below this many flops a call runs serially: forking the thread team costs
// several microseconds, the work a fraction of that.
constexpr int64_t kParallelWork = 1 << 16;

std::mutex& DirectoryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::string& Directory() {
  static std::string directory;
  return directory;
}

std::string ReadScript(const std::string& name) {
  std::string directory;
  {
    std::lock_guard<std::mutex> lock(DirectoryMutex());
    directory = Directory();
  }
  if (directory.empty()) {
    throw std::runtime_error("sparsetir: the kernel scripts' folder is not set; import sparsetir_torch first");
  }
  std::string path = directory + "/" + name + ".py";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("sparsetir: cannot read the kernel script " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void ReplaceQuoted(std::string* text, const std::string& from, const std::string& to) {
  const std::string a = "\"" + from + "\"", b = "\"" + to + "\"";
  for (size_t at = text->find(a); at != std::string::npos; at = text->find(a, at + b.size())) {
    text->replace(at, a.size(), b);
  }
}

std::string KeyOf(const KernelRequest& r) {
  std::string key = r.script + "|" + r.recipe + "|" + c10::toString(r.value_dtype) + "|" + c10::toString(r.index_dtype);
  for (const auto& [name, value] : r.sizes) key += "|" + name + "=" + std::to_string(value);
  static const char* const kPrefetchKeys[] = {"", "|prefetch", "|prefetch-l2"};
  return key + kPrefetchKeys[static_cast<int>(r.prefetch)] + "|" + r.target.str();
}

// kernels/<name>.py in the request's value and index dtypes.
PrimFunc ParseScript(const std::string& name, const KernelRequest& r) {
  return Parse(KernelScriptFor(name, FromTorch(r.value_dtype), FromTorch(r.index_dtype)), name + ".py");
}

// The function a request schedules: the script, or for the recipes of hyb's
// ELL buckets (recipes/cpu_recipes.h) the script decomposed onto one bucket
// (kernels/formats/ell_rows.py, rule "ell"): its compute part without the
// init, as the operator initializes the output once for all buckets.
// "overwrite" buckets partition the rows: each writes its own
// (format_decompose's disjoint form).
PrimFunc ScriptFunction(const KernelRequest& r) {
  PrimFunc f = ParseScript(r.script, r);
  if (!IsEllBucketRecipe(r.recipe)) return f;
  const bool disjoint = r.recipe == std::string(kEllBucketRecipe) + "overwrite";
  return ComputePart(FormatDecompose(f, {{"ell", ParseScript("formats/ell_rows", r)}}, disjoint), false);
}

PrimFunc Scheduled(const KernelRequest& r) { return ScheduleOpKernel(r).mod(); }

std::shared_ptr<const OpKernel> Build(const KernelRequest& r) {
  IrDumpScope scope;  // one numbered dump: the script, the recipe's steps, the passes
  return std::make_shared<OpKernel>(Kernel::Build(Scheduled(r), r.target));
}

// One table entry: built once under its own mutex, so a slow compile of one
// kernel does not stall lookups of the others.
struct Slot {
  std::mutex mutex;
  std::shared_ptr<const OpKernel> kernel;
};

}  // namespace

bool EmulateCuda() {
  const char* value = std::getenv("SPARSETIR_EMULATE_CUDA");
  return value && std::string(value) == "1";
}

Target TargetFor(const at::Tensor& t, const std::string& recipe) {
  if (t.is_cuda() || (EmulateCuda() && HasCudaRecipe(recipe))) return Target::Cuda();
  return Target::HostCpu();
}

bool AccumulatesInNarrowOutput(at::ScalarType dtype, const Target& target, int64_t tile) {
  return (dtype == at::kHalf || dtype == at::kBFloat16) && target.is_cpu() && tile > kMaxLocalTile;
}

std::string ReadKernelScript(const std::string& name) { return ReadScript(name); }

// Every `from` not inside a longer name (T.float32, not T.float32x or xT.float32).
void ReplaceName(std::string* text, const std::string& from, const std::string& to) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at)) {
    const size_t end = at + from.size();
    if ((at > 0 && (name_char((*text)[at - 1]) || (*text)[at - 1] == '.')) ||
        (end < text->size() && name_char((*text)[end]))) {
      at = end;
      continue;
    }
    text->replace(at, from.size(), to);
    at += to.size();
  }
}

std::string PutDtypes(std::string text, DataType value_dtype, DataType index_dtype) {
  ReplaceQuoted(&text, "float32", ToString(value_dtype));
  ReplaceQuoted(&text, "int32", ToString(index_dtype));
  ReplaceName(&text, "T.float32", "T." + ToString(AccumulatorOf(value_dtype)));
  return text;
}

std::string KernelScriptFor(const std::string& name, DataType value_dtype, DataType index_dtype) {
  return PutDtypes(ReadScript(name), value_dtype, index_dtype);
}

Schedule ScheduleOpKernel(const KernelRequest& r) {
  PrimFunc f = ScriptFunction(r);
  if (r.target.is_cuda()) return ScheduleForCuda(f, r.recipe, r.sizes);
  RecipeOptions options;
  options.prefetch = r.prefetch;
  options.target = r.target;
  return ScheduleForCpu(f, r.recipe, r.sizes, options);
}

PrimFunc ScheduledOpFunction(const KernelRequest& request) { return Scheduled(request); }

void SetKernelDirectory(const std::string& directory) {
  std::lock_guard<std::mutex> lock(DirectoryMutex());
  Directory() = directory;
}

OpKernel::OpKernel(std::shared_ptr<Kernel> kernel) : kernel_(std::move(kernel)) {
  auto names = kernel_->param_names();
  for (size_t i = 0; i < names.size(); ++i) slots_[names[i]] = i;
}

size_t OpKernel::slot(const std::string& param) const {
  auto found = slots_.find(param);
  ICHECK(found != slots_.end()) << "kernel " << kernel_->name() << " has no parameter " << param;
  return found->second;
}

std::shared_ptr<const OpKernel> GetOpKernel(const KernelRequest& request) {
  static std::mutex table_mutex;
  static std::map<std::string, std::shared_ptr<Slot>> table;
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(table_mutex);
    auto& entry = table[KeyOf(request)];
    if (!entry) entry = std::make_shared<Slot>();
    slot = entry;
  }
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (!slot->kernel) slot->kernel = Build(request);
  return slot->kernel;
}

KernelCall::KernelCall(const OpKernel& kernel)
    : kernel_(kernel), args_(kernel.arity()), tensors_(kernel.arity()), set_(kernel.arity(), false) {}

KernelCall& KernelCall::Set(const std::string& param, const at::Tensor& tensor) {
  size_t i = kernel_.slot(param);
  const int device = tensor.is_cuda() ? tensor.device().index() : -1;
  ICHECK(tensor.is_contiguous() && (tensor.device().is_cpu() || (tensor.is_cuda() && kernel_.kernel().target().is_cuda())))
      << "operator passed a bad tensor for " << param;
  ICHECK(!has_tensor_ || device == device_) << "operator passed tensors on two devices";
  has_tensor_ = true;
  device_ = device;
  // A cuda kernel's vector accesses need an aligned start (Kernel::alignment).
  // An input that starts elsewhere (a view with a storage offset) is read
  // from a copy, which the allocator aligns; outputs are the operators' own.
  at::Tensor passed = tensor;
  const int64_t alignment = kernel_.kernel().alignment(i);
  if (alignment > 1 && reinterpret_cast<uintptr_t>(tensor.data_ptr()) % alignment != 0) {
    const auto& written = kernel_.kernel().written_params();
    ICHECK(std::find(written.begin(), written.end(), i) == written.end())
        << "operator passed an output for " << param << " that is not aligned for the kernel's vector stores";
    passed = tensor.clone();
  }
  args_[i].ptr = passed.data_ptr();
  tensors_[i] = passed;
  set_[i] = true;
  return *this;
}

KernelCall& KernelCall::Set(const std::string& param, int64_t value) {
  size_t i = kernel_.slot(param);
  args_[i].i64 = value;
  set_[i] = true;
  return *this;
}

void KernelCall::Run(int64_t work) const {
  for (size_t i = 0; i < set_.size(); ++i) {
    ICHECK(set_[i]) << "operator left parameter " << kernel_.kernel().param_names()[i] << " of "
                    << kernel_.kernel().name() << " unset";
  }
  if (device_ >= 0) {
    LaunchOnDevice(kernel_.kernel(), args_.data(), device_);
    return;
  }
  if (kernel_.kernel().target().is_cuda() && SimtRaceCheckRequested() &&
      RaceCheckApplies(kernel_.kernel().source())) {
    // Under the emulator's race check: run it in three orders and compare what it wrote.
    RunRaceCheckedOnTensors(kernel_.kernel().name(), tensors_, kernel_.kernel().param_names(),
                            [&] { RunOnHost(work); });
    return;
  }
  RunOnHost(work);
}

void KernelCall::RunOnHost(int64_t work) const {
  if (work < kParallelWork) {
    kernel_.kernel().RunUnchecked(args_.data(), SerialLauncher());
    return;
  }
  SparsetirLauncher launcher = TorchLauncher();
  kernel_.kernel().RunUnchecked(args_.data(), &launcher);
}

}  // namespace sparsetir::ops
