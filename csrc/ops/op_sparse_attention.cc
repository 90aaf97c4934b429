// torch.ops.sparsetir.sparse_attention: for each row i of a CSR pattern,
// softmax(scale * q_i . k_j) over the allowed j, times v. Leading dimensions of
// q (..., L, D), k and v (..., S, D / Dv) are batch and heads; every head runs
// the kernels of kernels/sparse_attention.py. float16 and bfloat16 inputs are
// computed in float32 (the probabilities and row sums need the range).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "csr_kernels.h"
#include "gather_rows.h"
#include "kernel_library.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {
namespace {

struct AttentionArgs {
  CheckedCsr csr;
  // (heads, L, D), (heads, S, D), (heads, S, Dv) in the compute dtype, or in
  // the inputs' dtype where CheckAttention was told not to convert them.
  at::Tensor q, k, v;
  at::ScalarType dtype;  // the inputs' dtype
  double scale;
  int64_t heads() const { return q.size(0); }
};

// (heads, rows, features); the head count is spelled out because any of the
// sizes may be 0, which leaves a -1 in reshape ambiguous.
at::Tensor Heads(const at::Tensor& t, at::ScalarType compute) {
  int64_t heads = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) heads *= t.size(d);
  return t.reshape({heads, t.size(-2), t.size(-1)}).to(compute).contiguous();
}

AttentionArgs CheckAttention(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices,
                             const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             std::optional<double> scale, bool convert = true) {
  at::Tensor qc = CheckFloat(op, "q", q, -1), kc = CheckFloat(op, "k", k, -1), vc = CheckFloat(op, "v", v, -1);
  CheckSameDtype(op, "k", kc, qc.scalar_type(), "q");
  CheckSameDtype(op, "v", vc, qc.scalar_type(), "q");
  TORCH_CHECK_VALUE(qc.dim() >= 2 && kc.dim() == qc.dim() && vc.dim() == qc.dim(), op,
                    ": arguments 'q', 'k', 'v' must have the same number (>= 2) of dimensions (..., L, D), got ",
                    ShapeString(qc.sizes()), ", ", ShapeString(kc.sizes()), ", ", ShapeString(vc.sizes()));
  auto lead = qc.sizes().slice(0, qc.dim() - 2);
  TORCH_CHECK_VALUE(kc.sizes().slice(0, qc.dim() - 2) == lead && vc.sizes().slice(0, qc.dim() - 2) == lead, op,
                    ": arguments 'q', 'k', 'v' must have the same leading (batch, head) dimensions, got ",
                    ShapeString(qc.sizes()), ", ", ShapeString(kc.sizes()), ", ", ShapeString(vc.sizes()));
  TORCH_CHECK_VALUE(kc.size(-1) == qc.size(-1), op, ": argument 'k' ", ShapeString(kc.sizes()),
                    " must have the head dimension of 'q' ", ShapeString(qc.sizes()));
  TORCH_CHECK_VALUE(vc.size(-2) == kc.size(-2), op, ": argument 'v' ", ShapeString(vc.sizes()),
                    " must have as many rows (S) as 'k' ", ShapeString(kc.sizes()));
  CheckedCsr csr = CheckCsr(op, indptr, indices, kc.size(-2), "k.size(-2)");
  TORCH_CHECK_VALUE(csr.rows() == qc.size(-2), op, ": the pattern has ", csr.rows(),
                    " rows (from 'indptr') but 'q' has L = ", qc.size(-2), " ", ShapeString(qc.sizes()));
  const double s = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(qc.size(-1), 1)));
  const auto compute = convert ? ComputeDtype(qc.scalar_type()) : qc.scalar_type();
  return {csr, Heads(qc, compute), Heads(kc, compute), Heads(vc, compute), qc.scalar_type(), s};
}

// `a` with q, k, v in the compute dtype (float32 for 16-bit inputs).
AttentionArgs InComputeDtype(AttentionArgs a) {
  const auto compute = ComputeDtype(a.dtype);
  a.q = a.q.to(compute);
  a.k = a.k.to(compute);
  a.v = a.v.to(compute);
  return a;
}

