// The identity of a tensor plus everything that changes when it is modified
// or replaced: caches keyed by input tensors (the per-graph cache, the
// validated-call memo) compare a fingerprint instead of the contents.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>

namespace sparsetir::ops {

struct Fingerprint {
  // Weak: a cache entry must not keep a tensor alive, and a freed tensor whose
  // address is reused by a new one must not match.
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
  uint32_t version;
  const void* data;
  int64_t numel;

  explicit Fingerprint(const at::Tensor& t)
      : impl(t.getIntrusivePtr()), version(t.unsafeGetTensorImpl()->version_counter().current_version()),
        data(t.data_ptr()), numel(t.numel()) {}

  bool Matches(const at::Tensor& t) const {
    auto alive = impl.lock();
    return alive.get() == t.unsafeGetTensorImpl() && data == t.data_ptr() && numel == t.numel() &&
           version == t.unsafeGetTensorImpl()->version_counter().current_version();
  }
  bool Expired() const { return impl.expired(); }
};

}  // namespace sparsetir::ops
