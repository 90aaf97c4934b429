// Python bindings of the compiler: parse / print / lower / build, and kernels
// called with torch tensors. Errors map to Python exceptions: a script error to
// sparsetir_torch.ScriptError, a bad argument to ValueError, a compiler failure to
// sparsetir_torch.CompileError, a compiler bug to RuntimeError.
#include <torch/extension.h>

#include <cstring>
#include <optional>

#include "codegen/codegen_cpu.h"
#include "codegen/codegen_cuda.h"
#include "cuda_launch.h"
#include "lower.h"
#include "graph_cache.h"
#include "hyb_plan.h"
#include "ir/equal.h"
#include "ir_dump.h"
#include "kernel_library.h"
#include "csr_kernels.h"
#include "ops.h"
#include "emulate_cuda.h"
#include "launch_cuda.h"
#include "cuda_param_values.h"
#include "codegen/cuda_kernel_params.h"
#include "race_checked_tensors.h"
#include "runtime/simt_scheduler.h"
#include "ir/printer.h"
#include "launcher.h"
#include "output_alloc.h"
#include "parser/parser.h"
#include "revalidation.h"
#include "runtime/kernel.h"
#include "recipes/cpu_recipes.h"
#include "recipes/cuda_recipes.h"
#include "runtime/kernel_cache.h"
#include "runtime/nvrtc.h"
#include "schedule/schedule.h"
#include "sparse_tensor_fingerprint.h"
#include "support/error.h"
#include "tensor_args.h"
#include "transforms/format_decompose.h"
#include "transforms/specialize.h"
#include "validated_calls.h"

namespace py = pybind11;

