// The backward pass of spmm with reduce="max" / "min": every output element's
// gradient goes to the first non-zero of its row (in storage order) that
// attains it, as torch.sparse.mm(reduce="amax") and torch_scatter's max do
// (a subgradient where products tie). Memory is O(nnz + (m + n) K), with no
// nnz x K temporary (172 MiB each for 400k non-zeros at K = 128). The
// columns are taken 64 at a time; per block of columns:
//
//   pass 1, rows in parallel:    walking row i's non-zeros in storage order, the first e whose product
//                                attains out[i, k] gets bit k of wins[p], a 64-bit word per non-zero
//                                stored at its transpose position p; once every column has its winner,
//                                the rest of the row reads no product;
//                                grad_values[e] += sum over its bits k of grad[i, k] dense[j, k]
//                                (skipped when the values need no gradient: a graph's all-ones adjacency)
//   pass 2, rows of the transpose in parallel (the graph's cached transpose, non-zero p = (j, i) being
//                                non-zero e = perm[p] = (i, j)):
//                                grad_dense[j, k] += grad[i, k] values[e] for the bits k of wins[p]
//                                a gather into one output row at a time, held in registers: each task
//                                writes its own rows, in order, where scattering along the winners wrote
//                                at random (SAGE-max on email-Enron at K = 64: 2.35M random
//                                read-modify-writes).
//
// Pass 2 reads the words in order and only the gradient rows of winning
// non-zeros (fetched ahead), where a per-(row, column) index of the winner
// made it read the whole index and gradient rows of every non-zero's source
// (2 x 256 bytes per non-zero at K = 64). Pass 1 stores the words at their
// transpose positions: a store out of order costs no wait, a load in pass 2
// would (it decides which gradient rows to read).
//
// Both passes are written once over lanes (extremum_rows.h): every dtype
// runs them with the vectors of the level the kernels are built for (SSE2, AVX2,
// AVX-512), compiled into this extension once per level and chosen at the
// call, since the extension itself is built for the x86-64 baseline.
//
// "Attains" compares the product as the forward computed it (in the value
// dtype; 16-bit products rounded from float32) with the stored result.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "extremum_rows.h"
#include "extremum_backward_args.h"
#include "graph_cache.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"
#include "target.h"

namespace sparsetir::ops {
namespace {

using extremum::kBlock;

constexpr int64_t kWorkPerTask = 1 << 15;  // multiply-compares per parallel task, at least

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

// The lanes of extremum_rows.h for every dtype: one column at a time, the
// product rounded to the value dtype as the forward rounded it.
template <typename scalar_t_>
struct ScalarLanes {
  using scalar_t = scalar_t_;
  using acc_t = at::opmath_type<scalar_t>;
  using Vec = acc_t;
  static constexpr int kLanes = 1;

