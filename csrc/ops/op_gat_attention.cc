// torch.ops.sparsetir.gat_attention: a GAT layer's attention and aggregation
// in one call, every head at once (kernels/gat_attention.py):
//   e[(i, j), h] = leaky_relu(a_dst[i, h] + a_src[j, h], negative_slope),
//   alpha        = the softmax of e over each row's non-zeros,
//   out[i, h, :] = sum over row i's non-zeros of alpha[(i, j), h] * x[j, h, :].
// a_dst (m, H), a_src (n, H), x (n, H, C); rows are destination nodes. 16-bit
// inputs are computed in float32 (the exponentials and row sums need its
// range) and the output rounded once. The backward pass is built from the
// library's own kernels: a per-head SDDMM, a per-head SpMM on the transpose,
// the edge softmax's backward and an element-wise SDDMM.
#include <cmath>

#include "csr_kernels.h"
#include "csr_rows.h"
#include "gather_rows.h"
#include "graph_cache.h"
#include "kernel_library.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {
namespace {

struct GatInputs {
  CheckedCsr csr;
  at::Tensor a_dst, a_src, x;  // contiguous, in the compute dtype
  int64_t heads, feat;
};

GatInputs CheckGatInputs(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices,
                         const at::Tensor& a_dst, const at::Tensor& a_src, const at::Tensor& x) {
  at::Tensor xc = CheckFloat(op, "x", x, 3);
  at::Tensor dst = CheckFloat(op, "a_dst", a_dst, 2);
  at::Tensor src = CheckFloat(op, "a_src", a_src, 2);
  CheckSameDtype(op, "a_dst", dst, xc.scalar_type(), "x");
  CheckSameDtype(op, "a_src", src, xc.scalar_type(), "x");
  for (auto [name, t] : {std::pair<const char*, const at::Tensor*>{"x", &xc}, {"a_dst", &dst}, {"a_src", &src}}) {
    CheckSameDevice(op, name, *t, indptr, "indptr");
  }
  const int64_t n = xc.size(0), heads = xc.size(1);
  CheckedCsr csr = CheckCsr(op, indptr, indices, n, "x.size(0)");
  TORCH_CHECK_VALUE(dst.size(0) == csr.rows() && dst.size(1) == heads, op, ": argument 'a_dst' must be (rows, heads) = (",
                    csr.rows(), ", ", heads, "), got shape ", ShapeString(dst.sizes()));
  TORCH_CHECK_VALUE(src.size(0) == n && src.size(1) == heads, op, ": argument 'a_src' must be (x.size(0), heads) = (",
                    n, ", ", heads, "), got shape ", ShapeString(src.sizes()));
  const at::ScalarType compute = ComputeDtype(xc.scalar_type());
  return {csr, dst.to(compute), src.to(compute), xc.to(compute), heads, xc.size(2)};
}

// The probabilities alone (softmax of the leaky scores), for the rare call
// with no features, where the fused kernel has nothing to aggregate.
at::Tensor ProbabilitiesOnly(const GatInputs& in, double negative_slope) {
  at::Tensor scores = Sddmm(in.csr.indptr, in.csr.indices, std::nullopt, in.a_dst, in.a_src, "add");
  return EdgeSoftmax(in.csr.indptr, in.csr.indices, at::leaky_relu(scores, negative_slope));
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> GatAttentionForward(const at::Tensor& indptr, const at::Tensor& indices,
                                                       const at::Tensor& a_dst, const at::Tensor& a_src,
                                                       const at::Tensor& x, double negative_slope) {
  const std::string op = "sparsetir.gat_attention";
  GatInputs in = CheckGatInputs(op, indptr, indices, a_dst, a_src, x);
  TORCH_CHECK_VALUE(std::isfinite(negative_slope), op, ": argument 'negative_slope' must be finite, got ",
                    negative_slope);
  const int64_t rows = in.csr.rows(), nnz = in.csr.nnz();
  const auto options = in.x.options();
  at::Tensor out = EmptyOutput({rows, in.heads, in.feat}, options);
  at::Tensor probs = EmptyOutput({nnz, in.heads}, options);
  if (in.feat == 0) {
    if (probs.numel() > 0) probs = ProbabilitiesOnly(in, negative_slope);
  } else if (out.numel() > 0) {
    at::Tensor row_max = at::empty({rows, in.heads}, options);
    at::Tensor row_sum = at::empty({rows, in.heads}, options);
    at::Tensor slope = at::full({1}, negative_slope, options);
    const Target target = TargetFor(in.x, "gat_attention");
    const int64_t row_bytes = in.heads * in.feat * in.x.element_size();
    auto kernel = GetOpKernel({"gat_attention", "gat_attention", in.x.scalar_type(), in.csr.indptr.scalar_type(),
                               {{"heads", in.heads}, {"feat_size", in.feat}},
                               GatherPrefetchFor(in.csr, in.x.size(0), row_bytes), target});
    KernelCall(*kernel)
        .Set("a_dst", in.a_dst).Set("a_src", in.a_src).Set("x", in.x).Set("slope", slope)
        .Set("out", out).Set("probs", probs).Set("row_max", row_max).Set("row_sum", row_sum)
        .Set("indptr", in.csr.indptr).Set("indices", in.csr.indices)
        .Set("m", rows).Set("n", in.x.size(0)).Set("nnz", nnz).Set("heads", in.heads).Set("feat_size", in.feat)
        .Run(nnz * in.heads * (2 * in.feat + 12));
  }
  return {out.to(x.scalar_type()), probs};
}

at::Tensor GatAttention(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& a_dst,
                        const at::Tensor& a_src, const at::Tensor& x, double negative_slope) {
  return std::get<0>(GatAttentionForward(indptr, indices, a_dst, a_src, x, negative_slope));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> GatAttentionBackward(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& a_dst, const at::Tensor& a_src,
    const at::Tensor& x, const at::Tensor& probs, const at::Tensor& grad_out, double negative_slope) {
  const std::string op = "sparsetir._gat_attention_backward";
  GatInputs in = CheckGatInputs(op, indptr, indices, a_dst, a_src, x);
  const at::ScalarType compute = in.x.scalar_type();
  at::Tensor p = CheckFloat(op, "probs", probs, 2);
  TORCH_CHECK_VALUE(p.size(0) == in.csr.nnz() && p.size(1) == in.heads, op, ": argument 'probs' must be (nnz, heads) = (",
                    in.csr.nnz(), ", ", in.heads, "), got shape ", ShapeString(p.sizes()));
  at::Tensor g = CheckFloat(op, "grad_out", grad_out, 3);
  TORCH_CHECK_VALUE(g.sizes() == at::IntArrayRef({in.csr.rows(), in.heads, in.feat}), op,
                    ": argument 'grad_out' must have the output's shape (", in.csr.rows(), ", ", in.heads, ", ",
                    in.feat, "), got ", ShapeString(g.sizes()));
  CheckSameDevice(op, "probs", p, indptr, "indptr");
  CheckSameDevice(op, "grad_out", g, indptr, "indptr");
  p = p.to(compute);
  g = g.to(compute);
  const at::Tensor &ip = in.csr.indptr, &ix = in.csr.indices;
  // out = sum_j alpha x[j]: the gradients of alpha (a per-head dot product
  // on every non-zero) and of x (a per-head SpMM on the transpose).
  at::Tensor grad_probs = Sddmm(ip, ix, std::nullopt, g, in.x, "dot");
  CsrTranspose t = in.csr.info->Transpose(ip, ix, in.x.size(0));
  at::Tensor grad_x = Spmm(t.indptr, t.indices, GatherRows(p, t.perm), g, "sum");
  // Through the softmax and the leaky_relu to the edge scores a_dst[i] + a_src[j].
  at::Tensor grad_scores = EdgeSoftmaxBackward(ip, ix, p, grad_probs);
  at::Tensor scores = Sddmm(ip, ix, std::nullopt, in.a_dst, in.a_src, "add");
  // torch's fused kernel: one pass where a mask, a product and a select took three.
  grad_scores = at::leaky_relu_backward(grad_scores, scores, negative_slope, /*self_is_result=*/false);
  at::Tensor grad_dst = SumByIndex(in.a_dst, RowIds(ip, ix), grad_scores);
  at::Tensor grad_src = SumByIndex(in.a_src, ix, grad_scores);
  return {grad_dst.to(a_dst.scalar_type()), grad_src.to(a_src.scalar_type()), grad_x.to(x.scalar_type())};
}

}  // namespace sparsetir::ops
