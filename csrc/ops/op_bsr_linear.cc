// torch.ops.sparsetir.bsr_linear: x @ W^T for a block-sparse weight W
// (out_features x in_features, BSR: indptr over block rows of W, blocks
// (nnzb, bh, bw)), the forward pass of a Linear layer with a pruned weight,
// computed on x as it is (batch rows contiguous) without transposing it.
// Leading dimensions of x are batch dimensions.
#include "csr_kernels.h"
#include "kernel_library.h"
#include "recipes/cuda_recipes.h"
#include "tensor_args.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {

namespace {

// The arguments that describe the weight's block structure, which every
// bsr_linear kernel takes.
KernelCall& SetBlockStructure(KernelCall& call, const CheckedCsr& csr, int64_t block_columns, int64_t block_h,
                              int64_t block_w) {
  return call.Set("indptr", csr.indptr)
      .Set("indices", csr.indices)
      .Set("mb", csr.rows())
      .Set("nb", block_columns)
      .Set("nnzb", csr.nnz())
      .Set("block_h", block_h)
      .Set("block_w", block_w);
}

// bsr_linear on tensor cores (recipes/cuda_recipes.h): x (batch, in) seen as
// (batch / 16, 16, nb, block_w) and the output as (batch / 16, 16, mb,
// block_h), views without copies, so that every tile of 16 batch rows is
// whole.
at::Tensor BsrLinearOnTiles(const at::Tensor& x, const at::Tensor& wt, const CheckedCsr& csr, int64_t block_h,
                            int64_t block_w, const Target& target) {
  const int64_t batch = x.size(0), tiles = batch / kBsrLinearTileRows, block_columns = x.size(1) / block_w;
  at::Tensor out = EmptyOutput({batch, csr.rows() * block_h}, x.options());
  auto kernel = GetOpKernel({"bsr_linear_tiles", "bsr_linear_tiles", wt.scalar_type(), csr.indptr.scalar_type(),
                             {{"block_h", block_h}, {"block_w", block_w}, {"tile_rows", kBsrLinearTileRows}},
                             GatherPrefetch::kToL1,
                             target});
  KernelCall call(*kernel);
  SetBlockStructure(call, csr, block_columns, block_h, block_w)
      .Set("x", x.reshape({tiles, kBsrLinearTileRows, block_columns, block_w}))
      .Set("wt", wt)
      .Set("y", out.view({tiles, kBsrLinearTileRows, csr.rows(), block_h}))
      .Set("tiles", tiles)
      .Set("tile_rows", kBsrLinearTileRows)
      .Run(2 * csr.nnz() * block_h * block_w * batch);
  return out;
}

// The blocks' gradient on tensor cores: x and grad seen as batch tiles of 16
// rows, the reduction of one mma.
at::Tensor BsrLinearGradBlocksOnTiles(const at::Tensor& x, const at::Tensor& grad, const CheckedCsr& csr,
                                      int64_t block_h, int64_t block_w, const Target& target) {
  const int64_t batch = x.size(0), tiles = batch / kBsrLinearTileRows, block_columns = x.size(1) / block_w;
  at::Tensor out = EmptyOutput({csr.nnz(), block_h, block_w}, x.options());
  auto kernel = GetOpKernel({"bsr_linear_grad_blocks_tiles", "bsr_linear_grad_blocks_tiles", x.scalar_type(),
                             csr.indptr.scalar_type(),
                             {{"block_h", block_h}, {"block_w", block_w}, {"tile_rows", kBsrLinearTileRows}},
                             GatherPrefetch::kToL1,
                             target});
  KernelCall call(*kernel);
  SetBlockStructure(call, csr, block_columns, block_h, block_w)
      .Set("x", x.reshape({tiles, kBsrLinearTileRows, block_columns, block_w}))
      .Set("grad_y", grad.reshape({tiles, kBsrLinearTileRows, csr.rows(), block_h}))
      .Set("grad_blocks", out)
      .Set("tiles", tiles)
      .Set("tile_rows", kBsrLinearTileRows)
      .Run(2 * csr.nnz() * block_h * block_w * batch);
  return out;
}

}  // namespace

