// Hands a std::vector built by a torch-free runtime class to torch without a
// copy: the tensor takes ownership of the vector and frees it with its
// storage. A conversion's output is as large as its input (slots, indices),
// so a copy would double both its memory traffic and its peak memory.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace sparsetir::ops {

// A 1-D tensor over the elements of `values` (moved from), on the CPU.
template <typename T>
at::Tensor VectorToTensor(std::vector<T>&& values) {
  const auto options = at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value);
  if (values.empty()) return at::empty({0}, options);
  auto* owner = new std::vector<T>(std::move(values));
  return at::from_blob(
      owner->data(), {static_cast<int64_t>(owner->size())}, [owner](void*) { delete owner; }, options);
}

}  // namespace sparsetir::ops