  static acc_t Widen(scalar_t x) { return acc_t(x); }
  static Vec Zero() { return acc_t(0); }
  static Vec Load(const scalar_t* p, int64_t) { return acc_t(*p); }
  static Vec Broadcast(scalar_t v) { return acc_t(v); }
  static Vec Product(Vec v, Vec x) { return acc_t(static_cast<scalar_t>(v * x)); }
  static Vec Multiply(Vec x, Vec v) { return x * v; }
  static uint64_t Equal(Vec a, Vec b) { return a == b; }
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) { return (bits & 1) != 0 ? acc + x : acc; }
  static void Store(acc_t* p, Vec v, int64_t) { *p = v; }
};

// The format of a dtype in extremum_rows.h, and an operator's arguments
// seen in it (16-bit values as their bit patterns).
template <typename scalar_t>
struct FormatOf {
  using type = scalar_t;
};
template <>
struct FormatOf<at::BFloat16> {
  using type = extremum::Bf16;
};
template <>
struct FormatOf<at::Half> {
  using type = extremum::Half;
};

template <typename F, typename scalar_t>
const typename extremum::Storage<F>::scalar_t* Bits(const scalar_t* p) {
  return reinterpret_cast<const typename extremum::Storage<F>::scalar_t*>(p);
}

template <typename F, typename scalar_t, typename acc_t, typename index_t>
extremum::WinnerArgsOf<F, index_t> AsFormat(const extremum::WinnerArgs<scalar_t, acc_t, index_t>& a) {
  return {a.indptr, a.indices, Bits<F>(a.values), Bits<F>(a.dense), Bits<F>(a.out), Bits<F>(a.grad), a.K, a.k0,
          a.kb, a.position, a.wins, a.grad_values};
}

template <typename F, typename scalar_t, typename acc_t, typename index_t>
extremum::DenseGradArgsOf<F, index_t> AsFormat(const extremum::DenseGradArgs<scalar_t, acc_t, index_t>& a) {
  return {a.t_indptr, a.t_indices, a.perm, Bits<F>(a.values), Bits<F>(a.grad), a.wins, a.K, a.k0, a.kb,
          a.grad_dense};
}

template <typename F>
constexpr bool kNarrow = std::is_same_v<F, extremum::Bf16> || std::is_same_v<F, extremum::Half>;

// Which lanes run a block: the vectors of the level the kernels are built
// for (this CPU's, or $SPARSETIR_CPU_ISA's, so that the tests reach every
// level) where the level has them for the dtype (16-bit values: AVX2 and
// AVX-512), the scalar loops elsewhere and on other CPUs.
enum class Lanes { kScalar, kSse2, kAvx2, kAvx512 };

template <typename scalar_t>
Lanes LanesFor(int64_t kb) {
#if defined(__x86_64__)
  using F = typename FormatOf<scalar_t>::type;
  const std::string& level = Target::HostCpu().arch;
  if (level == "avx512" && extremum::CanRunAvx512<F>(kb)) return Lanes::kAvx512;
  if ((level == "avx512" || level == "avx2") && extremum::CanRunAvx2<F>(kb)) return Lanes::kAvx2;
  if constexpr (!kNarrow<F>) {
    if (extremum::CanRunSse2<F>(kb)) return Lanes::kSse2;
  }
#endif
  return Lanes::kScalar;
}

template <typename scalar_t, typename index_t>
void Winners(Lanes lanes, const extremum::WinnerArgs<scalar_t, at::opmath_type<scalar_t>, index_t>& a,
             int64_t row_begin, int64_t row_end) {
#if defined(__x86_64__)  // the vector loops exist on x86-64 only
  using F = typename FormatOf<scalar_t>::type;
  switch (lanes) {
    case Lanes::kAvx512: return extremum::WinnersAvx512<F, index_t>(AsFormat<F>(a), row_begin, row_end);
    case Lanes::kAvx2: return extremum::WinnersAvx2<F, index_t>(AsFormat<F>(a), row_begin, row_end);
    case Lanes::kSse2:
      if constexpr (!kNarrow<F>) return extremum::WinnersSse2<F, index_t>(AsFormat<F>(a), row_begin, row_end);
      break;
    case Lanes::kScalar: break;
  }
#endif
  extremum::WinnerRows<ScalarLanes<scalar_t>, 0, true, index_t>(a, row_begin, row_end);
}

template <typename scalar_t, typename index_t>
void DenseGrads(Lanes lanes, const extremum::DenseGradArgs<scalar_t, at::opmath_type<scalar_t>, index_t>& a,
                int64_t row_begin, int64_t row_end) {
#if defined(__x86_64__)  // the vector loops exist on x86-64 only
  using F = typename FormatOf<scalar_t>::type;
  switch (lanes) {
    case Lanes::kAvx512: return extremum::DenseGradsAvx512<F, index_t>(AsFormat<F>(a), row_begin, row_end);
    case Lanes::kAvx2: return extremum::DenseGradsAvx2<F, index_t>(AsFormat<F>(a), row_begin, row_end);
    case Lanes::kSse2:
      if constexpr (!kNarrow<F>) return extremum::DenseGradsSse2<F, index_t>(AsFormat<F>(a), row_begin, row_end);
      break;
    case Lanes::kScalar: break;
  }
#endif
  extremum::DenseGradRows<ScalarLanes<scalar_t>, 0, true, index_t>(a, row_begin, row_end);
}

}  // namespace

