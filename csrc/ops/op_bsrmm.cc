// torch.ops.sparsetir.bsrmm: block-sparse (BSR, blocks (nnzb, bh, bw)) times
// dense (n, K) with n a multiple of bw; the result has rows * bh rows.
#include "csr_kernels.h"
#include "kernel_library.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {

at::Tensor Bsrmm(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& blocks,
                 const at::Tensor& dense) {
  const std::string op = "sparsetir.bsrmm";
  at::Tensor a = CheckFloat(op, "blocks", blocks, 3);
  at::Tensor b = CheckFloat(op, "dense", dense, 2);
  CheckSameDtype(op, "dense", b, a.scalar_type(), "blocks");
  const int64_t block_h = a.size(1), block_w = a.size(2), feat = b.size(1);
  TORCH_CHECK_VALUE(block_h > 0 && block_w > 0, op, ": argument 'blocks' must have non-empty blocks, got shape ",
                    ShapeString(a.sizes()));
  TORCH_CHECK_VALUE(b.size(0) % block_w == 0, op, ": argument 'dense' has ", b.size(0),
                    " rows, not a multiple of the block width ", block_w, " (blocks ", ShapeString(a.sizes()), ")");
  const int64_t block_columns = b.size(0) / block_w;
  CheckedCsr csr = CheckCsr(op, indptr, indices, block_columns, "dense.size(0) / block width");
  TORCH_CHECK_VALUE(a.size(0) == csr.nnz(), op, ": argument 'blocks' must hold one block per non-zero block (",
                    csr.nnz(), ", the length of 'indices'), got shape ", ShapeString(a.sizes()));
  const Target target = TargetFor(b, "bsrmm");
  if (AccumulatesInNarrowOutput(a.scalar_type(), target, block_h * feat)) {
    return Bsrmm(csr.indptr, csr.indices, a.to(at::kFloat), b.to(at::kFloat)).to(a.scalar_type());
  }
  at::Tensor out = EmptyOutput({csr.rows() * block_h, feat}, b.options());
  if (out.numel() == 0) return out;
  std::map<std::string, int64_t> sizes{{"block_h", block_h}, {"block_w", block_w}, {"feat_size", feat}};
  if (target.is_cuda()) {
    sizes[kBsrmmRowsPerThread] = CudaBsrmmRowsFor(csr.rows(), block_h, block_w, feat, a.scalar_type(), b.device());
  }
  auto kernel = GetOpKernel({"bsrmm", "bsrmm", a.scalar_type(), csr.indptr.scalar_type(), sizes,
                             GatherPrefetch::kToL1, target});
  KernelCall(*kernel)
      .Set("a", a)
      .Set("b", b)
      .Set("c", out)
      .Set("indptr", csr.indptr)
      .Set("indices", csr.indices)
      .Set("mb", csr.rows())
      .Set("nb", block_columns)
      .Set("nnzb", csr.nnz())
      .Set("block_h", block_h)
      .Set("block_w", block_w)
      .Set("feat_size", feat)
      .Run(2 * csr.nnz() * block_h * block_w * feat);
  return out;
}

}  // namespace sparsetir::ops
