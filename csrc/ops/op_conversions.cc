// The format conversions as operators: torch.ops.sparsetir._coo_to_csr,
// _csr_to_ell and _csr_to_hyb. Each returns the converted structure plus a
// `slot` per input non-zero, so the Python side moves values with one scatter
// (sparse_matrix.py) and the structure is converted once: the CSR ones per
// graph (graph_cache.h), the COO one when a SparseMatrix is built from it.
#include <limits>

#include "op_checks.h"
#include "ops.h"
#include "runtime/coo_conversion.h"
#include "support/error.h"
#include "vector_tensor.h"

namespace sparsetir::ops {
namespace {

// The index tensors of a CSR structure from CooToCsr.
template <typename Index>
std::tuple<at::Tensor, at::Tensor, at::Tensor> CooToCsrTensors(const std::string& op, const at::Tensor& row,
                                                               const at::Tensor& col, int64_t rows, int64_t columns,
                                                               bool sum_duplicates) {
  CsrFromCoo<Index> csr;
  try {
    csr = CooToCsr<Index>(op, row.data_ptr<Index>(), col.data_ptr<Index>(), row.numel(), rows, columns,
                          sum_duplicates);
  } catch (const UserError& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
  return {VectorToTensor(std::move(csr.indptr)), VectorToTensor(std::move(csr.indices)),
          VectorToTensor(std::move(csr.slot))};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> CooToCsrOp(const at::Tensor& row, const at::Tensor& col, int64_t rows,
                                                          int64_t columns, bool sum_duplicates) {
  const std::string op = "sparsetir._coo_to_csr";
  TORCH_CHECK_VALUE(rows >= 0, op, ": argument 'rows' must be non-negative, got ", rows);
  TORCH_CHECK_VALUE(columns >= 0, op, ": argument 'columns' must be non-negative, got ", columns);
  at::Tensor r = CheckIndexTensor(op, "row", row), c = CheckIndexTensor(op, "col", col);
  TORCH_CHECK_VALUE(r.scalar_type() == c.scalar_type(), op, ": arguments 'row' and 'col' must have the same dtype, got ",
                    r.scalar_type(), " and ", c.scalar_type());
  TORCH_CHECK_VALUE(r.numel() == c.numel(), op, ": arguments 'row' and 'col' must have the same length, got ",
                    r.numel(), " and ", c.numel());
  if (r.scalar_type() == at::kInt) {
    TORCH_CHECK_VALUE(rows < std::numeric_limits<int32_t>::max(), op, ": ", rows,
                      " rows do not fit int32 indices; use int64 'row' and 'col'");
    return CooToCsrTensors<int32_t>(op, r, c, rows, columns, sum_duplicates);
  }
  return CooToCsrTensors<int64_t>(op, r, c, rows, columns, sum_duplicates);
}

std::tuple<at::Tensor, at::Tensor> CsrToEllOp(const at::Tensor& indptr, const at::Tensor& indices, int64_t width) {
  const std::string op = "sparsetir._csr_to_ell";
  TORCH_CHECK_VALUE(width >= 0, op, ": argument 'width' must be non-negative, got ", width);
  // ELL does not depend on the column count: any index is in range.
  CheckedCsr csr = CheckCsr(op, indptr, indices, std::numeric_limits<int64_t>::max(), "");
  CheckSlotCount(op, "width", csr.rows(), width);
  EllFromCsr ell = csr.info->Ell(op, csr.indptr, csr.indices, width);
  return {ell.indices, ell.slot};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> CsrToHybOp(const at::Tensor& indptr,
                                                                      const at::Tensor& indices, int64_t columns,
                                                                      int64_t parts, int64_t max_width) {
  const std::string op = "sparsetir._csr_to_hyb";
  TORCH_CHECK_VALUE(columns >= 0, op, ": argument 'columns' must be non-negative, got ", columns);
  TORCH_CHECK_VALUE(parts > 0, op, ": argument 'parts' must be positive, got ", parts);
  TORCH_CHECK_VALUE(max_width >= 0, op, ": argument 'max_width' must be non-negative, got ", max_width);
  CheckedCsr csr = CheckCsr(op, indptr, indices, columns, "argument 'columns'");
  CheckSlotCount(op, "max_width", csr.rows() * parts, max_width);
  HybFromCsr hyb = csr.info->Hyb(op, csr.indptr, csr.indices, columns, parts, max_width);
  return {hyb.bucket_info, hyb.row_map, hyb.indices, hyb.slot};
}

}  // namespace sparsetir::ops
