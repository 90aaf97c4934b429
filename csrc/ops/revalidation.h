// An opt-in re-check of structure arrays on every call.
//
// The per-graph cache and the validated-call memo trust a structure they have
// validated until its tensors' version counters move. A change that bypasses
// the counter (writes through `.data`, a NumPy view, `set_` onto the same
// storage) is not seen, as torch does not check sparse invariants by default
// either. With the re-check on (st.validate_every_call(), or
// SPARSETIR_VALIDATE=always in the environment), every call computes a digest
// of its structure's contents (one pass at memory speed) and compares it with
// the cached entry's: a structure that changed is validated again and gets a
// new entry, so changed arrays are neither read out of bounds nor served
// stale derived forms (transposes, BSR/ELL/hyb copies). A structure on a GPU
// is copied to the host for this on every call.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace sparsetir::ops {

bool ValidateEveryCall();
void SetValidateEveryCall(bool enabled);

// A 64-bit digest of the bytes of `indptr` and `indices` (host tensors):
// equal contents give equal digests. It detects accidental changes; it is
// not meant to resist a chosen collision.
uint64_t StructureDigest(const at::Tensor& indptr, const at::Tensor& indices);

}  // namespace sparsetir::ops
