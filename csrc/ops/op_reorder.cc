// torch.ops.sparsetir._csr_rcm: the reverse Cuthill-McKee relabelling of a
// square CSR structure (runtime/rcm.h), for st.reorder. Not cached: a graph
// is relabelled once, by the user, and then used in its new order.
#include "op_checks.h"
#include "ops.h"
#include "runtime/rcm.h"
#include "vector_tensor.h"

namespace sparsetir::ops {
namespace {

template <typename Index>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> Relabel(const CheckedCsr& csr) {
  const Index* indptr = csr.indptr.data_ptr<Index>();
  const Index* indices = csr.indices.data_ptr<Index>();
  std::vector<Index> order = ReverseCuthillMcKee(indptr, indices, csr.rows());
  PermutedCsr<Index> p = PermuteSymmetric(indptr, indices, csr.rows(), order);
  return {VectorToTensor(std::move(order)), VectorToTensor(std::move(p.indptr)), VectorToTensor(std::move(p.indices)),
          VectorToTensor(std::move(p.source))};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> CsrRcmOp(const at::Tensor& indptr,
                                                                    const at::Tensor& indices) {
  const std::string op = "sparsetir._csr_rcm";
  const int64_t rows = std::max<int64_t>(indptr.numel() - 1, 0);
  CheckedCsr csr = CheckCsr(op, indptr, indices, rows, "a square matrix: RCM relabels rows and columns alike");
  if (csr.indptr.scalar_type() == at::kInt) return Relabel<int32_t>(csr);
  return Relabel<int64_t>(csr);
}

}  // namespace sparsetir::ops
