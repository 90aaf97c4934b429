// The Python module's parts, one file each (bind_*.cc), and the PrimFunc
// object the compiler's and Kernel's bindings share.
#pragma once

#include <torch/extension.h>

#include "ir/function.h"

namespace sparsetir::ops {

namespace py = pybind11;

// pybind11 holds objects by non-const shared_ptr; a PrimFunc is immutable.
struct PyPrimFunc {
  PrimFunc func;
  mutable size_t hash = 0;  // StructuralHash, computed once (the function is immutable)
  mutable bool hashed = false;
};

void BindCompiler(py::module_& m);   // PrimFunc, passes, Schedule, generate
void BindKernel(py::module_& m);     // Kernel, build
void BindOpKernels(py::module_& m);  // the built-in operators' kernels, recipes and plans
void BindCudaKernels(py::module_& m);  // st.emulate_cuda, st.launch_cuda, st.CudaKernel, NVRTC
void BindCaches(py::module_& m);     // kernel, graph and validation caches

}  // namespace sparsetir::ops
