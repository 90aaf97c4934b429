// Python bindings of hand-written CUDA kernels (st.emulate_cuda,
// st.launch_cuda, st.CudaKernel) and of NVRTC: the arguments as Python passes
// them, each checked and converted against the parameter it goes to.
#include <torch/extension.h>

#include <array>

#include "codegen/cuda_kernel_params.h"
#include "cuda_launch.h"
#include "cuda_param_values.h"
#include "emulate_cuda.h"
#include "hand_written_args.h"
#include "launch_cuda.h"
#include "python_bindings.h"
#include "runtime/emulated_cuda_module.h"
#include "runtime/nvrtc.h"

namespace sparsetir::ops {
namespace {

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

void BindCudaKernels(py::module_& m) {
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
}

}  // namespace sparsetir::ops
