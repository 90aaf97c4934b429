// What the implicit conversion cache (sparsetir_torch/sparse_matrix.py) must
// notice about a torch sparse tensor (CSR, BSR or COO) passed to an operator
// again: that it is the same tensor and that none of its index tensors was
// modified or replaced. Checked on every call, so it is one C++ call rather
// than Python that builds index views only to read their versions.
//
// A sparse tensor counts modifications in two places. Edits through its
// accessors (t.col_indices().add_(1), t.values().mul_(2)) bump the sparse
// tensor's own version counter, which those views share. Edits of the index
// tensors it was built from (torch.sparse_csr_tensor(crow, col, values) holds
// crow and col themselves) bump only their own counters. The fingerprint
// records both, so either kind of edit is seen.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>

#include <vector>

#include "tensor_fingerprint.h"

namespace sparsetir::ops {

class SparseTensorFingerprint {
 public:
  // t must satisfy Cacheable(t).
  explicit SparseTensorFingerprint(const at::Tensor& t);

  // Whether t can be fingerprinted: a sparse CSR, BSR or COO tensor whose
  // versions are tracked (inference tensors have no version counters) and
  // whose index tensors hold real data (not meta or fake tensors).
  static bool Cacheable(const at::Tensor& t);

  // True if t is the tensor fingerprinted (alive: a new tensor at a reused
  // address does not match) and neither t nor its index tensors were
  // modified or replaced since.
  bool Matches(const at::Tensor& t) const;

  // The values an operator should read for t: the values tensor t holds (the
  // same tensor from call to call, no new view per call) or, when either
  // requires grad, the differentiable view t.values() (COO: t._values()) so
  // that gradients reach t.
  static at::Tensor Values(const at::Tensor& t);

 private:
  // Weak, as in Fingerprint: the cache must not keep t alive.
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> tensor_;
  uint32_t version_;  // t's own counter (shared by its accessor views)
  std::vector<Fingerprint> indices_;  // the index tensors t holds
};

}  // namespace sparsetir::ops