ExtremumBackwardArgs CheckExtremumBackwardArgs(const at::Tensor& indptr, const at::Tensor& indices,
                                               const at::Tensor& values, const at::Tensor& dense_in,
                                               const at::Tensor& out, const at::Tensor& grad) {
  const std::string op = "sparsetir._spmm_extremum_backward";
  const at::Tensor dense = CheckFloat(op, "dense", dense_in, 2);
  const int64_t n = dense.size(0), K = dense.size(1);
  ExtremumBackwardArgs a{CheckCsr(op, indptr, indices, n, "dense.size(0)"), CheckFloat(op, "values", values, 1),
                         dense, CheckFloat(op, "out", out, 2), CheckFloat(op, "grad", grad, 2)};
  for (const auto& [name, t] :
       {std::pair<const char*, at::Tensor>{"dense", a.dense}, {"out", a.out}, {"grad", a.grad}}) {
    CheckSameDtype(op, name, t, a.values.scalar_type(), "values");
  }
  const int64_t m = a.csr.rows();
  TORCH_CHECK_VALUE(a.values.numel() == a.csr.nnz(), op, ": argument 'values' must have one element per non-zero (",
                    a.csr.nnz(), "), got ", a.values.numel());
  TORCH_CHECK_VALUE(a.out.size(0) == m && a.out.size(1) == K && a.grad.sizes() == a.out.sizes(), op,
                    ": arguments 'out' and 'grad' must have shape (", m, ", ", K, "), got ",
                    ShapeString(a.out.sizes()), " and ", ShapeString(a.grad.sizes()));
  return a;
}

std::tuple<at::Tensor, at::Tensor> SpmmExtremumBackward(const at::Tensor& indptr_in, const at::Tensor& indices_in,
                                                        const at::Tensor& values_in, const at::Tensor& dense_in,
                                                        const at::Tensor& out_in, const at::Tensor& grad_in,
                                                        bool values_grad) {
  const ExtremumBackwardArgs args =
      CheckExtremumBackwardArgs(indptr_in, indices_in, values_in, dense_in, out_in, grad_in);
  const CheckedCsr& csr = args.csr;
  const at::Tensor &values = args.values, &dense = args.dense, &out = args.out, &grad = args.grad;
  const int64_t m = csr.rows(), n = dense.size(0), K = dense.size(1);
  const CsrTranspose t = csr.info->Transpose(csr.indptr, csr.indices, n);
  at::Tensor grad_values, grad_dense;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, values.scalar_type(), "spmm_extremum_backward", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const auto acc_options = values.options().dtype(c10::CppTypeToScalarType<acc_t>::value);
    // Gradients accumulate over the column blocks in acc_t (float32 for
    // 16-bit values) and round once. Without values_grad the first output is
    // zeros (the caller asked for the dense operand's gradient only).
    at::Tensor values_acc = at::zeros({csr.nnz()}, acc_options);
    // Every element is written: each column block stores its columns of
    // every row of the transpose.
    at::Tensor dense_acc = EmptyOutput({n, K}, acc_options);
    at::Tensor wins = at::empty({csr.nnz()}, values.options().dtype(at::kLong));
    const at::Tensor position = csr.info->TransposePositions(csr.indptr, csr.indices, n);
    AT_DISPATCH_INDEX_TYPES(csr.indptr.scalar_type(), "spmm_extremum_backward_index", [&] {
      for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
        const int64_t kb = std::min(kBlock, K - k0);
        const Lanes lanes = LanesFor<scalar_t>(kb);
        const extremum::WinnerArgs<scalar_t, acc_t, index_t> winners{
            csr.indptr.data_ptr<index_t>(), csr.indices.data_ptr<index_t>(), values.data_ptr<scalar_t>(),
            dense.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(), K, k0, kb,
            position.data_ptr<index_t>(), reinterpret_cast<uint64_t*>(wins.data_ptr<int64_t>()),
            values_grad ? values_acc.data_ptr<acc_t>() : nullptr};
        ForRowsBalanced(winners.indptr, m, kb, [&](int64_t row_begin, int64_t row_end) {
          Winners<scalar_t, index_t>(lanes, winners, row_begin, row_end);
        });
        const extremum::DenseGradArgs<scalar_t, acc_t, index_t> dense_grads{
            t.indptr.data_ptr<index_t>(), t.indices.data_ptr<index_t>(), t.perm.data_ptr<index_t>(),
            values.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(),
            reinterpret_cast<const uint64_t*>(wins.data_ptr<int64_t>()), K, k0, kb, dense_acc.data_ptr<acc_t>()};
        // The work is one word per non-zero and the won elements: count a
        // non-zero as a few columns for the split into tasks.
        ForRowsBalanced(dense_grads.t_indptr, n, 4, [&](int64_t row_begin, int64_t row_end) {
          DenseGrads<scalar_t, index_t>(lanes, dense_grads, row_begin, row_end);
        });
      }
    });
    grad_values = values_acc.scalar_type() == values.scalar_type() ? values_acc : values_acc.to(values.scalar_type());
    grad_dense = dense_acc.scalar_type() == dense.scalar_type() ? dense_acc : dense_acc.to(dense.scalar_type());
  });
  return {grad_values, grad_dense};
}

}  // namespace sparsetir::ops
