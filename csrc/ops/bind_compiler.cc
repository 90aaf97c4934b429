// Python bindings of the compiler itself: PrimFunc, the passes from stage I to
// stage III, the schedule primitives, and source generation for a target.
#include <torch/extension.h>

#include "codegen/codegen_cpu.h"
#include "codegen/codegen_cuda.h"
#include "ir/equal.h"
#include "ir/printer.h"
#include "lower.h"
#include "parser/parser.h"
#include "python_bindings.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "target.h"
#include "transforms/format_decompose.h"
#include "transforms/specialize.h"

namespace sparsetir::ops {
namespace {


PyPrimFunc Lower(const PyPrimFunc& f, Stage expected, const char* pass, PrimFunc (*run)(const PrimFunc&)) {
  if (f.func->stage != expected) {
    throw UserError(UserErrorKind::kArgument, std::string(pass) + " expects a " + ToString(expected) +
                                                  " function, but '" + f.func->name + "' is at " +
                                                  ToString(f.func->stage));
  }
  return PyPrimFunc{run(f.func)};
}

}  // namespace

void BindCompiler(py::module_& m) {
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
          int overflow = 0;
          attr->kind = AttrValue::Kind::kInt;
          attr->int_value = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
          if (overflow) {
            throw UserError(UserErrorKind::kSchedule,
                            "annotate: the int " + std::string(py::str(value)) + " does not fit int64");
          }
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
  m.def(
      "generate",
      [](const PyPrimFunc& f, const std::string& target) {
        const Target parsed = Target::Parse(target);
        PrimFunc lowered = LowerToStageIII(f.func);
        return parsed.is_cpu() ? CodegenCpu(lowered) : CodegenCuda(lowered).source;
      },
      "Lowers to stage III and generates the source for `target`, without compiling it.");
}

}  // namespace sparsetir::ops
