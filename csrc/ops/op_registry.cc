// The torch.ops.sparsetir library: schemas (the public API: names and
// argument orders are fixed; optional arguments may only be appended) and the
// CPU implementations. register_fake lives in Python (sparsetir_torch/ops.py),
// autograd in C++ (autograd_<op>.cc); both are built from these same
// operators.
#include <torch/library.h>

#include "on_host.h"
#include "ops.h"

TORCH_LIBRARY(sparsetir, m) {
  const std::vector<at::Tag> tags = {at::Tag::pt2_compliant_tag};
  m.def("spmm(Tensor indptr, Tensor indices, Tensor values, Tensor dense, str reduce=\"sum\") -> Tensor", tags);
  m.def("sddmm(Tensor indptr, Tensor indices, Tensor? values, Tensor x, Tensor y, str op=\"dot\") -> Tensor", tags);
  m.def("bsrmm(Tensor indptr, Tensor indices, Tensor blocks, Tensor dense) -> Tensor", tags);
  m.def("sparse_attention(Tensor indptr, Tensor indices, Tensor q, Tensor k, Tensor v, float? scale=None) -> Tensor",
        tags);
  m.def("edge_softmax(Tensor indptr, Tensor indices, Tensor scores) -> Tensor", tags);
  m.def(
      "gat_attention(Tensor indptr, Tensor indices, Tensor a_dst, Tensor a_src, Tensor x, "
      "float negative_slope=0.2) -> Tensor",
      tags);
  m.def("bsr_linear(Tensor x, Tensor indptr, Tensor indices, Tensor blocks) -> Tensor", tags);
  m.def("dropout(Tensor input, float p, Tensor seed) -> Tensor", tags);
  // spmm (sum) run in the hyb(parts, max_width) form: the format choice of st.spmm.
  m.def("_spmm_hyb(Tensor indptr, Tensor indices, Tensor values, Tensor dense, int parts, int max_width) -> Tensor",
        tags);
  // Helpers of the backward passes.
  m.def("_csr_transpose(Tensor indptr, Tensor indices, SymInt columns) -> (Tensor, Tensor, Tensor)", tags);
  m.def(
      "_spmm_dense_backward(Tensor indptr, Tensor indices, Tensor values, Tensor grad, SymInt columns, "
      "str reduce, bool cache_values=False) -> Tensor",
      tags);
  m.def(
      "_spmm_extremum_backward(Tensor indptr, Tensor indices, Tensor values, Tensor dense, Tensor out, "
      "Tensor grad, bool values_grad=True) -> (Tensor grad_values, Tensor grad_dense)",
      tags);
  // Format conversion (automatic format choice in the Python wrappers).
  m.def("_csr_to_bsr(Tensor indptr, Tensor indices, int columns, int block_h, int block_w) -> (Tensor, Tensor, Tensor)",
        tags);
  m.def(
      "_coo_to_csr(Tensor row, Tensor col, int rows, int columns, bool sum_duplicates=True) -> "
      "(Tensor indptr, Tensor indices, Tensor slot)",
      tags);
  m.def("_csr_to_ell(Tensor indptr, Tensor indices, int width) -> (Tensor indices, Tensor slot)", tags);
  m.def(
      "_csr_to_hyb(Tensor indptr, Tensor indices, int columns, int parts, int max_width) -> "
      "(Tensor bucket_info, Tensor row_map, Tensor indices, Tensor slot)",
      tags);
  m.def("_csr_rcm(Tensor indptr, Tensor indices) -> (Tensor order, Tensor indptr, Tensor indices, Tensor source)",
        tags);
  m.def("_scatter_by_slot(Tensor values, Tensor slot, Tensor indptr, int size, int group_rows) -> Tensor", tags);
  m.def(
      "_sparse_attention_backward(Tensor indptr, Tensor indices, Tensor q, Tensor k, Tensor v, Tensor out, "
      "Tensor grad_out, float? scale=None, Tensor? lse=None) -> (Tensor, Tensor, Tensor)",
      tags);
  m.def(
      "_sparse_attention_forward(Tensor indptr, Tensor indices, Tensor q, Tensor k, Tensor v, float? scale=None) -> "
      "(Tensor out, Tensor lse)",
      tags);
  m.def(
      "_bsr_linear_grad_blocks(Tensor x, Tensor grad, Tensor indptr, Tensor indices, int block_h, int block_w) -> "
      "Tensor",
      tags);
  m.def(
      "_gat_attention_forward(Tensor indptr, Tensor indices, Tensor a_dst, Tensor a_src, Tensor x, "
      "float negative_slope) -> (Tensor out, Tensor probs)",
      tags);
  m.def(
      "_gat_attention_backward(Tensor indptr, Tensor indices, Tensor a_dst, Tensor a_src, Tensor x, Tensor probs, "
      "Tensor grad_out, float negative_slope) -> (Tensor grad_a_dst, Tensor grad_a_src, Tensor grad_x)",
      tags);
  m.def("_edge_softmax_backward(Tensor indptr, Tensor indices, Tensor out, Tensor grad) -> Tensor", tags);
}

