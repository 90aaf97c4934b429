// The backward pass of spmm with reduce="max" / "min": every output element's
// gradient goes to the first non-zero of its row (in storage order) that
// attains it, as torch.sparse.mm(reduce="amax") and torch_scatter's max do
// (a subgradient where products tie). Memory is O(nnz + (m + n) K), with no
// nnz x K temporary (172 MiB each for 400k non-zeros at K = 128). The
// columns are taken 64 at a time; per block of columns:
//
//   pass 1, rows in parallel:    for each column k, the first e of row i whose product attains out[i, k]
//                                (the non-zeros walked backwards, the last hit kept) gets bit k of
//                                wins[p], a 64-bit word per non-zero stored at its transpose position p;
//                                grad_values[e] += sum over its bits k of grad[i, k] dense[j, k]
//                                (skipped when the values need no gradient: a graph's all-ones adjacency)
//   pass 2, rows of the transpose in parallel (the graph's cached transpose, non-zero p = (j, i) being
//                                non-zero e = perm[p] = (i, j)):
//                                grad_dense[j, k] += grad[i, k] values[e] for the bits k of wins[p]
//                                a gather into one output row at a time: each task writes its own rows,
//                                in order, where scattering along the winners wrote at random
//                                (SAGE-max on email-Enron at K = 64: 2.35M random read-modify-writes).
//
// Pass 2 reads the words in order and only the m K gradient elements that
// won (their rows fetched ahead), where a per-(row, column) index of the
// winner made it read the whole index and gradient rows of every non-zero's
// source (2 x 256 bytes per non-zero at K = 64). Pass 1 stores the words at
// their transpose positions: a store out of order costs no wait, a load in
// pass 2 would (it decides which gradient elements to read).
//
// "Attains" compares the product as the forward computed it (in the value
// dtype; 16-bit products rounded from float32) with the stored result.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "graph_cache.h"
#include "op_checks.h"
#include "ops.h"

namespace sparsetir::ops {
namespace {

constexpr int64_t kWorkPerTask = 1 << 15;  // multiply-compares per parallel task, at least
constexpr int64_t kPrefetchDistance = 8;   // non-zeros ahead whose dense row is fetched early

// The dense rows are gathered in the order of `indices`, which the hardware
// prefetcher cannot predict: ask for the row kPrefetchDistance non-zeros ahead.
template <typename scalar_t>
inline void PrefetchRow(const scalar_t* row, int64_t K) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t b = 0; b < K * static_cast<int64_t>(sizeof(scalar_t)); b += 64) __builtin_prefetch(p + b);
}

// Runs body(row_begin, row_end) over the `rows` rows of a CSR structure in
// parallel tasks of equal non-zeros (times K), not of equal rows:
// at::parallel_for hands each thread a contiguous range, and on a power-law
// graph a few rows hold most of the work.
template <typename index_t, typename Body>
void ForRowsBalanced(const index_t* indptr, int64_t rows, int64_t K, const Body& body) {
  const int64_t nnz = rows > 0 ? static_cast<int64_t>(indptr[rows]) : 0;
  const int64_t tasks = std::clamp<int64_t>(nnz * K / kWorkPerTask, 1, 8 * at::get_num_threads());
  auto first_row = [&](int64_t task) -> int64_t {
    if (task >= tasks) return rows;
    return std::lower_bound(indptr, indptr + rows, static_cast<index_t>(nnz * task / tasks)) - indptr;
  };
  at::parallel_for(0, tasks, 1, [&](int64_t task_begin, int64_t task_end) {
    body(first_row(task_begin), first_row(task_end));
  });
}

constexpr int64_t kBlock = 64;  // columns per pass: one bit each in a non-zero's word

// The columns [k0, k0 + kb) of one pass, kb <= kBlock.
struct ColumnBlock {
  int64_t k0;
  int64_t kb;
};

// hit_t holds a non-zero's position while searching. The search loop only
// vectorizes when it is as wide as the values (int32 beside float32), so
// float32 arithmetic uses int32 positions whenever nnz fits.
template <typename scalar_t, typename index_t, typename hit_t>
void WinnersAndValueGrads(const index_t* indptr, const index_t* indices, const scalar_t* values,
                          const scalar_t* dense, const scalar_t* out, const scalar_t* grad, int64_t m, int64_t K,
                          ColumnBlock block, const index_t* position, uint64_t* wins,
                          at::opmath_type<scalar_t>* grad_values /* null: not wanted */) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t k0 = block.k0, kb = block.kb;
  ForRowsBalanced(indptr, m, kb, [&](int64_t row_begin, int64_t row_end) {
    hit_t firsts[kBlock];
    std::vector<uint64_t> row_wins;
    for (int64_t i = row_begin; i < row_end; ++i) {
      const int64_t start = indptr[i], stop = indptr[i + 1];
      const scalar_t* out_row = out + i * K + k0;
      std::fill(firsts, firsts + kb, hit_t(-1));
      for (int64_t e = stop - 1; e >= start; --e) {
        if (e - kPrefetchDistance >= start) {
          PrefetchRow(dense + static_cast<int64_t>(indices[e - kPrefetchDistance]) * K + k0, kb);
        }
        const acc_t v = values[e];
        const scalar_t* row = dense + static_cast<int64_t>(indices[e]) * K + k0;
        const hit_t here = static_cast<hit_t>(e);
        // `omp simd`: the extension builds at -O2 (with -fopenmp), where GCC
        // vectorizes no loop of run-time trip count otherwise; and `hit` is an
        // integer, not a bool, a form GCC if-converts.
#pragma omp simd
        for (int64_t k = 0; k < kb; ++k) {
          const hit_t hit = static_cast<scalar_t>(v * acc_t(row[k])) == out_row[k];
          firsts[k] = hit ? here : firsts[k];
        }
      }
      row_wins.assign(stop - start, 0);
      for (int64_t k = 0; k < kb; ++k) {
        if (firsts[k] >= 0) row_wins[firsts[k] - start] |= uint64_t{1} << k;  // an empty row has no winner
      }
      for (int64_t e = start; e < stop; ++e) wins[position[e]] = row_wins[e - start];
      if (grad_values == nullptr) continue;
      const scalar_t* grad_row = grad + i * K + k0;
      for (int64_t k = 0; k < kb; ++k) {
        const int64_t e = firsts[k];
        if (e >= 0) {
          grad_values[e] += acc_t(grad_row[k]) * acc_t(dense[static_cast<int64_t>(indices[e]) * K + k0 + k]);
        }
      }
    }
  });
}

