// Python bindings of Kernel: a PrimFunc built for a target and called with
// torch tensors and ints, checked before it runs (the structure arrays'
// contents once per graph), on the CPU, under the SIMT emulator or on a GPU.
#include <torch/extension.h>

#include "cuda_launch.h"
#include "launcher.h"
#include "python_bindings.h"
#include "race_checked_tensors.h"
#include "revalidation.h"
#include "runtime/kernel.h"
#include "runtime/simt_race_check.h"
#include "runtime/simt_scheduler.h"
#include "support/error.h"
#include "tensor_args.h"
#include "validated_calls.h"

namespace sparsetir::ops {
namespace {

// The structure tensors and integer arguments of a call, for the validated-call
// memo; false if a structure argument is not a CPU tensor (the full check
// reports it) or is an inference tensor (no version counter to tell an edit
// by: it is checked on every call).
bool StructureOf(const Kernel& kernel, const py::list& values, const std::vector<KernelArg>& args,
                 std::vector<at::Tensor>* structure, std::vector<int64_t>* scalars) {
  for (size_t i : kernel.structure_params()) {
    if (i >= args.size() || args[i].kind != KernelArg::Kind::kTensor || args[i].device != "cpu") return false;
    structure->push_back(THPVariable_Unpack(values[i].ptr()));
    if (structure->back().is_inference()) return false;
  }
  for (const KernelArg& a : args) {
    if (a.kind == KernelArg::Kind::kInt) scalars->push_back(a.int_value);
  }
  return true;
}

// The tensors among the call's arguments (undefined where an argument is not one).
std::vector<at::Tensor> TensorsOf(const py::list& values) {
  std::vector<at::Tensor> tensors;
  for (const py::handle& v : values) {
    tensors.push_back(THPVariable_Check(v.ptr()) ? THPVariable_Unpack(v.ptr()) : at::Tensor());
  }
  return tensors;
}

// Generated code declares every pointer __restrict__: an output that shares
// bytes with another argument would give an undefined result, so it is refused.
// Runs after Kernel::Check (contiguous tensors of known dtypes and devices).
void CheckOutputsDoNotOverlap(const Kernel& kernel, const std::vector<at::Tensor>& tensors) {
  auto bytes = [](const at::Tensor& t) {
    const char* begin = static_cast<const char*>(t.data_ptr());
    return std::make_pair(begin, begin + t.numel() * t.element_size());
  };
  const std::vector<std::string> names = kernel.param_names();
  for (size_t w : kernel.written_params()) {
    if (!tensors[w].defined() || tensors[w].numel() == 0) continue;
    const auto out = bytes(tensors[w]);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (i == w || !tensors[i].defined() || tensors[i].numel() == 0) continue;
      const auto other = bytes(tensors[i]);
      if (out.first < other.second && other.first < out.second) {
        throw UserError(UserErrorKind::kArgument,
                        kernel.name() + "(): argument '" + names[w] + "' is written by the kernel and overlaps argument '" +
                            names[i] + "' in memory; pass an output that shares no memory with the other arguments");
      }
    }
  }
}

// An in-place write, as autograd must see it: a tensor saved for backward
// and overwritten by a kernel then raises instead of giving a wrong gradient.
void BumpWrittenVersions(const Kernel& kernel, const std::vector<at::Tensor>& tensors) {
  for (size_t w : kernel.written_params()) {
    if (tensors[w].defined() && !tensors[w].is_inference()) tensors[w].unsafeGetTensorImpl()->bump_version();
  }
}

// A cuda kernel called with CUDA tensors: checked like any call (the
// structure arrays through host copies, as Check reads their elements), then
// launched on the tensors' device and torch's current stream there.
void RunOnDevice(const Kernel& kernel, std::vector<KernelArg>& args, const std::vector<at::Tensor>& tensors,
                 int device) {
  std::vector<at::Tensor> host(tensors.size());
  for (size_t i : kernel.structure_params()) {
    if (i < tensors.size() && tensors[i].defined() && tensors[i].is_cuda() && tensors[i].is_contiguous()) {
      host[i] = tensors[i].cpu();
      args[i].data = host[i].data_ptr();
    }
  }
  {
    py::gil_scoped_release release;
    kernel.Check(args);
    CheckOutputsDoNotOverlap(kernel, tensors);
    std::vector<SparsetirArg> packed(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].kind == KernelArg::Kind::kTensor) {
        packed[i].ptr = tensors[i].data_ptr();
      } else {
        packed[i].i64 = args[i].int_value;
      }
    }
    LaunchOnDevice(kernel, packed.data(), device);
  }
  BumpWrittenVersions(kernel, tensors);
}

