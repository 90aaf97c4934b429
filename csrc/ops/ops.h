// The CPU implementations of the torch.ops.sparsetir operators (schemas in
// op_registry.cc). Sparse operands arrive as dense component tensors so that
// torch.compile can trace them.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "recipes/cpu_recipes.h"

namespace sparsetir::ops {

at::Tensor Spmm(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values, const at::Tensor& dense,
                c10::string_view reduce);
// spmm with dense (n, heads, D): values (nnz,) shared by the heads, or
// (nnz, heads) per head (sum and mean) (op_spmm_heads.cc).
at::Tensor SpmmHeads(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                     const at::Tensor& dense, const std::string& how);

// spmm (sum) with the structure run in its hyb(parts, max_width) form
// (op_spmm_hyb.cc); float32 and float64 values.
at::Tensor SpmmHyb(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                   const at::Tensor& dense, int64_t parts, int64_t max_width);

// sddmm: op "dot" (x (m, D) . y (n, D), or per head x (m, H, D) . y (n, H, D)),
// "add" or "mul" (x[i] + y[j], x[i] * y[j] element-wise over any trailing
// shape); times values (nnz,) or of the output's shape when given.
at::Tensor Sddmm(const at::Tensor& indptr, const at::Tensor& indices, const std::optional<at::Tensor>& values,
                 const at::Tensor& x, const at::Tensor& y, c10::string_view op);

at::Tensor Bsrmm(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& blocks,
                 const at::Tensor& dense);

// True if sparse_attention on cuda runs its one-pass kernels (forward and
// backward) for these head and value dimensions and heads (batch x heads);
// else the multi-head operators.
bool SparseAttentionRunsOnline(int64_t head_dim, int64_t value_dim, int64_t heads);
at::Tensor SparseAttention(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q,
                           const at::Tensor& k, const at::Tensor& v, std::optional<double> scale);
// sparse_attention's output and each row's log-sum-exp of its scaled scores,
// q.shape[:-1] in the compute dtype (float64 for float64 inputs, else
// float32; -inf for a row without columns), which the backward takes.
std::tuple<at::Tensor, at::Tensor> SparseAttentionForward(const at::Tensor& indptr, const at::Tensor& indices,
                                                          const at::Tensor& q, const at::Tensor& k,
                                                          const at::Tensor& v, std::optional<double> scale);

// x @ W^T for a BSR weight W (blocks (nnzb, bh, bw), indptr over its block
// rows): a Linear layer's forward pass with a block-sparse weight.
at::Tensor BsrLinear(const at::Tensor& x, const at::Tensor& indptr, const at::Tensor& indices,
                     const at::Tensor& blocks);
// The gradient of bsr_linear's blocks: for every stored block (i, j),
// grad[:, block i]^T @ x[:, block j], (nnzb, block_h, block_w).
at::Tensor BsrLinearGradBlocks(const at::Tensor& x, const at::Tensor& grad, const at::Tensor& indptr,
                               const at::Tensor& indices, int64_t block_h, int64_t block_w);

// The softmax of per-edge scores ((nnz,) or (nnz, heads)) over each row's
// non-zeros, and its gradient given the softmax's output and the output's
// gradient.
// A GAT layer's attention (op_gat_attention.cc): per head h,
// out[i, h] = sum over row i's non-zeros of softmax_j(leaky_relu(a_dst[i, h] +
// a_src[j, h])) * x[j, h]; the forward also returns the probabilities (nnz, H).
at::Tensor GatAttention(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& a_dst,
                        const at::Tensor& a_src, const at::Tensor& x, double negative_slope);
std::tuple<at::Tensor, at::Tensor> GatAttentionForward(const at::Tensor& indptr, const at::Tensor& indices,
                                                       const at::Tensor& a_dst, const at::Tensor& a_src,
                                                       const at::Tensor& x, double negative_slope);
std::tuple<at::Tensor, at::Tensor, at::Tensor> GatAttentionBackward(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& a_dst, const at::Tensor& a_src,
    const at::Tensor& x, const at::Tensor& probs, const at::Tensor& grad_out, double negative_slope);
at::Tensor EdgeSoftmax(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& scores);
at::Tensor EdgeSoftmaxBackward(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& out,
                               const at::Tensor& grad);

// Dropout (op_dropout.cc): each element of `input` kept with probability
// 1 - p and scaled by 1 / (1 - p), or zeroed, by a counter-based generator
// keyed by `seed` (an int64 scalar tensor): the same seed, the same mask.
at::Tensor Dropout(const at::Tensor& input, double p, const at::Tensor& seed);
// The Philox4x32-10 words of a counter (4 words) and key (2 words), for the
// generator's known-answer tests.
std::vector<int64_t> PhiloxWords(const std::vector<int64_t>& counter, const std::vector<int64_t>& key);

// Gradients of sparse_attention with respect to q, k and v; `lse`, the
// forward's log-sum-exp (SparseAttentionForward), spares the one-pass cuda
// kernel its recomputation of the softmax (the other paths do not need it).
std::tuple<at::Tensor, at::Tensor, at::Tensor> SparseAttentionBackward(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const at::Tensor& out, const at::Tensor& grad_out, std::optional<double> scale,
    const std::optional<at::Tensor>& lse);

// The transpose of a CSR structure with `columns` columns: (indptr, indices,
// perm) with values_t = values[perm]; cached per graph.
std::tuple<at::Tensor, at::Tensor, at::Tensor> CsrTransposeOp(const at::Tensor& indptr, const at::Tensor& indices,
                                                              int64_t columns);

// The BSR(block_h, block_w) form of a CSR structure with `columns` columns:
// (indptr, indices, slot) with blocks.view(-1)[slot] = values; cached per graph.
std::tuple<at::Tensor, at::Tensor, at::Tensor> CsrToBsrOp(const at::Tensor& indptr, const at::Tensor& indices,
                                                          int64_t columns, int64_t block_h, int64_t block_w);

// The CSR form of a rows x columns COO structure: (indptr, indices, slot)
// with csr_values = zeros(nnz_out).index_add_(0, slot, coo_values); columns
// sorted within rows, equal (row, col) pairs sharing a slot if
// `sum_duplicates`. Not cached: a COO structure is converted once.
std::tuple<at::Tensor, at::Tensor, at::Tensor> CooToCsrOp(const at::Tensor& row, const at::Tensor& col, int64_t rows,
                                                          int64_t columns, bool sum_duplicates);

// The ELL form (width slots per row) of a CSR structure: (indices (rows,
// width), slot) with padded.view(-1)[slot] = values; cached per graph.
std::tuple<at::Tensor, at::Tensor> CsrToEllOp(const at::Tensor& indptr, const at::Tensor& indices, int64_t width);

// The hyb(parts, max_width) form of a CSR structure with `columns` columns:
// (bucket_info, row_map, indices, slot), see graph_cache.h; cached per graph.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> CsrToHybOp(const at::Tensor& indptr,
                                                                      const at::Tensor& indices, int64_t columns,
                                                                      int64_t parts, int64_t max_width);

