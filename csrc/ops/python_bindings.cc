// The Python module sparsetir_torch._C: its parts, one file each (bind_*.cc),
// and how C++ errors become Python exceptions: a script error to
// sparsetir_torch.ScriptError, a bad argument to ValueError, a compiler failure to
// sparsetir_torch.CompileError, a compiler bug to RuntimeError.
#include <torch/extension.h>

#include <cstring>

#include "python_bindings.h"
#include "support/error.h"

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

  BindCompiler(m);
  BindKernel(m);
  BindOpKernels(m);
  BindCudaKernels(m);
  BindCaches(m);
}