// A kernel writes its outputs in place where autograd does not see it: a
// written tensor that requires grad would keep a graph that no longer
// describes it (torch refuses in-place ops on a leaf that requires grad).
void CheckWrittenTensorsTakeNoGradient(const Kernel& kernel, const std::vector<at::Tensor>& tensors) {
  if (!at::GradMode::is_enabled()) return;
  for (size_t w : kernel.written_params()) {
    if (w < tensors.size() && tensors[w].defined() && tensors[w].requires_grad()) {
      throw UserError(UserErrorKind::kArgument,
                      kernel.name() + "(): argument '" + kernel.param_names()[w] + "' requires grad, but the kernel writes it in "
                      "place, which autograd cannot follow: pass a tensor that does not require grad (or call "
                      "under torch.no_grad())");
    }
  }
}

void RunKernel(const std::shared_ptr<Kernel>& kernel, const py::list& values) {
  std::vector<KernelArg> args;
  args.reserve(values.size());
  for (const py::handle& v : values) args.push_back(ToKernelArg(v));
  std::vector<at::Tensor> tensors = TensorsOf(values);
  CheckWrittenTensorsTakeNoGradient(*kernel, tensors);
  if (kernel->target().is_cuda()) {
    for (const at::Tensor& t : tensors) {
      if (t.defined() && t.is_cuda()) return RunOnDevice(*kernel, args, tensors, t.device().index());
    }
  }
  std::vector<at::Tensor> structure;
  std::vector<int64_t> scalars;
  const bool memo = StructureOf(*kernel, values, args, &structure, &scalars);
  const bool validated = memo && !ValidateEveryCall() && StructureAlreadyValidated(kernel, structure, scalars);
  // Tensors stay alive: the caller's list holds them while the GIL is released.
  SparsetirLauncher launcher = TorchLauncher();
  py::gil_scoped_release release;
  kernel->Check(args, /*contents=*/!validated);
  CheckOutputsDoNotOverlap(*kernel, tensors);
  if (memo && !validated) RememberValidated(kernel, structure, scalars);
  if (kernel->target().is_cuda() && SimtRaceCheckRequested() && RaceCheckApplies(kernel->source())) {
    RunRaceCheckedOnTensors(kernel->name(), tensors, kernel->param_names(),
                            [&] { kernel->Run(args, &launcher, /*check=*/false); });
  } else {
    kernel->Run(args, &launcher, /*check=*/false);
  }
  BumpWrittenVersions(*kernel, tensors);
}

}  // namespace

void BindKernel(py::module_& m) {
  py::class_<Kernel, std::shared_ptr<Kernel>>(m, "Kernel")
      .def_property_readonly("name", &Kernel::name)
      .def_property_readonly("source", &Kernel::source)
      .def_property_readonly("param_names", &Kernel::param_names)
      .def_property_readonly("target", [](const Kernel& k) { return k.target().str(); })
      .def_property_readonly("lowered", [](const Kernel& k) { return PyPrimFunc{k.lowered()}; })
      .def("run", &RunKernel, "Runs with arguments in parameter order.");

  m.def(
      "build",
      [](const PyPrimFunc& f, const std::string& target) {
        Target parsed = Target::Parse(target);
        py::gil_scoped_release release;
        return Kernel::Build(f.func, parsed);
      },
      py::arg("func"), py::arg("target") = "cpu");
}

}  // namespace sparsetir::ops
