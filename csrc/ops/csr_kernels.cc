#include "csr_kernels.h"

#include "kernel_library.h"

namespace sparsetir::ops {

namespace {

// Below this many bytes a dense operand stays in L2 (2 MiB per core here)
// with room for the output rows and the structure.
constexpr double kPrefetchMinBytes = 1 << 20;
// A structure whose non-zeros lie this close to the diagonal, in bytes of
// dense rows, gathers from a window that stays in L1/L2.
constexpr double kLocalWindowBytes = 256 << 10;

}  // namespace

bool PrefetchPays(const CsrSummary& structure, int64_t dense_rows, int64_t row_bytes) {
  const double bytes = static_cast<double>(row_bytes);
  if (static_cast<double>(dense_rows) * bytes < kPrefetchMinBytes) return false;
  return structure.mean_distance * bytes >= kLocalWindowBytes;
}

bool PrefetchPays(const CsrSummary& structure, const at::Tensor& dense) {
  return PrefetchPays(structure, dense.size(0), dense.size(1) * dense.element_size());
}

void RunCsrmm(const std::string& script, const at::Tensor& indptr, const at::Tensor& indices,
              const at::Tensor& values, const at::Tensor& dense, const at::Tensor& out, bool prefetch) {
  const int64_t rows = indptr.numel() - 1, feat = dense.size(1), nnz = indices.numel();
  if (rows == 0 || feat == 0) return;
  auto kernel = GetOpKernel({script, "csrmm", values.scalar_type(), indptr.scalar_type(), {{"feat_size", feat}},
                             prefetch, TargetFor(dense, "csrmm")});
  KernelCall(*kernel)
      .Set("a", values)
      .Set("b", dense)
      .Set("c", out)
      .Set("indptr", indptr)
      .Set("indices", indices)
      .Set("m", rows)
      .Set("n", dense.size(0))
      .Set("feat_size", feat)
      .Set("nnz", nnz)
      .Run(2 * nnz * feat + rows * feat);
}

void RunSddmmDot(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x, const at::Tensor& y,
                 const at::Tensor& out, bool prefetch) {
  const int64_t rows = indptr.numel() - 1, feat = x.size(1), nnz = indices.numel();
  if (nnz == 0) return;
  if (feat == 0) {
    out.zero_();
    return;
  }
  auto kernel = GetOpKernel({"sddmm_dot", "sddmm", x.scalar_type(), indptr.scalar_type(), {{"feat_size", feat}},
                             prefetch, TargetFor(x, "sddmm")});
  KernelCall(*kernel)
      .Set("x", x)
      .Set("y", y)
      .Set("out", out)
      .Set("indptr", indptr)
      .Set("indices", indices)
      .Set("m", rows)
      .Set("n", y.size(0))
      .Set("feat_size", feat)
      .Set("nnz", nnz)
      .Run(2 * nnz * feat);
}

}  // namespace sparsetir::ops
