// A tensor derived from an operator's values (scattered into a format's
// slots, permuted into a transpose's order), kept while those values are the
// same tensor, unchanged: a graph's constant edge values are converted once,
// not at every call.
//
// Values that require grad are being trained: they change at every step, and
// tools such as gradcheck edit them through aliases (.data) that leave their
// version alone, so they are never kept; inference tensors have no version
// to check, so neither are they.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <mutex>
#include <optional>

#include "tensor_fingerprint.h"

namespace sparsetir::ops {

class ValuesMemo {
 public:
  // make() for `values`, or what it returned for them last time.
  at::Tensor Get(const at::Tensor& values, const std::function<at::Tensor()>& make) {
    if (values.is_inference() || values.requires_grad()) return make();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (key_ && key_->Matches(values) && dtype_ == values.scalar_type()) return derived_;
    }
    at::Tensor made = make();
    std::lock_guard<std::mutex> lock(mutex_);
    key_.emplace(values);
    dtype_ = values.scalar_type();
    derived_ = made;
    return made;
  }

 private:
  std::mutex mutex_;
  std::optional<Fingerprint> key_;  // the values last seen (held weakly)
  at::ScalarType dtype_ = at::kFloat;
  at::Tensor derived_;
};

}  // namespace sparsetir::ops