namespace sparsetir::ops {
namespace {

// pybind11 holds objects by non-const shared_ptr; a PrimFunc is immutable.
struct PyPrimFunc {
  PrimFunc func;
  mutable size_t hash = 0;  // StructuralHash, computed once (the function is immutable)
  mutable bool hashed = false;
};

PyPrimFunc Lower(const PyPrimFunc& f, Stage expected, const char* pass, PrimFunc (*run)(const PrimFunc&)) {
  if (f.func->stage != expected) {
    throw UserError(UserErrorKind::kArgument, std::string(pass) + " expects a " + ToString(expected) +
                                                  " function, but '" + f.func->name + "' is at " +
                                                  ToString(f.func->stage));
  }
  return PyPrimFunc{run(f.func)};
}

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

void RunKernel(const std::shared_ptr<Kernel>& kernel, const py::list& values) {
  std::vector<KernelArg> args;
  args.reserve(values.size());
  for (const py::handle& v : values) args.push_back(ToKernelArg(v));
  std::vector<at::Tensor> tensors = TensorsOf(values);
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

// A KernelRequest from the names Python passes.
KernelRequest OpRequest(const std::string& script, const std::string& recipe, const std::string& value_dtype,
                        const std::string& index_dtype, const std::map<std::string, int64_t>& sizes,
                        const std::string& target) {
  auto dtype = [](const std::string& name) {
    static const std::map<std::string, at::ScalarType> types = {
        {"float32", at::kFloat}, {"float64", at::kDouble}, {"float16", at::kHalf},
        {"bfloat16", at::kBFloat16}, {"int32", at::kInt}, {"int64", at::kLong}};
    auto found = types.find(name);
    if (found == types.end()) throw UserError(UserErrorKind::kArgument, "unknown dtype '" + name + "'");
    return found->second;
  };
  return KernelRequest{script, recipe, dtype(value_dtype), dtype(index_dtype), sizes,
      GatherPrefetch::kToL1, Target::Parse(target)};
}

// The cpu level `isa` names ("avx2", an -march alias, ...), or this CPU's
// (or $SPARSETIR_CPU_ISA's) when it is empty.
Target CpuTargetNamed(const std::string& isa) { return isa.empty() ? Target::HostCpu() : Target::Parse("cpu:" + isa); }

// A hand-written kernel's parameters as CudaKernelParams read them, with the
// op that errors name.
struct CudaKernelSignature {
  std::string op;
  std::string kernel;
  std::vector<CudaKernelParam> params;
};

// One argument as Python passed it (`where` names it in errors): a tuple,
// list or dict (a struct's fields) holds more of them.
HandWrittenArg HandWrittenArgFrom(const py::handle v, const std::string& where, const std::string& op,
                                  int depth = 0) {
  HandWrittenArg arg;
  if (THPVariable_Check(v.ptr())) {
    arg.kind = HandWrittenArg::Kind::kTensor;
    arg.tensor = THPVariable_Unpack(v.ptr());
  } else if (py::isinstance<py::int_>(v)) {  // bool too
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow > 0) {
      const unsigned long long bits = PyLong_AsUnsignedLongLong(v.ptr());
      if (PyErr_Occurred()) {
        PyErr_Clear();
        throw py::value_error(op + ": " + where + " is the int " + std::string(py::str(v)) +
                              ", which no C integer type holds");
      }
      arg.int_value = static_cast<int64_t>(bits);
      arg.above_int64 = true;
    } else if (overflow < 0) {
      throw py::value_error(op + ": " + where + " is the int " + std::string(py::str(v)) +
                            ", which no C integer type holds");
    } else {
      arg.int_value = value;
    }
  } else if (py::isinstance<py::float_>(v)) {
    arg.kind = HandWrittenArg::Kind::kFloat;
    arg.float_value = v.cast<double>();
  } else if ((py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v) || py::isinstance<py::dict>(v)) &&
             depth < 16) {
    arg.kind = HandWrittenArg::Kind::kAggregate;
    if (py::isinstance<py::dict>(v)) {
      for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(v)) {
        if (!py::isinstance<py::str>(key)) {
          throw py::type_error(op + ": " + where + " is a dict whose keys must be field names (str), got " +
                               std::string(py::str(py::type::handle_of(key).attr("__name__"))));
        }
        arg.keys.push_back(key.cast<std::string>());
        arg.items.push_back(HandWrittenArgFrom(value, where + " ['" + arg.keys.back() + "']", op, depth + 1));
      }
    } else {
      const py::sequence items = py::reinterpret_borrow<py::sequence>(v);
      for (size_t i = 0; i < items.size(); ++i) {
        arg.items.push_back(HandWrittenArgFrom(items[i], where + " [" + std::to_string(i) + "]", op, depth + 1));
      }
    }
  } else {
    throw py::type_error(op + ": " + where +
                         " must be a tensor, an int, a float, or a tuple, list or dict of them (a struct's fields), "
                         "got " + std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  }
  return arg;
}

// A hand-written kernel's arguments as Python passed them to `op`.
std::vector<HandWrittenArg> HandWrittenArgsFrom(const py::list& values, const std::string& op) {
  std::vector<HandWrittenArg> args;
  for (size_t i = 0; i < values.size(); ++i) {
    args.push_back(HandWrittenArgFrom(values[i], "argument " + std::to_string(i), op));
  }
  return args;
}

}  // namespace
}  // namespace sparsetir::ops

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace sparsetir;
  using namespace sparsetir::ops;
  m.doc() = "sparsetir compiler core";

  // The exception classes live in Python (sparsetir_torch/errors.py); looked up
  // when needed, so no Python object outlives the interpreter in a C++ static.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UserError& e) {
      // Messages quote script text: decoded leniently, so that a script that
      // is not valid UTF-8 still gets its ScriptError, not a UnicodeDecodeError.
      auto raise = [&](const char* cls) {
        py::object type = py::module_::import("sparsetir_torch.errors").attr(cls);
        py::object message = py::reinterpret_steal<py::object>(
            PyUnicode_DecodeUTF8(e.what(), static_cast<Py_ssize_t>(std::strlen(e.what())), "replace"));
        PyErr_SetObject(type.ptr(), message.ptr());
      };
      switch (e.kind()) {
        case UserErrorKind::kScript: raise("ScriptError"); return;
        case UserErrorKind::kCompile: raise("CompileError"); return;
        case UserErrorKind::kSchedule: raise("ScheduleError"); return;
        case UserErrorKind::kArgument: {
          py::object message = py::reinterpret_steal<py::object>(
              PyUnicode_DecodeUTF8(e.what(), static_cast<Py_ssize_t>(std::strlen(e.what())), "replace"));
          PyErr_SetObject(PyExc_ValueError, message.ptr());
          return;
        }
      }
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  py::class_<PyPrimFunc>(m, "PrimFunc")
      .def("script", [](const PyPrimFunc& f) { return Print(f.func); }, "The function in the script language.")
      .def_property_readonly("name", [](const PyPrimFunc& f) { return f.func->name; })
      .def_property_readonly("stage", [](const PyPrimFunc& f) { return 3 - static_cast<int>(f.func->stage); },
                             "1, 2 or 3 (stage I, II or III).")
      .def_property_readonly("params", [](const PyPrimFunc& f) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const Var& p : f.func->params) out.emplace_back(p->name, ToString(p->dtype));
        return out;
      })
      .def("__eq__",
           [](const PyPrimFunc& a, const py::object& b) -> py::object {
             if (!py::isinstance<PyPrimFunc>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::bool_(StructuralEqual(a.func, b.cast<const PyPrimFunc&>().func));
           })
      .def("__hash__",
           [](const PyPrimFunc& f) {
             if (!f.hashed) {
               f.hash = StructuralHash(f.func);
               f.hashed = true;
             }
             return f.hash;
           })
      .def("__str__", [](const PyPrimFunc& f) { return Print(f.func); })
      .def("__repr__", [](const PyPrimFunc& f) {
        return "<PrimFunc " + f.func->name + " (" + ToString(f.func->stage) + ")>";
      });

  m.def("parse", [](const std::string& text, const std::string& name) { return PyPrimFunc{Parse(text, name)}; },
        py::arg("text"), py::arg("source_name") = "<script>");
  m.def("lower_sparse_iter",
        [](const PyPrimFunc& f) {
          return Lower(f, Stage::kI, "lower_sparse_iter",
                       [](const PrimFunc& g) { return RunPipeline(g, "lower_sparse_iter"); });
        });
  m.def(
      "pipeline_passes",
      [] {
        std::vector<std::string> names;
        for (const Pass& pass : Pipeline()) names.push_back(pass.name);
        return names;
      },
      "The compiler's passes from stage I to stage III, in the order they run.");
  m.def("lower_atomic", [](const PyPrimFunc& f) {
    return Lower(f, Stage::kI, "lower_atomic", [](const PrimFunc& g) { return RunPipeline(g, "lower_atomic"); });
  });
  m.def("specialize", [](const PyPrimFunc& f, const std::map<std::string, int64_t>& values) {
    return PyPrimFunc{Specialize(f.func, values)};
  });
  m.def("lower_sparse_buffer",
        [](const PyPrimFunc& f) {
          return Lower(f, Stage::kII, "lower_sparse_buffer",
                       [](const PrimFunc& g) { return RunPipeline(g, "lower_sparse_buffer"); });
        });
  m.def(
      "format_decompose",
      [](const PyPrimFunc& f, const std::vector<std::pair<std::string, PyPrimFunc>>& rules, bool disjoint) {
        std::vector<std::pair<std::string, PrimFunc>> formats;
        for (const auto& [name, format] : rules) formats.emplace_back(name, format.func);
        return PyPrimFunc{FormatDecompose(f.func, formats, disjoint)};
      },
      py::arg("f"), py::arg("rules"), py::arg("disjoint") = false);
  m.def("preprocess_part", [](const PyPrimFunc& f) { return PyPrimFunc{PreprocessPart(f.func)}; });
  m.def("compute_part", [](const PyPrimFunc& f, bool with_init) { return PyPrimFunc{ComputePart(f.func, with_init)}; },
        py::arg("f"), py::arg("with_init") = true);

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

  py::class_<Schedule>(m, "Schedule")
      .def(py::init([](const PyPrimFunc& f) { return Schedule(f.func); }))
      .def_property_readonly("mod", [](const Schedule& s) { return PyPrimFunc{s.mod()}; })
      .def_property_readonly("trace", &Schedule::TraceText)
      .def("sparse_reorder", &Schedule::SparseReorder)
      .def("sparse_fuse", &Schedule::SparseFuse)
      .def("annotate", [](Schedule& s, const std::string& iteration, const std::string& key, const py::object& value) {
        auto attr = std::make_shared<AttrValue>();
        if (py::isinstance<py::bool_>(value)) {
          attr->kind = AttrValue::Kind::kBool;
          attr->bool_value = value.cast<bool>();
        } else if (py::isinstance<py::int_>(value)) {
          attr->kind = AttrValue::Kind::kInt;
          attr->int_value = value.cast<int64_t>();
        } else if (py::isinstance<py::float_>(value)) {
          attr->kind = AttrValue::Kind::kFloat;
          attr->float_value = value.cast<double>();
        } else if (py::isinstance<py::str>(value)) {
          attr->kind = AttrValue::Kind::kString;
          attr->string_value = value.cast<std::string>();
        } else {
          throw UserError(UserErrorKind::kSchedule, "annotate: the value must be a bool, int, float or str");
        }
        s.Annotate(iteration, key, attr);
      })
      .def("lower_sparse_iter", &Schedule::LowerSparseIter)
      .def("specialize", &Schedule::Specialize)
      .def("get_blocks", &Schedule::GetBlocks)
      .def("get_loops", &Schedule::GetLoops)
      .def("split", &Schedule::Split, py::arg("loop"), py::arg("factors"))
      .def("fuse", &Schedule::Fuse)
      .def("merge", &Schedule::Merge)
      .def("reorder", &Schedule::Reorder)
      .def("parallel", &Schedule::Parallel)
      .def("vectorize", &Schedule::Vectorize)
      .def("unroll", &Schedule::Unroll)
      .def("bind", &Schedule::Bind)
      .def("lower_sparse_buffer", &Schedule::LowerSparseBuffer)
      .def("cache_read", &Schedule::CacheRead)
      .def("cache_write", &Schedule::CacheWrite)
      .def("tensorize", &Schedule::Tensorize)
      .def("rfactor", &Schedule::RFactor)
      .def("prefetch", &Schedule::Prefetch, py::arg("loop"), py::arg("buffer"), py::arg("offset"),
           py::arg("cache_level") = 1);

  // ---- CUDA: availability, NVRTC, the operators' cuda kernels (cuda_check.py)
  m.def("emulated_runs", [] { return EmulatedRuns().load(); }, "cuda kernels run under the SIMT emulator so far");
  m.def("last_emulated_kernel", &LastEmulatedKernel, "The kernel last run under the SIMT emulator ('' before any).");
  m.def(
      "emulate_cuda",
      [](const std::string& source, const std::string& kernel, const std::array<int64_t, 3>& grid,
         const std::array<int64_t, 3>& block, const py::list& values, int64_t shared_bytes,
         const std::vector<std::string>& options) {
        const std::vector<HandWrittenArg> args = HandWrittenArgsFrom(values, "st.emulate_cuda");
        py::gil_scoped_release release;
        ops::EmulateCuda(source, kernel, grid, block, args, shared_bytes, options);
      },
      py::arg("source"), py::arg("kernel"), py::arg("grid"), py::arg("block"), py::arg("args"),
      py::arg("shared_bytes"), py::arg("options"),
      "A hand-written CUDA kernel run on CPU tensors under the SIMT emulator.");
  m.def(
      "launch_cuda",
      [](const std::string& source, const std::string& kernel, const std::array<int64_t, 3>& grid,
         const std::array<int64_t, 3>& block, const py::list& values, int64_t shared_bytes,
         const std::vector<std::string>& options) {
        const std::vector<HandWrittenArg> args = HandWrittenArgsFrom(values, "st.launch_cuda");
        py::gil_scoped_release release;
        LaunchCuda(source, kernel, grid, block, args, shared_bytes, options);
      },
      py::arg("source"), py::arg("kernel"), py::arg("grid"), py::arg("block"), py::arg("args"),
      py::arg("shared_bytes"), py::arg("options"), "A hand-written CUDA kernel run on CUDA tensors.");
  // A kernel's parameters read once, then any number of argument lists
  // checked and converted against them (st.CudaKernel holds one).
  py::class_<CudaKernelSignature>(m, "CudaKernelSignature")
      .def(py::init([](const std::string& source, const std::string& kernel, const std::vector<std::string>& options,
                       const std::string& op) {
             return CudaKernelSignature{op, kernel, CudaKernelParams(source, kernel, options)};
           }),
           py::arg("source"), py::arg("kernel"), py::arg("options") = std::vector<std::string>(),
           py::arg("op") = "st.launch_cuda")
      .def_property_readonly(
          "params",
          [](const CudaKernelSignature& s) {
            py::list out;
            for (const CudaKernelParam& p : s.params) {
              py::list fields;
              for (const CudaStructField& f : p.fields) {
                fields.append(py::make_tuple(f.name, f.type.type, f.offset, f.count));
              }
              out.append(py::make_tuple(p.type, p.name, p.bytes, p.declaration, fields));
            }
            return out;
          },
          "(type, name, bytes, declaration, fields) of each parameter, as st.launch_cuda reads them; a struct's "
          "fields as (name, type, offset, count).")
      .def(
          "values",
          [](const CudaKernelSignature& s, const py::list& values) {
            const std::vector<CudaParamValue> packed =
                CudaParamValues(s.op, s.kernel, s.params, HandWrittenArgsFrom(values, s.op));
            py::list out;
            for (size_t i = 0; i < packed.size(); ++i) {
              out.append(py::bytes(reinterpret_cast<const char*>(packed[i].bytes.data()), packed[i].bytes.size()));
            }
            return out;
          },
          py::arg("args"), "The bytes cuLaunchKernel is handed for each argument, checked and converted.");
  m.def("has_cuda_recipe", &HasCudaRecipe, py::arg("recipe"),
        "Whether the built-in kernel recipe `recipe` has a cuda schedule.");
  m.def("cuda_unavailable_reason", &CudaUnavailableReason,
        "Why CUDA kernels cannot run in this process (\"\" when they can).");
  m.def("nvrtc_info", [] {
    const Nvrtc& nvrtc = Nvrtc::Get();
    py::dict info;
    info["path"] = nvrtc.path();
    info["version"] = py::make_tuple(nvrtc.version().first, nvrtc.version().second);
    info["archs"] = nvrtc.supported_archs();
    return info;
  });
  m.def(
      "nvrtc_compile",
      [](const std::string& source, const std::string& name, int arch, bool cubin,
         const std::vector<std::string>& options, const std::vector<std::string>& name_expressions) {
        NvrtcResult r;
        {
          py::gil_scoped_release release;
          r = Nvrtc::Get().Compile(source, name, arch, cubin, options, name_expressions);
        }
        py::dict out;
        out["ptx"] = py::bytes(r.ptx);
        out["cubin"] = py::bytes(r.cubin);
        out["log"] = r.log;
        out["ms"] = r.compile_ms;
        out["lowered_names"] = r.lowered_names;
        return out;
      },
      py::arg("source"), py::arg("name"), py::arg("arch"), py::arg("cubin"),
      py::arg("options") = std::vector<std::string>(), py::arg("name_expressions") = std::vector<std::string>(),
      "Compiles CUDA source with NVRTC for sm_<arch> (cubin=True) or compute_<arch> (PTX), with NVRTC's options; "
      "each of name_expressions (a template kernel's instance, 'k<float>') is instantiated and its name in the "
      "output returned in lowered_names.");
  m.def(
      "op_kernel",
      [](const std::string& script, const std::string& recipe, const std::string& value_dtype,
         const std::string& index_dtype, const std::map<std::string, int64_t>& sizes, const std::string& target) {
        return GetOpKernel(OpRequest(script, recipe, value_dtype, index_dtype, sizes, target))->shared();
      },
      "The built-in operator kernel for a request (as the operators build it).");
  m.def(
      "op_kernel_source",
      [](const std::string& script, const std::string& recipe, const std::string& value_dtype,
         const std::string& index_dtype, const std::map<std::string, int64_t>& sizes, const std::string& target) {
        const KernelRequest request = OpRequest(script, recipe, value_dtype, index_dtype, sizes, target);
        IrDumpScope scope;  // numbered as the kernel library's build numbers it
        PrimFunc lowered = LowerToStageIII(ScheduledOpFunction(request));
        return request.target.is_cpu() ? CodegenCpu(lowered) : CodegenCuda(lowered).source;
      },
      "The generated source of a built-in operator kernel for any target, without compiling it.");

  m.def(
      "recipe_trace",
      [](const std::string& script, const std::string& recipe, const std::string& value_dtype,
         const std::string& index_dtype, const std::map<std::string, int64_t>& sizes, const std::string& target,
         int prefetch) {
        if (prefetch < 0 || prefetch > 2) {
          throw UserError(UserErrorKind::kArgument,
                          "recipe_trace: prefetch is 0 (none), 1 (into L1) or 2 (into L2), got " +
                              std::to_string(prefetch));
        }
        KernelRequest request = OpRequest(script, recipe, value_dtype, index_dtype, sizes, target);
        request.prefetch = static_cast<GatherPrefetch>(prefetch);
        return ScheduleOpKernel(request).TraceText();
      },
      py::arg("script"), py::arg("recipe"), py::arg("value_dtype"), py::arg("index_dtype"), py::arg("sizes"),
      py::arg("target"), py::arg("prefetch") = 1,
      "The schedule a built-in kernel's recipe applies for a request, as a replayable trace (from the stage-I "
      "script with the dtypes put in).");
  m.def(
      "put_dtypes",
      [](const std::string& text, const std::string& value_dtype, const std::string& index_dtype) {
        auto parse = [](const std::string& dtype) {
          std::optional<DataType> parsed = ParseDataType(dtype);
          if (!parsed || !IsNumeric(*parsed)) throw UserError(UserErrorKind::kArgument, "unknown dtype '" + dtype + "'");
          return *parsed;
        };
        return PutDtypes(text, parse(value_dtype), parse(index_dtype));
      },
      py::arg("text"), py::arg("value_dtype"), py::arg("index_dtype"),
      "A built-in script's text with the value and index dtypes put in for its \"float32\" and \"int32\".");

  m.def(
      "generate",
      [](const PyPrimFunc& f, const std::string& target) {
        const Target parsed = Target::Parse(target);
        PrimFunc lowered = LowerToStageIII(f.func);
        return parsed.is_cpu() ? CodegenCpu(lowered) : CodegenCuda(lowered).source;
      },
      "Lowers to stage III and generates the source for `target`, without compiling it.");

  m.def("runnable_cpu_levels", &Target::RunnableCpuLevels,
        "The CPU levels this machine executes, best first (the detected level and those below it).");
  m.def(
      "cpu_target",
      [](const std::string& isa) {
        const Target t = CpuTargetNamed(isa);
        py::dict out;
        out["target"] = t.str();
        out["isa"] = t.arch;
        out["features"] = t.features;
        out["vector_bytes"] = t.vector_bytes();
        out["vector_registers"] = t.vector_registers();
        out["compiler_flags"] = t.CompilerFlags();
        out["detected"] = Target::DetectedCpu().str();
        return out;
      },
      py::arg("isa") = "",
      "The cpu target kernels are built for (this CPU's level, or $SPARSETIR_CPU_ISA), or the level `isa`.");
  m.def("cpu_levels", &CpuLevels, "The cpu instruction-set levels the compiler knows.");
  m.def(
      "csrmm_plan",
      [](int64_t feat, int64_t element_bytes, const std::string& isa, int prefetch) {
        if (prefetch < 0 || prefetch > 2) {
          throw UserError(UserErrorKind::kArgument, "csrmm_plan: prefetch is 0 (none), 1 (into L1) or 2 (into L2), got " +
                                                        std::to_string(prefetch));
        }
        const Target t = CpuTargetNamed(isa);
        const CsrmmPlan plan = PlanCsrmm(feat, element_bytes, t, static_cast<GatherPrefetch>(prefetch));
        py::dict out;
        out["vector_lanes"] = plan.vector_lanes;
        out["unrolled_vectors"] = plan.unrolled_vectors;
        out["output_row_in_registers"] = plan.output_row_local;
        out["feature_tile"] = plan.feature_tile;
        out["accumulator_sets"] = plan.accumulator_sets;
        return out;
      },
      py::arg("feat"), py::arg("element_bytes"), py::arg("isa") = "", py::arg("prefetch") = 1,
      "What the cpu recipe chooses for an SpMM row of `feat` elements (lanes, unrolling, accumulators).");
  m.def(
      "bsrmm_plan",
      [](int64_t block_h, int64_t feat, int64_t element_bytes, const std::string& isa) {
        const Target t = CpuTargetNamed(isa);
        const BsrmmPlan plan = PlanBsrmm(block_h, feat, element_bytes, t);
        py::dict out;
        out["vector_lanes"] = plan.vector_lanes;
        out["unrolled_vectors"] = plan.unrolled_vectors;
        out["feature_tile"] = plan.feature_tile;
        out["output_tile_local"] = plan.output_tile_local;
        out["b_tile_packed"] = plan.b_tile_packed;
        return out;
      },
      py::arg("block_h"), py::arg("feat"), py::arg("element_bytes"), py::arg("isa") = "",
      "What the cpu recipe chooses for bsrmm's output rows of `feat` elements (lanes, feature tile).");
  m.def(
      "sddmm_group_lanes",
      [](int64_t feat, int64_t element_bytes, const std::string& isa) {
        return SddmmGroupLanes(feat, element_bytes, CpuTargetNamed(isa));
      },
      py::arg("feat"), py::arg("element_bytes"), py::arg("isa") = "",
      "The lanes of the cpu sddmm that computes four of a row's dot products at a time (0: it does not apply).");
  m.def(
      "vector_lanes",
      [](int64_t extent, int64_t element_bytes, const std::string& isa) {
        return VectorLanes(extent, element_bytes, CpuTargetNamed(isa));
      },
      py::arg("extent"), py::arg("element_bytes") = 4, py::arg("isa") = "",
      "The widest vector the cpu recipes split `extent` into on the target.");
  m.def("cache_dir", &CacheDirectory);
  m.def("cache_stats", [] {
    CacheStats& s = GetCacheStats();
    py::dict d;
    d["compiles"] = s.compiles.load();
    d["disk_hits"] = s.disk_hits.load();
    d["memory_hits"] = s.memory_hits.load();
    return d;
  });
  m.def("clear_memory_cache", &ClearMemoryCache);

  m.def("set_kernel_directory", &SetKernelDirectory, "Where the operators find the built-in scripts (kernels/).");
  m.def("graph_cache_info", [] {
    GraphCacheStats s = GetGraphCacheStats();
    py::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["entries"] = s.entries;
    return d;
  });
  m.def("clear_graph_cache", [] {
    ClearGraphCache();
    ReleaseRecycledOutputs();
  });
  m.def("bsr_block_count", &BsrBlockCount, "Blocks a CSR -> BSR(block_h, block_w) conversion would store.");
  m.def(
      "check_csr",
      [](const std::string& op, const at::Tensor& indptr, const at::Tensor& indices, int64_t columns,
         const std::string& columns_name) {
        // The entry is held while it is read: an inference tensor's is in no cache.
        const CheckedCsr csr = CheckCsr(op, indptr, indices, columns, columns_name);
        const CsrSummary& s = csr.info->summary();
        py::dict summary;
        summary["rows"] = s.rows;
        summary["nnz"] = s.nnz;
        summary["empty_rows"] = s.empty_rows;
        summary["max_row_length"] = s.max_row_length;
        summary["row_length_squares"] = s.row_length_squares;
        summary["padded_slots"] = s.padded_slots;
        summary["unsorted_rows"] = s.unsorted_rows;
        return summary;
      },
      py::arg("op"), py::arg("indptr"), py::arg("indices"), py::arg("columns"), py::arg("columns_name"),
      "Validates a CSR structure of `columns` columns (cached per graph like the operators' own check); a "
      "ValueError names `op` and, for an index out of range, `columns_name`. Returns the validation pass's "
      "summary of the rows: rows, nnz, empty_rows, max_row_length, row_length_squares (the lengths' sum of "
      "squares), padded_slots (every non-empty row padded to the next power of two) and unsorted_rows (rows "
      "whose columns are not in non-decreasing order).");
  m.def(
      "hyb_plan",
      [](const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t parts, int64_t max_width) {
        const std::string op = "sparsetir.hyb_plan";
        CheckedCsr csr = CheckCsr(op, indptr, indices, columns, "argument 'columns'");
        py::list buckets;
        for (const HybBucket& b : HybPlanFor(op, csr, columns, parts, max_width)->buckets()) {
          buckets.append(py::dict(py::arg("width") = b.width, py::arg("rows") = b.rows, py::arg("mode") = b.mode));
        }
        return buckets;
      },
      "The ELL buckets _spmm_hyb runs for hyb(parts, max_width) of this structure: width, ELL rows and how its "
      "kernel writes the output (overwrite, add or atomic).");
  m.def(
      "sddmm_cpu_plan",
      [](const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat, const at::Tensor& like) {
        const SddmmCpuPlan plan = SddmmCpuPlanFor(indptr, indices, columns, feat, like.scalar_type());
        return py::dict(py::arg("prefetch") = static_cast<int64_t>(plan.prefetch),
                        py::arg("group_lanes") = plan.group_lanes);
      },
      "What sddmm's dot product runs on this structure on the cpu with operands of `feat` columns of like's dtype "
      "(y of `columns` rows): where it prefetches the gathered rows (0 not at all, 1 into L1, 2 into L2) and the "
      "lanes of the kernel that computes four of a row's dot products at a time (0: one at a time).");
  m.def("spmm_prefetch_level", &SpmmPrefetchLevel,
        "Where spmm prefetches the gathered dense rows (columns rows of row_bytes bytes) on this structure: 0 not at "
        "all, 1 into L1, 2 into L2.");
  m.def(
      "spmm_cuda_row_segment",
      [](const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat, const at::Tensor& like,
         const std::string& device) {
        return SpmmCudaRowSegment(indptr, indices, columns, feat, like.scalar_type(), c10::Device(device));
      },
      "The row segment length of spmm's cuda kernel on this structure with a dense operand of feat columns of "
      "like's dtype (0: rows whole); device 'cpu' = emulated.");
  m.def("sddmm_cuda_row_segment", &CudaSddmmSegmentLength, py::arg("feat"),
        "The row segment length of sddmm's cuda kernel at this feature width (0: the fused loop over the "
        "non-zeros).");
  m.def("cuda_attention_column_lanes", &CudaAttentionColumnLanes, py::arg("head_dim"), py::arg("element_bytes"),
        "The lanes that score one column in sparse_attention's one-pass cuda kernel for heads of head_dim "
        "features, k's elements of element_bytes (0: a warp per column).");
  m.def(
      "cuda_attention_tile",
      [](int64_t head_dim, int64_t value_dim, int64_t element_bytes, int64_t column_lanes, int64_t rows) {
        const AttentionTile tile = CudaAttentionTile(head_dim, value_dim, element_bytes, column_lanes, rows);
        py::dict d;
        d["rows"] = tile.rows;
        d["columns"] = tile.columns;
        d["piece"] = tile.piece;
        d["k_stride"] = tile.k_stride;
        return d;
      },
      py::arg("head_dim"), py::arg("value_dim"), py::arg("element_bytes"), py::arg("column_lanes"),
      py::arg("rows") = -1,
      "The tiles of sparse_attention's cuda forward in shared memory (rows == 0: the column-group kernel); rows "
      "-1 reads $SPARSETIR_CUDA_ATTENTION_TILE_ROWS.");
  m.def(
      "cuda_attention_forward",
      [](int64_t head_dim, int64_t value_dim, int64_t element_bytes, bool rows_sorted) {
        const AttentionForwardPlan forward = CudaAttentionForward(head_dim, value_dim, element_bytes, rows_sorted);
        return py::make_tuple(forward.script, forward.sizes);
      },
      py::arg("head_dim"), py::arg("value_dim"), py::arg("element_bytes"), py::arg("rows_sorted") = true,
      "(script, sizes) of sparse_attention's one-pass cuda forward, as the operator picks them: the sizes besides "
      "head_dim and value_dim.");
  m.def(
      "cuda_bsrmm_tile",
      [](int64_t block_h, int64_t block_w, int64_t feat, const at::Tensor& like, int64_t block_rows,
         const std::string& device) {
        const BsrmmTile tile =
            CudaBsrmmTileFor(block_rows, block_h, block_w, feat, like.scalar_type(), c10::Device(device));
        py::dict out;
        out["rows"] = tile.rows;
        out["features"] = tile.features;
        out["columns"] = tile.columns;
        out["lanes"] = tile.lanes;
        out["row_threads"] = tile.row_threads;
        out["row_slices"] = tile.row_slices;
        return out;
      },
      py::arg("block_h"), py::arg("block_w"), py::arg("feat"), py::arg("like"), py::arg("block_rows") = 0,
      py::arg("device") = "cpu",
      "The register tile of the cuda bsrmm (SIMT blocks) for blocks of block_h x block_w values of like's dtype "
      "and feat features: rows x features outputs a thread, columns of a block a step, lanes x row_threads "
      "threads, row_slices slices of the block's rows over blockIdx.z (rows 0: one output per thread). With "
      "block_rows > 0, the rows the operator takes for that many block rows on device ('cpu' = emulated): "
      "fewer where 4 would leave the device's warps idle.");
  m.def("philox4x32", &PhiloxWords, py::arg("counter"), py::arg("key"),
        "The four 32-bit words Philox4x32-10 gives for a counter of 4 words and a key of 2: the generator of "
        "sparsetir::dropout's masks.");
  m.def("sparse_attention_runs_online", &SparseAttentionRunsOnline, py::arg("head_dim"), py::arg("value_dim"),
        py::arg("heads"), "True if sparse_attention on cuda runs its one-pass kernels at these sizes.");
  m.def(
      "cuda_features_per_thread",
      [](int64_t feat, const at::Tensor& like) { return CudaFeaturesPerThreadFor(feat, like.scalar_type()); },
      "The features a thread of the cuda spmm kernels owns at this feature width, for values of like's dtype.");
  m.def("set_graph_cache_capacity", &SetGraphCacheCapacity);
  m.def("validate_every_call", &ValidateEveryCall);
  m.def("set_validate_every_call", &SetValidateEveryCall);

  // The implicit conversion cache of torch sparse tensors (sparse_matrix.py)
  // keeps one per entry and asks it on every call: one C++ call instead of
  // building index views in Python only to read their versions.
  py::class_<SparseTensorFingerprint>(m, "SparseTensorFingerprint")
      .def(
          "values_if_unchanged",
          [](const SparseTensorFingerprint& f, const at::Tensor& t) -> py::object {
            if (!f.Matches(t)) return py::none();
            return py::cast(SparseTensorFingerprint::Values(t));
          },
          "t's values if t is the tensor fingerprinted and neither it nor its index tensors changed; else None.");
  m.def(
      "sparse_tensor_fingerprint",
      [](const at::Tensor& t) -> py::object {
        if (!SparseTensorFingerprint::Cacheable(t)) return py::none();
        return py::cast(SparseTensorFingerprint(t));
      },
      "The fingerprint of a torch sparse CSR, BSR or COO tensor; None if its versions are not tracked.");
}