// The kernel of `script` for the device of `a`'s tensors (cuda for CUDA
// tensors and under SPARSETIR_EMULATE_CUDA=1, else this CPU's level).
KernelRequest Request(const char* script, const AttentionArgs& a, std::map<std::string, int64_t> sizes) {
  KernelRequest r{script, script, a.q.scalar_type(), a.csr.indptr.scalar_type(), std::move(sizes)};
  r.target = TargetFor(a.q, script);
  return r;
}

// Runs `body(head)` for every head: on the CPU, heads in parallel when there
// are at least as many as threads and enough work (the kernels' own launches
// then run inline), one after another otherwise, each head's rows in
// parallel when large enough. cuda kernels launch one head after another from
// the calling thread: torch's current stream is per thread, so a worker's
// launch would miss the caller's stream.
constexpr int64_t kParallelHeadsWork = 1 << 16;

template <typename Body>
void ForEachHead(const Target& target, int64_t heads, int64_t work_per_head, const Body& body) {
  if (target.is_cuda() || heads < at::get_num_threads() || heads * work_per_head < kParallelHeadsWork) {
    for (int64_t h = 0; h < heads; ++h) body(h);
    return;
  }
  at::parallel_for(0, heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h) body(h);
  });
}

// On cuda the forward runs every head in one pass per row (ForwardOnline);
// past its widths, and for the backward, the heads run together through the
// multi-head operators: scores by
// sddmm, edge_softmax, then spmm, each launch spreading the non-zeros of every
// head over the device. The row-per-thread kernels of sparse_attention.py,
// launched head after head, left most of a GPU idle (32 ms at L = 4096 with 4
// heads on an H100, against 0.74 ms for dense SDPA). The multi-head
// operators take (rows, heads, features); the results go back contiguous,
// the layout the fake implementations promise.
// Whether the call takes the cuda path: CUDA tensors, or CPU tensors under
// SPARSETIR_EMULATE_CUDA=1, where the operators composed there run their
// cuda recipes (edge_softmax's stands for all three).
bool OnCudaPath(const at::Tensor& q) { return TargetFor(q, "edge_softmax").is_cuda(); }

at::Tensor HeadsLast(const at::Tensor& t) { return t.permute({1, 0, 2}).contiguous(); }
at::Tensor HeadsFirst(const at::Tensor& t) { return t.permute({1, 0, 2}).contiguous(); }

struct HeadsLastAttention {
  at::Tensor qs, k, v;      // (L, heads, D) with q scaled, (S, heads, D), (S, heads, Dv)
  at::Tensor scores, probs;  // (nnz, heads)
};

// The scaled scores alone (probs left empty).
HeadsLastAttention Scores(const AttentionArgs& a) {
  HeadsLastAttention h{HeadsLast(a.q * a.scale), HeadsLast(a.k), HeadsLast(a.v), {}, {}};
  h.scores = Sddmm(a.csr.indptr, a.csr.indices, std::nullopt, h.qs, h.k, "dot");
  return h;
}

HeadsLastAttention Probabilities(const AttentionArgs& a) {
  HeadsLastAttention h = Scores(a);
  h.probs = EdgeSoftmax(a.csr.indptr, a.csr.indices, h.scores);
  return h;
}

// Each row's log-sum-exp of its scores (nnz, heads) as (heads, L): -inf for a
// row without columns (a max over nothing, plus the log of an empty sum).
at::Tensor RowLogSumExp(const CheckedCsr& csr, const at::Tensor& scores) {
  const at::Tensor offsets = csr.indptr.to(at::kLong);
  const at::Tensor lengths = offsets.slice(0, 1) - offsets.slice(0, 0, -1);
  const at::Tensor top = at::segment_reduce(scores, "max", std::nullopt, std::nullopt, offsets, 0, /*unsafe=*/true,
                                            -std::numeric_limits<double>::infinity());
  const at::Tensor shifted = (scores - top.repeat_interleave(lengths, 0, csr.nnz())).exp_();
  const at::Tensor sums = at::segment_reduce(shifted, "sum", std::nullopt, std::nullopt, offsets, 0, true, 0.0);
  return (top + sums.log()).t().contiguous();
}

// (out (heads, L, Dv), lse (heads, L), or undefined without `with_lse`).
std::tuple<at::Tensor, at::Tensor> ForwardByHeadsOps(const AttentionArgs& a, bool with_lse) {
  const HeadsLastAttention h = Probabilities(a);
  return {HeadsFirst(Spmm(a.csr.indptr, a.csr.indices, h.probs, h.v, "sum")),
          with_lse ? RowLogSumExp(a.csr, h.scores) : at::Tensor()};
}

