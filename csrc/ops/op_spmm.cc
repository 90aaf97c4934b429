// torch.ops.sparsetir.spmm: out[i, :] = reduce over the non-zeros (i, j) of
// values * dense[j, :], reduce in {sum, mean, max, min}; empty rows give 0.
#include "csr_kernels.h"
#include "graph_cache.h"
#include "kernel_library.h"
#include "launcher.h"
#include "runtime/bsr_conversion.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {

at::Tensor Spmm(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values, const at::Tensor& dense,
                c10::string_view reduce) {
  const std::string op = "sparsetir.spmm";
  const std::string how(reduce);
  TORCH_CHECK_VALUE(how == "sum" || how == "mean" || how == "max" || how == "min", op,
                    ": argument 'reduce' must be one of \"sum\", \"mean\", \"max\", \"min\", got \"", how, "\"");
  TORCH_CHECK_VALUE(dense.dim() == 2 || dense.dim() == 3, op,
                    ": argument 'dense' must be 2-D (n, K) or 3-D (n, heads, D), got shape ",
                    ShapeString(dense.sizes()));
  if (dense.dim() == 3) return SpmmHeads(indptr, indices, values, dense, how);
  at::Tensor b = CheckFloat(op, "dense", dense, 2);
  at::Tensor a = CheckFloat(op, "values", values, 1);
  CheckSameDtype(op, "dense", b, a.scalar_type(), "values");
  CheckSameDevice(op, "values", a, indptr, "indptr");
  CheckSameDevice(op, "dense", b, indptr, "indptr");
  CheckedCsr csr = CheckCsr(op, indptr, indices, b.size(0), "dense.size(0)");
  TORCH_CHECK_VALUE(a.numel() == csr.nnz(), op, ": argument 'values' must have one element per non-zero (",
                    csr.nnz(), ", the length of 'indices'), got shape ", ShapeString(a.sizes()));
  at::Tensor out = EmptyOutput({csr.rows(), b.size(1)}, b.options());
  const std::string script = how == "max" ? "csrmm_max" : how == "min" ? "csrmm_min" : "csrmm";
  const bool on_gpu = script == "csrmm" && TargetFor(b, "csrmm").is_cuda();
  const int64_t segment =
      on_gpu ? CudaRowSegmentLength(csr.info->summary(), b.size(1), b.scalar_type(), b.device()) : 0;
  if (segment > 0) {
    // Long rows on a GPU: many thread groups per row instead of one. The
    // rows of one segment are written as they are; split rows' partial sums
    // meet in a float32 (float64) workspace and are divided (mean) and
    // rounded once, as the whole-row kernel's accumulator is. The kernel
    // reads 16-bit operands as they are.
    const RowSegments segments = csr.info->Segments(csr.indptr, segment);
    const at::Tensor lengths = csr.info->MeanDivisors(csr.indptr, ComputeDtype(a.scalar_type())).view({-1});
    RunCsrmmSegments(segments, csr.indices, a, b, lengths, how == "mean", out);
    return out;
  } else if (how == "mean") {
    // The division by the row length inside the kernel, on the row in
    // registers (csrmm_mean, on either target): one pass over the output
    // instead of two, and 16-bit rows rounded once, after the division (the
    // lengths are float32 for them, exact at any length).
    const at::Tensor lengths = csr.info->MeanDivisors(csr.indptr, ComputeDtype(a.scalar_type())).view({-1});
    RunCsrmmMean(csr.indptr, csr.indices, a, b, lengths, out, GatherPrefetchFor(csr, b));
    return out;
  } else {
    RunCsrmm(script, csr.indptr, csr.indices, a, b, out, GatherPrefetchFor(csr, b));
  }
  if ((how == "max" || how == "min") && csr.info->summary().empty_rows > 0) {
    out.index_fill_(0, csr.info->EmptyRows(csr.indptr), 0);  // the kernel leaves the identity (+-inf) there
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> CsrTransposeOp(const at::Tensor& indptr, const at::Tensor& indices,
                                                              int64_t columns) {
  const std::string op = "sparsetir._csr_transpose";
  TORCH_CHECK_VALUE(columns >= 0, op, ": argument 'columns' must be non-negative, got ", columns);
  CheckedCsr csr = CheckCsr(op, indptr, indices, columns, "argument 'columns'");
  CsrTranspose t = csr.info->Transpose(csr.indptr, csr.indices, columns);
  return {t.indptr, t.indices, t.perm};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> CsrToBsrOp(const at::Tensor& indptr, const at::Tensor& indices,
                                                          int64_t columns, int64_t block_h, int64_t block_w) {
  const std::string op = "sparsetir._csr_to_bsr";
  TORCH_CHECK_VALUE(columns >= 0, op, ": argument 'columns' must be non-negative, got ", columns);
  TORCH_CHECK_VALUE(block_h > 0 && block_w > 0, op, ": block sizes must be positive, got ", block_h, " x ", block_w);
  CheckedCsr csr = CheckCsr(op, indptr, indices, columns, "argument 'columns'");
  // Every non-zero may open its own block: nnz blocks of block_h x block_w
  // slots must be countable.
  int64_t block = 0;
  TORCH_CHECK_VALUE(!__builtin_mul_overflow(block_h, block_w, &block), op, ": block size ", block_h, " x ", block_w,
                    " overflows");
  CheckSlotCount(op, "block_h * block_w", csr.nnz(), block);
  BsrFromCsr b = csr.info->Bsr(csr.indptr, csr.indices, columns, block_h, block_w);
  return {b.indptr, b.indices, b.slot};
}

int64_t SpmmPrefetchLevel(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t row_bytes) {
  CheckedCsr csr = CheckCsr("sparsetir.spmm_prefetch_level", indptr, indices, columns, "argument 'columns'");
  return static_cast<int64_t>(GatherPrefetchFor(csr, columns, row_bytes));
}

int64_t SpmmCudaRowSegment(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat,
                           at::ScalarType dtype, c10::Device device) {
  CheckedCsr csr = CheckCsr("sparsetir.spmm_cuda_row_segment", indptr, indices, columns, "argument 'columns'");
  return CudaRowSegmentLength(csr.info->summary(), feat, dtype, device);
}

int64_t BsrBlockCount(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t block_h,
                      int64_t block_w) {
  const std::string op = "sparsetir.bsr_block_count";
  TORCH_CHECK_VALUE(block_h > 0 && block_w > 0, op, ": block sizes must be positive, got ", block_h, " x ", block_w);
  CheckedCsr csr = CheckCsr(op, indptr, indices, columns, "argument 'columns'");
  // Every non-zero may open its own block: nnz blocks of block_h x block_w
  // slots must be countable.
  int64_t block = 0;
  TORCH_CHECK_VALUE(!__builtin_mul_overflow(block_h, block_w, &block), op, ": block size ", block_h, " x ", block_w,
                    " overflows");
  CheckSlotCount(op, "block_h * block_w", csr.nnz(), block);
  const SparsetirLauncher launcher = TorchLauncher();
  if (csr.indptr.scalar_type() == at::kInt) {
    return CountBsrBlocks<int32_t>(csr.indptr.data_ptr<int32_t>(), csr.indices.data_ptr<int32_t>(), csr.rows(),
                                   columns, block_h, block_w, &launcher);
  }
  return CountBsrBlocks<int64_t>(csr.indptr.data_ptr<int64_t>(), csr.indices.data_ptr<int64_t>(), csr.rows(), columns,
                                 block_h, block_w, &launcher);
}

}  // namespace sparsetir::ops
