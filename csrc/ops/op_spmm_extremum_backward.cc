// The backward pass of spmm with reduce="max" / "min" in O(nnz + (m + n) K)
// memory: every output element's gradient goes to the non-zeros that attain
// it, split evenly among ties (as torch.amax does), without materializing the
// nnz x K products, hit masks and shares a formula of torch ops needs (several
// temporaries of nnz x K elements: 172 MiB each for 400k non-zeros at K = 128).
//
//   pass 1, rows in parallel:    share[i, k] = grad[i, k] / #{e in row i attaining out[i, k]}
//                                grad_values[e] = sum_k [e attains out[i, k]] share[i, k] dense[j, k]
//   pass 2, columns in parallel: grad_dense[j, k] = sum over e = (i, j) attaining out[i, k] of
//                                share[i, k] values[e]   (through the cached transpose: no atomics)
//
// "Attains" compares the product as the forward computed it (in the value
// dtype; 16-bit products rounded from float32) with the stored result.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <vector>

#include "op_checks.h"
#include "ops.h"

namespace sparsetir::ops {
namespace {

constexpr int64_t kWorkPerTask = 1 << 15;  // multiply-compares per parallel task, at least

template <typename scalar_t, typename index_t>
void SharesAndValueGrads(const index_t* indptr, const index_t* indices, const scalar_t* values,
                         const scalar_t* dense, const scalar_t* out, const scalar_t* grad, int64_t m, int64_t K,
                         at::opmath_type<scalar_t>* share, scalar_t* grad_values) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t nnz = m > 0 ? static_cast<int64_t>(indptr[m]) : 0;
  const int64_t grain = std::max<int64_t>(1, kWorkPerTask * m / std::max<int64_t>(nnz * K, 1));
  at::parallel_for(0, m, grain, [&](int64_t begin, int64_t end) {
    // The inner loops over K are the whole cost. The extension builds at -O2,
    // where GCC vectorizes no loop of run-time trip count, so each carries
    // `omp simd` (the extension builds with -fopenmp): the k iterations are
    // independent, and the dot product's sum may be reassociated.
    std::vector<acc_t> count(K);
    for (int64_t i = begin; i < end; ++i) {
      std::fill(count.begin(), count.end(), acc_t(0));
      const scalar_t* out_row = out + i * K;
      for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
        const acc_t v = values[e];
        const scalar_t* row = dense + static_cast<int64_t>(indices[e]) * K;
        acc_t* counts = count.data();
#pragma omp simd
        for (int64_t k = 0; k < K; ++k) {
          counts[k] += static_cast<scalar_t>(v * acc_t(row[k])) == out_row[k] ? acc_t(1) : acc_t(0);
        }
      }
      acc_t* share_row = share + i * K;
#pragma omp simd
      for (int64_t k = 0; k < K; ++k) {
        share_row[k] = count[k] > acc_t(0) ? acc_t(grad[i * K + k]) / count[k] : acc_t(0);
      }
      for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
        const acc_t v = values[e];
        const scalar_t* row = dense + static_cast<int64_t>(indices[e]) * K;
        acc_t sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t k = 0; k < K; ++k) {
          sum += static_cast<scalar_t>(v * acc_t(row[k])) == out_row[k] ? share_row[k] * acc_t(row[k]) : acc_t(0);
        }
        grad_values[e] = static_cast<scalar_t>(sum);
      }
    }
  });
}