TORCH_LIBRARY_IMPL(sparsetir, CPU, m) {
  using namespace sparsetir::ops;
  m.impl("spmm", &Spmm);
  m.impl("_spmm_hyb", &SpmmHyb);
  m.impl("sddmm", &Sddmm);
  m.impl("bsrmm", &Bsrmm);
  m.impl("sparse_attention", &SparseAttention);
  m.impl("edge_softmax", &EdgeSoftmax);
  m.impl("gat_attention", &GatAttention);
  m.impl("_gat_attention_forward", &GatAttentionForward);
  m.impl("_gat_attention_backward", &GatAttentionBackward);
  m.impl("bsr_linear", &BsrLinear);
  m.impl("dropout", &Dropout);
  m.impl("_bsr_linear_grad_blocks", &BsrLinearGradBlocks);
  m.impl("_edge_softmax_backward", &EdgeSoftmaxBackward);
  m.impl("_csr_transpose", &CsrTransposeOp);
  m.impl("_csr_to_bsr", &CsrToBsrOp);
  m.impl("_coo_to_csr", &CooToCsrOp);
  m.impl("_csr_to_ell", &CsrToEllOp);
  m.impl("_csr_to_hyb", &CsrToHybOp);
  m.impl("_csr_rcm", &CsrRcmOp);
  m.impl("_scatter_by_slot", &ScatterBySlot);
  m.impl("_sparse_attention_backward", &SparseAttentionBackward);
  m.impl("_sparse_attention_forward", &SparseAttentionForward);
  m.impl("_spmm_extremum_backward", &SpmmExtremumBackward);
  m.impl("_spmm_dense_backward", &SpmmDenseBackward);
}

// The names the host-side conversions (on_host.h) give in their errors.
namespace {
constexpr char kCsrToBsr[] = "sparsetir._csr_to_bsr";
constexpr char kCooToCsr[] = "sparsetir._coo_to_csr";
constexpr char kCsrToEll[] = "sparsetir._csr_to_ell";
constexpr char kCsrToHyb[] = "sparsetir._csr_to_hyb";
constexpr char kCsrRcm[] = "sparsetir._csr_rcm";
}  // namespace

// CUDA tensors: the operators that have cuda recipes (recipes/cuda_recipes.h)
// or compose them (sparse_attention), the helpers of their backward passes
// (spmm max/min's written with torch operators) and the structure
// conversions (on the host) with the scatter of values into their slots. Kernels are generated CUDA, compiled by NVRTC
// and launched through the driver (cuda_launch.h); no CUDA library is linked.
TORCH_LIBRARY_IMPL(sparsetir, CUDA, m) {
  using namespace sparsetir::ops;
  m.impl("spmm", &Spmm);
  m.impl("sddmm", &Sddmm);
  m.impl("_csr_transpose", &CsrTransposeOp);
  m.impl("_spmm_dense_backward", &SpmmDenseBackward);
  m.impl("edge_softmax", &EdgeSoftmax);
  m.impl("_edge_softmax_backward", &EdgeSoftmaxBackward);
  m.impl("bsrmm", &Bsrmm);
  m.impl("bsr_linear", &BsrLinear);
  m.impl("_bsr_linear_grad_blocks", &BsrLinearGradBlocks);
  m.impl("sparse_attention", &SparseAttention);
  m.impl("_sparse_attention_backward", &SparseAttentionBackward);
  m.impl("_sparse_attention_forward", &SparseAttentionForward);
  m.impl("gat_attention", &GatAttention);
  m.impl("_gat_attention_forward", &GatAttentionForward);
  m.impl("_gat_attention_backward", &GatAttentionBackward);
  m.impl("_spmm_extremum_backward", &SpmmExtremumBackwardByTorchOps);
  m.impl("_scatter_by_slot", &ScatterBySlotByTorchOps);
  // Structure conversions, once per graph: on the host (on_host.h).
  m.impl("_csr_to_bsr", &OnHost<&CsrToBsrOp, kCsrToBsr>::Call);
  m.impl("_coo_to_csr", &OnHost<&CooToCsrOp, kCooToCsr>::Call);
  m.impl("_csr_to_ell", &OnHost<&CsrToEllOp, kCsrToEll>::Call);
  m.impl("_csr_to_hyb", &OnHost<&CsrToHybOp, kCsrToHyb>::Call);
  m.impl("_csr_rcm", &OnHost<&CsrRcmOp, kCsrRcm>::Call);
}
