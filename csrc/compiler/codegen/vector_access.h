// The memory accesses of a vectorized loop that the cuda target turns into
// vector loads and stores (sch.vectorize on cuda). A GPU thread's vector
// access moves up to 16 bytes in one instruction (ld.global.v2 / v4), where
// the loop's elements would take one instruction each; the arithmetic stays
// a scalar loop over the lanes, unrolled into registers.
//
// A load qualifies when every iteration of the loop performs it (it is not
// under a branch or a select), its last index moves by one element per lane
// and no other index moves, it reads a global or shared buffer the loop does
// not write, its first element does not depend on a variable the loop body
// defines, and that element's offset is provably a multiple of the vector's
// elements (so the address is aligned whenever the buffer's start is). The
// store qualifies on the same terms when it is the loop's only statement and
// the loop reads nothing of the buffer it stores to. The buffers' starting
// addresses are the caller's to check (a kernel's arguments at launch).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ir/stmt.h"

namespace sparsetir {

// Vector accesses move at most this many bytes each (a 128-bit load);
// wider ones are several of these, aligned to this many bytes.
inline constexpr int64_t kMaxVectorAlignment = 16;

struct VectorLoad {
  Buffer buffer;
  std::vector<Expr> first;                  // the indices of lane 0's element
  std::vector<const BufferLoadNode*> uses;  // the loads this vector replaces
};

struct VectorStore {
  const BufferStoreNode* store = nullptr;
  std::vector<Expr> first;
};

struct VectorAccesses {
  int64_t lanes = 0;
  std::vector<VectorLoad> loads;
  std::optional<VectorStore> store;
  bool empty() const { return loads.empty() && !store; }
};

// How an access moves with a loop's variable (the lane): not at all, one
// element per lane (the last index is `lane + something invariant`, no other
// index uses it), or otherwise.
enum class LaneAccess { kInvariant, kContiguous, kOther };
LaneAccess ClassifyLaneAccess(const std::vector<Expr>& indices, const VarNode* lane);
// The indices with the lane bound to 0: a contiguous access's first element.
std::vector<Expr> LaneZero(const std::vector<Expr>& indices, const VarNode* lane);

// The largest power of two (up to 2^20) known to divide a variable's value,
// 1 when nothing is known: the caller's knowledge of let-bound variables.
using VarFactor = std::function<int64_t(const VarNode*)>;

// The largest power of two (up to 2^20) known to divide the integer `e`.
int64_t KnownPowerOfTwoFactor(const Expr& e, const VarFactor& var_factor);

// The bytes a vector access of `lanes` elements of `buffer` must be aligned to.
int64_t VectorAlignment(const BufferNode* buffer, int64_t lanes);

// The accesses of `loop` (vectorized, of constant power-of-two extent) that
// may move as vectors; empty when there are none or the loop is not such.
VectorAccesses PlanVectorAccesses(const ForNode* loop, const VarFactor& var_factor);

}  // namespace sparsetir