template <typename scalar_t, typename index_t>
void DenseGrads(const index_t* t_indptr, const index_t* t_rows, const index_t* t_perm, const scalar_t* values,
                const scalar_t* dense, const scalar_t* out, const at::opmath_type<scalar_t>* share, int64_t n,
                int64_t K, scalar_t* grad_dense) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t nnz = n > 0 ? static_cast<int64_t>(t_indptr[n]) : 0;
  const int64_t grain = std::max<int64_t>(1, kWorkPerTask * n / std::max<int64_t>(nnz * K, 1));
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> sum(K);
    for (int64_t j = begin; j < end; ++j) {
      std::fill(sum.begin(), sum.end(), acc_t(0));
      const scalar_t* row = dense + j * K;
      for (int64_t q = t_indptr[j]; q < t_indptr[j + 1]; ++q) {
        const int64_t i = t_rows[q];
        const acc_t v = values[t_perm[q]];
        const scalar_t* out_row = out + i * K;
        const acc_t* share_row = share + i * K;
        acc_t* sums = sum.data();
#pragma omp simd
        for (int64_t k = 0; k < K; ++k) {
          sums[k] += static_cast<scalar_t>(v * acc_t(row[k])) == out_row[k] ? share_row[k] * v : acc_t(0);
        }
      }
      for (int64_t k = 0; k < K; ++k) grad_dense[j * K + k] = static_cast<scalar_t>(sum[k]);
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> SpmmExtremumBackward(const at::Tensor& indptr_in, const at::Tensor& indices_in,
                                                        const at::Tensor& values_in, const at::Tensor& dense_in,
                                                        const at::Tensor& out_in, const at::Tensor& grad_in,
                                                        const at::Tensor& t_indptr_in, const at::Tensor& t_rows_in,
                                                        const at::Tensor& t_perm_in) {
  const std::string op = "sparsetir._spmm_extremum_backward";
  const at::Tensor dense = CheckFloat(op, "dense", dense_in, 2);
  const int64_t n = dense.size(0), K = dense.size(1);
  const CheckedCsr csr = CheckCsr(op, indptr_in, indices_in, n, "dense.size(0)");
  const int64_t m = csr.rows();
  const at::Tensor values = CheckFloat(op, "values", values_in, 1);
  const at::Tensor out = CheckFloat(op, "out", out_in, 2);
  const at::Tensor grad = CheckFloat(op, "grad", grad_in, 2);
  for (const auto& [name, t] : {std::pair<const char*, at::Tensor>{"dense", dense}, {"out", out}, {"grad", grad}}) {
    CheckSameDtype(op, name, t, values.scalar_type(), "values");
  }
  TORCH_CHECK_VALUE(values.numel() == csr.nnz(), op, ": argument 'values' must have one element per non-zero (",
                    csr.nnz(), "), got ", values.numel());
  TORCH_CHECK_VALUE(out.size(0) == m && out.size(1) == K && grad.sizes() == out.sizes(), op,
                    ": arguments 'out' and 'grad' must have shape (", m, ", ", K, "), got ", ShapeString(out.sizes()),
                    " and ", ShapeString(grad.sizes()));
  const at::Tensor t_indptr = CheckIndexTensor(op, "t_indptr", t_indptr_in);
  const at::Tensor t_rows = CheckIndexTensor(op, "t_rows", t_rows_in);
  const at::Tensor t_perm = CheckIndexTensor(op, "t_perm", t_perm_in);
  TORCH_CHECK_VALUE(t_indptr.scalar_type() == csr.indptr.scalar_type() && t_rows.scalar_type() == t_indptr.scalar_type() &&
                        t_perm.scalar_type() == t_indptr.scalar_type(),
                    op, ": the transpose's index tensors must have the dtype of 'indptr'");
  TORCH_CHECK_VALUE(t_indptr.numel() == n + 1 && t_rows.numel() == csr.nnz() && t_perm.numel() == csr.nnz(), op,
                    ": the transpose (t_indptr, t_rows, t_perm) does not match the structure (", n + 1, ", ",
                    csr.nnz(), ", ", csr.nnz(), " elements expected)");

  at::Tensor grad_values = at::empty({csr.nnz()}, values.options());
  at::Tensor grad_dense = at::empty({n, K}, dense.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, values.scalar_type(), "spmm_extremum_backward", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    at::Tensor share = at::empty({m, K}, values.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    AT_DISPATCH_INDEX_TYPES(csr.indptr.scalar_type(), "spmm_extremum_backward_index", [&] {
      SharesAndValueGrads<scalar_t, index_t>(csr.indptr.data_ptr<index_t>(), csr.indices.data_ptr<index_t>(),
                                             values.data_ptr<scalar_t>(), dense.data_ptr<scalar_t>(),
                                             out.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(), m, K,
                                             share.data_ptr<acc_t>(), grad_values.data_ptr<scalar_t>());
      DenseGrads<scalar_t, index_t>(t_indptr.data_ptr<index_t>(), t_rows.data_ptr<index_t>(),
                                    t_perm.data_ptr<index_t>(), values.data_ptr<scalar_t>(),
                                    dense.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), share.data_ptr<acc_t>(), n,
                                    K, grad_dense.data_ptr<scalar_t>());
    });
  });
  return {grad_values, grad_dense};
}

}  // namespace sparsetir::ops
