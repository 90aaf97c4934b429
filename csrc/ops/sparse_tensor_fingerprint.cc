#include "sparse_tensor_fingerprint.h"

#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>

namespace sparsetir::ops {
namespace {

bool IsCoo(const at::Tensor& t) { return t.layout() == at::kSparse; }

const at::SparseTensorImpl* CooImpl(const at::Tensor& t) {
  return static_cast<const at::SparseTensorImpl*>(t.unsafeGetTensorImpl());
}

// The index tensors t holds: (compressed, plain) indices, or COO's (2, nnz).
std::vector<at::Tensor> IndexTensors(const at::Tensor& t) {
  if (IsCoo(t)) return {CooImpl(t)->indices()};
  const auto* impl = at::sparse_csr::get_sparse_csr_impl(t);
  return {impl->compressed_indices(), impl->plain_indices()};
}

uint32_t VersionOf(const at::Tensor& t) { return t.unsafeGetTensorImpl()->version_counter().current_version(); }

}  // namespace

bool SparseTensorFingerprint::Cacheable(const at::Tensor& t) {
  const auto layout = t.layout();
  if (layout != at::kSparseCsr && layout != at::kSparseBsr && layout != at::kSparse) return false;
  if (t.is_inference() || t.is_meta() || t.key_set().has(c10::DispatchKey::Python)) return false;
  for (const at::Tensor& index : IndexTensors(t)) {
    if (index.is_inference() || index.is_meta() || !index.has_storage()) return false;
  }
  return true;
}

SparseTensorFingerprint::SparseTensorFingerprint(const at::Tensor& t)
    : tensor_(t.getIntrusivePtr()), version_(VersionOf(t)) {
  for (const at::Tensor& index : IndexTensors(t)) indices_.emplace_back(index);
}

bool SparseTensorFingerprint::Matches(const at::Tensor& t) const {
  // Compared while the weak reference is locked: t alive and at that address.
  auto alive = tensor_.lock();
  if (alive.get() != t.unsafeGetTensorImpl() || VersionOf(t) != version_) return false;
  std::vector<at::Tensor> indices = IndexTensors(t);
  if (indices.size() != indices_.size()) return false;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices_[i].Matches(indices[i])) return false;
  }
  return true;
}

at::Tensor SparseTensorFingerprint::Values(const at::Tensor& t) {
  at::Tensor held = IsCoo(t) ? CooImpl(t)->values() : at::sparse_csr::get_sparse_csr_impl(t)->values();
  // values() keeps the autograd edge to t (COO's _values() would not); only
  // coalesced COO tensors are fingerprinted, which values() requires.
  if (t.requires_grad() || held.requires_grad()) return t.values();
  return held;
}

}  // namespace sparsetir::ops