// The widest head and value dimensions the one-pass kernel takes: a lane
// keeps value_dim / 32 sums in registers.
constexpr int64_t kOnlineMaxDim = 256;
// The most heads (batch x heads) it takes: they are gridDim.y.
constexpr int64_t kOnlineMaxHeads = 65535;

bool OnlineApplies(const AttentionArgs& a) { return SparseAttentionRunsOnline(a.q.size(2), a.v.size(2), a.heads()); }

// Every head in one launch: a warp per (row, head) with an online softmax,
// nothing but the output written. Groups of lanes each score a column
// (kernels/sparse_attention_online_columns.py), or, where
// CudaAttentionColumnLanes says 0, the warp scores one column after another
// (kernels/sparse_attention_online.py). `a` holds the inputs' dtype: 16-bit
// k and v are read as such, q is scaled in the compute dtype, and the output
// is rounded once. Returns the output (heads, L, Dv) and each row's
// log-sum-exp (heads, L) in the compute dtype, from which the backward
// recomputes the probabilities in one pass.
std::tuple<at::Tensor, at::Tensor> ForwardOnline(const AttentionArgs& a) {
  const int64_t L = a.q.size(1), D = a.q.size(2), Dv = a.v.size(2), nnz = a.csr.nnz();
  const AttentionForwardPlan forward =
      CudaAttentionForward(D, Dv, a.k.element_size(), a.csr.info->summary().unsorted_rows == 0);
  std::map<std::string, int64_t> sizes = forward.sizes;
  sizes.insert({{"head_dim", D}, {"value_dim", Dv}});
  auto kernel = GetOpKernel(Request(forward.script.c_str(), a, sizes));
  at::Tensor out = EmptyOutput({a.heads(), L, Dv}, a.v.options());
  at::Tensor lse = at::empty({a.heads(), L}, a.q.options().dtype(ComputeDtype(a.dtype)));
  KernelCall call(*kernel);
  call.Set("q", (a.q.to(ComputeDtype(a.dtype)) * a.scale).contiguous()).Set("k", a.k).Set("v", a.v).Set("out", out)
      .Set("lse", lse).Set("indptr", a.csr.indptr).Set("indices", a.csr.indices)
      .Set("m", L).Set("n", a.k.size(1)).Set("nnz", nnz).Set("heads", a.heads()).Set("head_dim", D)
      .Set("value_dim", Dv);
  for (const auto& [name, size] : forward.sizes) call.Set(name, size);
  call.Run(2 * a.heads() * nnz * (D + Dv));
  return {out, lse};
}

// dP = dO . V over the pattern; dS = P * (dP - rowdot(P, dP)) (edge_softmax's
// backward); dq = scale * dS k; dk = scale * dS^T q; dv = P^T dO.
std::tuple<at::Tensor, at::Tensor, at::Tensor> BackwardByHeadsOps(const AttentionArgs& a, const at::Tensor& go) {
  const at::Tensor &ip = a.csr.indptr, &ix = a.csr.indices;
  const HeadsLastAttention h = Probabilities(a);
  const at::Tensor gol = HeadsLast(go);
  const at::Tensor grad_scores = EdgeSoftmaxBackward(ip, ix, h.probs, Sddmm(ip, ix, std::nullopt, gol, h.v, "dot"));
  const CsrTranspose t = a.csr.info->Transpose(ip, ix, a.k.size(1));
  at::Tensor dq = Spmm(ip, ix, grad_scores, h.k, "sum").mul_(a.scale);
  // h.qs holds scale * q: this is scale * dS^T q.
  at::Tensor dk = Spmm(t.indptr, t.indices, GatherRows(grad_scores, t.perm), h.qs, "sum");
  at::Tensor dv = Spmm(t.indptr, t.indices, GatherRows(h.probs, t.perm), gol, "sum");
  return {HeadsFirst(dq), HeadsFirst(dk), HeadsFirst(dv)};
}

