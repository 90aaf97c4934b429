// Python bindings of the runtime's caches: compiled kernels (memory and disk),
// per-graph structures and their validation, torch sparse tensors' fingerprints.
#include <torch/extension.h>

#include "graph_cache.h"
#include "kernel_library.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"
#include "python_bindings.h"
#include "revalidation.h"
#include "runtime/kernel_cache.h"
#include "sparse_tensor_fingerprint.h"

namespace sparsetir::ops {

void BindCaches(py::module_& m) {
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

}  // namespace sparsetir::ops