at::Tensor BsrLinear(const at::Tensor& x, const at::Tensor& indptr, const at::Tensor& indices,
                     const at::Tensor& blocks) {
  const std::string op = "sparsetir.bsr_linear";
  at::Tensor xc = CheckFloat(op, "x", x, -1);
  TORCH_CHECK_VALUE(blocks.dim() == 3, op, ": argument 'blocks' must be 3-D (nnzb, block_h, block_w), got shape ",
                    ShapeString(blocks.sizes()));
  // The kernel reads each block transposed. A weight kept in that layout and
  // passed as its transposed view (BlockSparseLinear does) is used without a
  // copy; any other is transposed here.
  at::Tensor wt = CheckFloat(op, "blocks", blocks.transpose(1, 2), 3);
  CheckSameDtype(op, "blocks", wt, xc.scalar_type(), "x");
  CheckSameDevice(op, "x", xc, indptr, "indptr");
  CheckSameDevice(op, "blocks", wt, indptr, "indptr");
  TORCH_CHECK_VALUE(xc.dim() >= 1, op, ": argument 'x' must have at least one dimension (..., in_features)");
  const int64_t block_h = blocks.size(1), block_w = blocks.size(2), in_features = xc.size(-1);
  TORCH_CHECK_VALUE(block_h > 0 && block_w > 0, op, ": argument 'blocks' must have non-empty blocks, got shape ",
                    ShapeString(blocks.sizes()));
  TORCH_CHECK_VALUE(in_features % block_w == 0, op, ": argument 'x' has ", in_features,
                    " features, not a multiple of the block width ", block_w, " (blocks ", ShapeString(blocks.sizes()), ")");
  const int64_t block_columns = in_features / block_w;
  CheckedCsr csr = CheckCsr(op, indptr, indices, block_columns, "x.size(-1) / block width");
  TORCH_CHECK_VALUE(blocks.size(0) == csr.nnz(), op, ": argument 'blocks' must hold one block per non-zero block (",
                    csr.nnz(), ", the length of 'indices'), got shape ", ShapeString(blocks.sizes()));
  const int64_t out_features = csr.rows() * block_h;
  const int64_t batch = in_features > 0 ? xc.numel() / in_features : 0;
  std::vector<int64_t> shape = xc.sizes().vec();
  shape.back() = out_features;
  // Without stored blocks (or rows) no kernel writes the output.
  if (csr.nnz() == 0 || batch == 0) return at::zeros(shape, xc.options());
  const Target target = TargetFor(xc, "bsr_linear");
  if (target.is_cuda() && batch % kBsrLinearTileRows == 0 &&
      BsrLinearOnTensorCores(FromTorch(xc.scalar_type()), block_h, block_w)) {
    return BsrLinearOnTiles(xc.reshape({batch, in_features}), wt, csr, block_h, block_w, target).reshape(shape);
  }
  if (AccumulatesInNarrowOutput(xc.scalar_type(), target, block_h)) {
    return BsrLinear(xc.to(at::kFloat), csr.indptr, csr.indices, blocks.to(at::kFloat)).to(xc.scalar_type());
  }
  at::Tensor out = EmptyOutput({batch, out_features}, xc.options());
  std::map<std::string, int64_t> sizes{{"block_h", block_h}, {"block_w", block_w}};
  if (target.is_cuda()) {
    // $SPARSETIR_CUDA_BSRMM_ROWS=0 asks for a thread per output here too.
    if (const int64_t rows = CudaBsrmmRowsSetting(); rows >= 0) sizes[kBsrmmRowsPerThread] = rows;
  }
  auto kernel = GetOpKernel({"bsr_linear", "bsr_linear", wt.scalar_type(), csr.indptr.scalar_type(), sizes,
                             GatherPrefetch::kToL1, target});
  KernelCall call(*kernel);
  SetBlockStructure(call, csr, block_columns, block_h, block_w)
      .Set("x", xc.reshape({batch, in_features}))
      .Set("wt", wt)
      .Set("y", out)
      .Set("batch", batch)
      .Run(2 * csr.nnz() * block_h * block_w * batch);
  return out.reshape(shape);
}

at::Tensor BsrLinearGradBlocks(const at::Tensor& x, const at::Tensor& grad, const at::Tensor& indptr,
                               const at::Tensor& indices, int64_t block_h, int64_t block_w) {
  const std::string op = "sparsetir._bsr_linear_grad_blocks";
  at::Tensor xc = CheckFloat(op, "x", x, -1);
  at::Tensor g = CheckFloat(op, "grad", grad, -1);
  CheckSameDtype(op, "grad", g, xc.scalar_type(), "x");
  CheckSameDevice(op, "x", xc, indptr, "indptr");
  CheckSameDevice(op, "grad", g, indptr, "indptr");
  TORCH_CHECK_VALUE(block_h > 0 && block_w > 0, op, ": the block shape must be positive, got ", block_h, " x ",
                    block_w);
  TORCH_CHECK_VALUE(xc.dim() >= 1 && xc.size(-1) % block_w == 0, op, ": argument 'x' ", ShapeString(xc.sizes()),
                    " must have a multiple of the block width ", block_w, " features");
  CheckedCsr csr = CheckCsr(op, indptr, indices, xc.size(-1) / block_w, "x.size(-1) / block width");
  const int64_t out_features = csr.rows() * block_h, in_features = xc.size(-1);
  const int64_t batch = in_features > 0 ? xc.numel() / in_features : 0;
  TORCH_CHECK_VALUE(g.size(-1) == out_features && g.numel() == batch * out_features, op, ": argument 'grad' ",
                    ShapeString(g.sizes()), " must have the batch of 'x' ", ShapeString(xc.sizes()), " and ",
                    out_features, " features");
  if (batch == 0 || csr.nnz() == 0) return at::zeros({csr.nnz(), block_h, block_w}, xc.options());
  const Target target = TargetFor(xc, "bsr_linear_grad_blocks");
  if (target.is_cuda() && batch % kBsrLinearTileRows == 0 &&
      BsrLinearGradBlocksOnTensorCores(FromTorch(xc.scalar_type()), block_h, block_w)) {
    return BsrLinearGradBlocksOnTiles(xc.reshape({batch, in_features}), g.reshape({batch, out_features}), csr,
                                      block_h, block_w, target);
  }
  if (AccumulatesInNarrowOutput(xc.scalar_type(), target, block_h * block_w)) {
    return BsrLinearGradBlocks(xc.to(at::kFloat), g.to(at::kFloat), csr.indptr, csr.indices, block_h, block_w)
        .to(xc.scalar_type());
  }
  at::Tensor out = EmptyOutput({csr.nnz(), block_h, block_w}, xc.options());
  auto kernel = GetOpKernel({"bsr_linear_grad_blocks", "bsr_linear_grad_blocks", xc.scalar_type(),
                             csr.indptr.scalar_type(), {{"block_h", block_h}, {"block_w", block_w}},
                             GatherPrefetch::kToL1, target});
  KernelCall call(*kernel);
  SetBlockStructure(call, csr, in_features / block_w, block_h, block_w)
      .Set("x", xc.reshape({batch, in_features}))
      .Set("grad_y", g.reshape({batch, out_features}))
      .Set("grad_blocks", out)
      .Set("batch", batch)
      .Run(2 * csr.nnz() * block_h * block_w * batch);
  return out;
}

}  // namespace sparsetir::ops