// The backward of every head in one launch (a warp per (row, head): the
// softmax from the forward's log-sum-exp `lse` (heads, L) where it is
// defined, else recomputed online in a first pass; then P, dS and dq), its
// columns spread over groups of lanes as the forward's
// (kernels/sparse_attention_backward_online_columns.py) or scored one after
// another where CudaAttentionColumnLanes says 0
// (kernels/sparse_attention_backward_online.py); then dk = scale dS^T q and
// dv = P^T dO over the transposed pattern with the multi-head spmm. `a`, `o`
// and `go` are in the compute dtype.
std::tuple<at::Tensor, at::Tensor, at::Tensor> BackwardOnline(const AttentionArgs& a, const at::Tensor& o,
                                                              const at::Tensor& go, const at::Tensor& lse) {
  const int64_t L = a.q.size(1), S = a.k.size(1), D = a.q.size(2), Dv = a.v.size(2), nnz = a.csr.nnz();
  // A lane keeps runs of q, k, dq, dO and v (the compute dtype): the wider
  // side sets the group.
  const int64_t lanes = CudaAttentionColumnLanes(std::max(D, Dv), a.q.element_size());
  std::map<std::string, int64_t> sizes = {{"head_dim", D}, {"value_dim", Dv}};
  if (lanes > 0) sizes["column_lanes"] = lanes;
  auto kernel = GetOpKernel(Request(lanes > 0 ? "sparse_attention_backward_online_columns"
                                              : "sparse_attention_backward_online", a, sizes));
  const at::Tensor qs = (a.q * a.scale).contiguous();
  // P and dS are written in the transposed pattern's order, where dk and dv
  // read them.
  const CsrTranspose t = a.csr.info->Transpose(a.csr.indptr, a.csr.indices, S);
  const at::Tensor positions = a.csr.info->TransposePositions(a.csr.indptr, a.csr.indices, S);
  at::Tensor dq = EmptyOutput({a.heads(), L, D}, a.q.options());
  at::Tensor probs = EmptyOutput({nnz, a.heads()}, a.q.options());
  at::Tensor grad_scores = EmptyOutput({nnz, a.heads()}, a.q.options());
  // Without the forward's log-sum-exp the kernel recomputes it (a first
  // pass over the row); its buffer is then bound but not read.
  const at::Tensor row_lse = lse.defined() ? lse : at::empty({a.heads(), L}, a.q.options());
  KernelCall call(*kernel);
  call.Set("q", qs).Set("k", a.k).Set("v", a.v).Set("out", o).Set("grad_out", go).Set("lse", row_lse)
      .Set("grad_q", dq).Set("probs", probs).Set("grad_scores", grad_scores)
      .Set("indptr", a.csr.indptr).Set("indices", a.csr.indices).Set("positions", positions)
      .Set("m", L).Set("n", S).Set("nnz", nnz).Set("heads", a.heads()).Set("head_dim", D).Set("value_dim", Dv)
      .Set("has_lse", lse.defined() ? 1 : 0);
  if (lanes > 0) call.Set("column_lanes", lanes);
  call.Run(4 * a.heads() * nnz * (D + Dv));
  dq.mul_(a.scale);
  // qs holds scale * q: this is scale * dS^T q.
  at::Tensor dk = Spmm(t.indptr, t.indices, grad_scores, HeadsLast(qs), "sum");
  at::Tensor dv = Spmm(t.indptr, t.indices, probs, HeadsLast(go), "sum");
  return {dq, HeadsFirst(dk), HeadsFirst(dv)};
}

}  // namespace

bool SparseAttentionRunsOnline(int64_t head_dim, int64_t value_dim, int64_t heads) {
  return head_dim <= kOnlineMaxDim && value_dim <= kOnlineMaxDim && heads <= kOnlineMaxHeads;
}