template <typename scalar_t, typename index_t>
void DenseGrads(const index_t* t_indptr, const index_t* t_indices, const index_t* perm, const scalar_t* values,
                const scalar_t* grad, const uint64_t* wins, int64_t n, int64_t K, ColumnBlock block,
                at::opmath_type<scalar_t>* grad_dense) {
  using acc_t = at::opmath_type<scalar_t>;
  // The work is one word per non-zero and the won elements: count a
  // non-zero as a few columns for the split into tasks.
  ForRowsBalanced(t_indptr, n, 4, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t j = row_begin; j < row_end; ++j) {
      acc_t* out_row = grad_dense + j * K + block.k0;
      for (int64_t p = t_indptr[j], stop = t_indptr[j + 1]; p < stop; ++p) {
        if (p + kPrefetchDistance < stop && wins[p + kPrefetchDistance] != 0) {
          PrefetchRow(grad + static_cast<int64_t>(t_indices[p + kPrefetchDistance]) * K + block.k0, block.kb);
        }
        uint64_t won = wins[p];
        if (won == 0) continue;
        const acc_t v = values[perm[p]];
        const scalar_t* grad_row = grad + static_cast<int64_t>(t_indices[p]) * K + block.k0;
        for (; won != 0; won &= won - 1) {
          const int k = __builtin_ctzll(won);
          out_row[k] += acc_t(grad_row[k]) * v;
        }
      }
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> SpmmExtremumBackward(const at::Tensor& indptr_in, const at::Tensor& indices_in,
                                                        const at::Tensor& values_in, const at::Tensor& dense_in,
                                                        const at::Tensor& out_in, const at::Tensor& grad_in,
                                                        bool values_grad) {
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

  const CsrTranspose t = csr.info->Transpose(csr.indptr, csr.indices, n);
  at::Tensor grad_values, grad_dense;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, values.scalar_type(), "spmm_extremum_backward", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const auto acc_options = values.options().dtype(c10::CppTypeToScalarType<acc_t>::value);
    // Gradients accumulate over the column blocks in acc_t (float32 for
    // 16-bit values) and round once. Without values_grad the first output is
    // zeros (the caller asked for the dense operand's gradient only).
    at::Tensor values_acc = at::zeros({csr.nnz()}, acc_options);
    at::Tensor dense_acc = at::zeros({n, K}, acc_options);
    at::Tensor wins = at::empty({csr.nnz()}, values.options().dtype(at::kLong));
    const at::Tensor position = csr.info->TransposePositions(csr.indptr, csr.indices, n);
    AT_DISPATCH_INDEX_TYPES(csr.indptr.scalar_type(), "spmm_extremum_backward_index", [&] {
      for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
        const ColumnBlock block{k0, std::min(kBlock, K - k0)};
        auto pass1 = [&](auto hit_zero) {
          WinnersAndValueGrads<scalar_t, index_t, decltype(hit_zero)>(
              csr.indptr.data_ptr<index_t>(), csr.indices.data_ptr<index_t>(), values.data_ptr<scalar_t>(),
              dense.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(), m, K, block,
              position.data_ptr<index_t>(), reinterpret_cast<uint64_t*>(wins.data_ptr<int64_t>()),
              values_grad ? values_acc.data_ptr<acc_t>() : nullptr);
        };
        if (sizeof(acc_t) == 4 && csr.nnz() <= std::numeric_limits<int32_t>::max()) {
          pass1(int32_t{0});
        } else {
          pass1(int64_t{0});
        }
        DenseGrads<scalar_t, index_t>(t.indptr.data_ptr<index_t>(), t.indices.data_ptr<index_t>(),
                                      t.perm.data_ptr<index_t>(), values.data_ptr<scalar_t>(),
                                      grad.data_ptr<scalar_t>(),
                                      reinterpret_cast<const uint64_t*>(wins.data_ptr<int64_t>()), n, K, block,
                                      dense_acc.data_ptr<acc_t>());
      }
    });
    grad_values = values_acc.scalar_type() == values.scalar_type() ? values_acc : values_acc.to(values.scalar_type());
    grad_dense = dense_acc.scalar_type() == dense.scalar_type() ? dense_acc : dense_acc.to(dense.scalar_type());
  });
  return {grad_values, grad_dense};
}

}  // namespace sparsetir::ops