// zeros(size) with values[e] added at slot[e]: a CSR matrix's values moved
// into a converted form. Rows are scattered in parallel in groups of
// `group_rows` (rows whose non-zeros may share a slot: a block row for BSR).
at::Tensor ScatterBySlot(const at::Tensor& values, const at::Tensor& slot, const at::Tensor& indptr, int64_t size,
                         int64_t group_rows);

// ScatterBySlot for tensors of other devices (CUDA), with torch operators.
at::Tensor ScatterBySlotByTorchOps(const at::Tensor& values, const at::Tensor& slot, const at::Tensor& indptr,
                                   int64_t size, int64_t group_rows);

// The gradient of spmm (reduce "sum" or "mean") with respect to dense:
// A^T grad with `columns` output rows, where A holds the values, divided by
// the row lengths for the mean. With `cache_values`, the transposed values
// of values that require no grad are kept per graph while the values tensor
// is alive and unchanged (op_spmm_dense_backward.cc).
at::Tensor SpmmDenseBackward(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                             const at::Tensor& grad, int64_t columns, c10::string_view reduce, bool cache_values);

// The gradients (values, dense) of spmm with reduce="max" / "min", given its
// output and the output's gradient; O(nnz + (m + n) K) memory. Without
// `values_grad` the values' gradient is not computed (zeros).
std::tuple<at::Tensor, at::Tensor> SpmmExtremumBackward(const at::Tensor& indptr, const at::Tensor& indices,
                                                        const at::Tensor& values, const at::Tensor& dense,
                                                        const at::Tensor& out, const at::Tensor& grad,
                                                        bool values_grad);

// SpmmExtremumBackward for tensors of other devices (CUDA), with torch
// operators; it holds nnz x K temporaries.
std::tuple<at::Tensor, at::Tensor> SpmmExtremumBackwardByTorchOps(const at::Tensor& indptr, const at::Tensor& indices,
                                                                  const at::Tensor& values, const at::Tensor& dense,
                                                                  const at::Tensor& out, const at::Tensor& grad,
                                                                  bool values_grad);

// The reverse Cuthill-McKee relabelling of a square CSR structure: (order,
// indptr, indices, source) with order[new] = old, the structure of P A P^T
// and new_values = values[source] (runtime/rcm.h).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> CsrRcmOp(const at::Tensor& indptr,
                                                                    const at::Tensor& indices);

// Where spmm's kernel on this structure prefetches the dense rows it gathers
// (GatherPrefetchFor, for a dense operand of `columns` rows of `row_bytes`
// bytes): 0 not at all, 1 into L1, 2 into L2.
int64_t SpmmPrefetchLevel(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t row_bytes);

// What sddmm's dot product runs on the cpu on this structure with x and y
// of `feat` columns of `dtype` (y of `columns` rows): the gathers' prefetch
// (GatherPrefetchFor) and the lanes of the kernel that computes four of a
// row's dot products at a time (SddmmGroupLanesFor; 0: one at a time).
struct SddmmCpuPlan {
  GatherPrefetch prefetch;
  int64_t group_lanes;
};
SddmmCpuPlan SddmmCpuPlanFor(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat,
                             at::ScalarType dtype);

// The row segment length spmm's cuda kernel uses on this structure with a
// dense operand of `columns` rows and `feat` columns of `dtype` on `device`
// (0: rows whole; CudaRowSegmentLength).
int64_t SpmmCudaRowSegment(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat,
                           at::ScalarType dtype, c10::Device device);

// How many blocks CsrToBsrOp would store (for choosing a block size).
int64_t BsrBlockCount(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t block_h,
                      int64_t block_w);

}  // namespace sparsetir::ops