namespace {

// The output and, `with_lse`, each row's log-sum-exp (else undefined):
// sparse_attention itself (inference, no gradient) skips what only the
// log-sum-exp needs.
std::tuple<at::Tensor, at::Tensor> AttentionForward(const at::Tensor& indptr, const at::Tensor& indices,
                                                    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                    std::optional<double> scale, bool with_lse) {
  // Errors name the operator the user called: _sparse_attention_forward is
  // sparse_attention's forward (its autograd kernel calls it), as
  // gat_attention's helper is.
  const std::string op = "sparsetir.sparse_attention";
  AttentionArgs a = CheckAttention(op, indptr, indices, q, k, v, scale, /*convert=*/false);
  const int64_t L = a.q.size(1), D = a.q.size(2), Dv = a.v.size(2), nnz = a.csr.nnz();
  std::vector<int64_t> shape = q.sizes().vec();
  shape.back() = Dv;
  const auto lse_shape = q.sizes().slice(0, q.dim() - 1);
  const bool any = a.heads() * L * Dv > 0 && nnz > 0;
  if (any && OnCudaPath(a.q) && OnlineApplies(a)) {
    auto [out, lse] = ForwardOnline(a);
    return {out.reshape(shape), with_lse ? lse.reshape(lse_shape) : at::Tensor()};
  }
  a = InComputeDtype(std::move(a));
  // The kernel writes every row (an empty one gets its zero init), so only a
  // pattern without non-zeros needs zeros from here.
  at::Tensor out = nnz > 0 ? EmptyOutput({a.heads(), L, Dv}, a.q.options()) : at::zeros({a.heads(), L, Dv}, a.q.options());
  at::Tensor lse =
      with_lse ? at::full({a.heads(), L}, -std::numeric_limits<double>::infinity(), a.q.options()) : at::Tensor();
  if (any && OnCudaPath(a.q)) {
    std::tie(out, lse) = ForwardByHeadsOps(a, with_lse);
  } else if (with_lse && Dv == 0 && nnz > 0 && a.heads() * L > 0) {
    // Nothing to sum, but the scores still have their log-sum-exp.
    lse = RowLogSumExp(a.csr, Scores(a).scores);
  } else if (any) {
    at::Tensor qs = (a.q * a.scale).contiguous();
    // A row without columns keeps lse = -inf (its max and sum are not written).
    const at::Tensor empty_rows =
        with_lse ? (a.csr.indptr.slice(0, 1) == a.csr.indptr.slice(0, 0, -1)) : at::Tensor();
    auto kernel = GetOpKernel(Request("sparse_attention", a, {{"head_dim", D}, {"value_dim", Dv}}));
    ForEachHead(kernel->kernel().target(), a.heads(), 2 * nnz * (D + Dv), [&](int64_t h) {
      at::Tensor probs = EmptyOutput({nnz}, a.q.options()), row_max = at::empty({L}, a.q.options()),
                 row_sum = at::empty({L}, a.q.options());
      at::Tensor out_h = out[h];
      KernelCall(*kernel)
          .Set("q", qs[h]).Set("k", a.k[h]).Set("v", a.v[h]).Set("out", out_h)
          .Set("probs", probs).Set("row_max", row_max).Set("row_sum", row_sum)
          .Set("indptr", a.csr.indptr).Set("indices", a.csr.indices)
          .Set("m", L).Set("n", a.k.size(1)).Set("nnz", nnz).Set("head_dim", D).Set("value_dim", Dv)
          .Run(2 * nnz * (D + Dv));
      if (with_lse) {
        lse[h].copy_(row_max.add_(row_sum.log_()).masked_fill_(empty_rows, -std::numeric_limits<double>::infinity()));
      }
    });
  }
  return {out.reshape(shape).to(a.dtype), with_lse ? lse.reshape(lse_shape) : at::Tensor()};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> SparseAttentionForward(const at::Tensor& indptr, const at::Tensor& indices,
                                                          const at::Tensor& q, const at::Tensor& k,
                                                          const at::Tensor& v, std::optional<double> scale) {
  return AttentionForward(indptr, indices, q, k, v, scale, /*with_lse=*/true);
}

at::Tensor SparseAttention(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q,
                           const at::Tensor& k, const at::Tensor& v, std::optional<double> scale) {
  return std::get<0>(AttentionForward(indptr, indices, q, k, v, scale, /*with_lse=*/false));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> SparseAttentionBackward(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const at::Tensor& out, const at::Tensor& grad_out, std::optional<double> scale,
    const std::optional<at::Tensor>& lse) {
  const std::string op = "sparsetir._sparse_attention_backward";
  AttentionArgs a = CheckAttention(op, indptr, indices, q, k, v, scale);
  const int64_t L = a.q.size(1), S = a.k.size(1), D = a.q.size(2), Dv = a.v.size(2), nnz = a.csr.nnz();
  TORCH_CHECK_VALUE(out.sizes() == grad_out.sizes(), op, ": arguments 'out' and 'grad_out' must have one shape");
  const auto compute = a.q.scalar_type();
  TORCH_CHECK_VALUE(out.numel() == a.heads() * L * Dv, op, ": argument 'out' must have shape (..., L, Dv) = ",
                    ShapeString(q.sizes().slice(0, q.dim() - 1)), " + (", Dv, ",), got ", ShapeString(out.sizes()));
  at::Tensor o = out.reshape({a.heads(), L, Dv}).to(compute).contiguous();
  at::Tensor go = grad_out.reshape({a.heads(), L, Dv}).to(compute).contiguous();
  at::Tensor row_lse;  // (heads, L) in the compute dtype, or undefined
  if (lse.has_value()) {
    at::Tensor l = CheckFloat(op, "lse", *lse, -1);
    CheckSameDevice(op, "lse", l, indptr, "indptr");
    TORCH_CHECK_VALUE(l.sizes() == q.sizes().slice(0, q.dim() - 1), op, ": argument 'lse' must have shape (..., L) = ",
                      ShapeString(q.sizes().slice(0, q.dim() - 1)), ", got ", ShapeString(l.sizes()));
    row_lse = l.reshape({a.heads(), L}).to(compute).contiguous();
  }
  at::Tensor dq, dk, dv;
  const bool cuda = nnz > 0 && L > 0 && OnCudaPath(a.q);
  if (cuda) {
    std::tie(dq, dk, dv) = OnlineApplies(a) ? BackwardOnline(a, o, go, row_lse) : BackwardByHeadsOps(a, go);
  } else {
    // Zeros where nothing is allowed; otherwise the kernels below write each head's slices.
    dq = at::zeros_like(a.q);
    dk = at::zeros_like(a.k);
    dv = at::zeros_like(a.v);
  }
  if (!cuda && nnz > 0 && L > 0) {
    CsrTranspose t = a.csr.info->Transpose(a.csr.indptr, a.csr.indices, S);
    at::Tensor qs = (a.q * a.scale).contiguous();
    auto probs_kernel = GetOpKernel(Request("attention_probs", a, {{"head_dim", D}}));
    auto grad_kernel = GetOpKernel(Request("attention_grad_scores", a, {{"value_dim", Dv}}));
    ForEachHead(probs_kernel->kernel().target(), a.heads(), 4 * nnz * (D + Dv), [&](int64_t h) {
      auto options = a.q.options();
      at::Tensor probs = at::empty({nnz}, options), row_max = at::empty({L}, options),
                 row_sum = at::empty({L}, options);
      KernelCall(*probs_kernel)
          .Set("q", qs[h]).Set("k", a.k[h]).Set("probs", probs).Set("row_max", row_max).Set("row_sum", row_sum)
          .Set("indptr", a.csr.indptr).Set("indices", a.csr.indices)
          .Set("m", L).Set("n", S).Set("nnz", nnz).Set("head_dim", D)
          .Run(2 * nnz * D);
      // dP = dO . V over the pattern; dS = P * (dP - rowdot(dO, O)).
      at::Tensor grad_probs = at::empty({nnz}, options);
      RunSddmmDot(a.csr.indptr, a.csr.indices, go[h], a.v[h], grad_probs);
      at::Tensor grad_scores = at::empty({nnz}, options), row_dot = at::empty({L}, options);
      KernelCall(*grad_kernel)
          .Set("probs", probs).Set("grad_probs", grad_probs).Set("out", o[h]).Set("grad_out", go[h])
          .Set("grad_scores", grad_scores).Set("row_dot", row_dot)
          .Set("indptr", a.csr.indptr).Set("indices", a.csr.indices)
          .Set("m", L).Set("n", S).Set("nnz", nnz).Set("value_dim", Dv)
          .Run(nnz + L * Dv);
      // dq = scale * dS k; dk = scale * dS^T q; dv = P^T dO.
      RunCsrmm("csrmm", a.csr.indptr, a.csr.indices, grad_scores, a.k[h], dq[h]);
      RunCsrmm("csrmm", t.indptr, t.indices, grad_scores.index_select(0, t.perm), a.q[h], dk[h]);
      RunCsrmm("csrmm", t.indptr, t.indices, probs.index_select(0, t.perm), go[h], dv[h]);
    });
    dq.mul_(a.scale);
    dk.mul_(a.scale);
  }
  return {dq.reshape(q.sizes()).to(a.dtype), dk.reshape(k.sizes()).to(a.dtype), dv.reshape(v.sizes()).to(a.dtype)};
}

}  // namespace sparsetir::ops
