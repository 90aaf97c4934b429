// Kernels called from Python (st.compile) check the contents of their
// structure arrays (indptr order, index ranges: O(nnz)) before they run. A
// training or benchmark loop passes the same index tensors on every call, so
// this memo remembers, per kernel, the last few structures that passed: the same
// tensors (alive, unmodified: see tensor_fingerprint.h) with the same scalar
// arguments skip the element checks. Kinds, dtypes, devices and shapes are
// checked on every call.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "runtime/kernel.h"

namespace sparsetir::ops {

// `structure`: the tensors of kernel->structure_params(), in order;
// `scalars`: every integer argument (a range check depends on them).
bool StructureAlreadyValidated(const std::shared_ptr<Kernel>& kernel, const std::vector<at::Tensor>& structure,
                               const std::vector<int64_t>& scalars);
// Records a call whose full check passed.
void RememberValidated(const std::shared_ptr<Kernel>& kernel, const std::vector<at::Tensor>& structure,
                       const std::vector<int64_t>& scalars);

}  // namespace sparsetir::ops
