// torch.ops.sparsetir._scatter_by_slot: the values of a CSR matrix moved into
// a converted form (BSR blocks, ELL or hyb slots) through the `slot` of each
// non-zero that the conversion returned. This runs whenever the values change
// (every call while they are trained), so it is one parallel pass, not
// torch's scatter_add, which is serial over a 1-D output (bcsstk16 3x3 on 2
// threads: 0.52 ms against scatter_add's 0.84-0.88 ms and a 0.2 ms BSR
// product; the pass is memory-bound, so threads gain less than 2x).
//
// Two non-zeros share a slot only when they are duplicates (the same row
// and column), and then they sit in the same row. BSR puts the rows of one
// block row into the same blocks, so threads split the rows into groups of
// `group_rows` (the block height; 1 for ELL and hyb) and a group is never
// shared: no atomics, and duplicates still add.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include "op_checks.h"
#include "ops.h"

namespace sparsetir::ops {
namespace {

// Non-zeros per parallel chunk: enough that the loop, not the launch, is the cost.
constexpr int64_t kNonZerosPerChunk = 4096;

// out[slot[e]] += values[e] for e in [first, last); false if a slot is
// outside [0, size) (then nothing past it is written).
template <typename Scalar>
bool ScatterRange(const Scalar* values, const int64_t* slot, int64_t first, int64_t last, int64_t size, Scalar* out) {
  for (int64_t e = first; e < last; ++e) {
    const uint64_t s = static_cast<uint64_t>(slot[e]);
    if (s >= static_cast<uint64_t>(size)) return false;
    out[s] += values[e];
  }
  return true;
}

template <typename Scalar, typename Index>
void ScatterGroups(const std::string& op, const Scalar* values, const int64_t* slot, const Index* indptr,
                   int64_t rows, int64_t nnz, int64_t size, int64_t group_rows, Scalar* out) {
  const int64_t groups = (rows + group_rows - 1) / group_rows;
  const int64_t grain = std::max<int64_t>(1, groups * kNonZerosPerChunk / std::max<int64_t>(nnz, 1));
  at::parallel_for(0, groups, grain, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const int64_t first = indptr[g * group_rows], last = indptr[std::min(rows, (g + 1) * group_rows)];
      TORCH_CHECK_VALUE(0 <= first && first <= last && last <= nnz, op, ": argument 'indptr' is not a CSR row ",
                        "pointer of ", nnz, " non-zeros: rows ", g * group_rows, ".. span [", first, ", ", last, ")");
      if (!ScatterRange(values, slot, first, last, size, out)) {
        for (int64_t e = first; e < last; ++e) {
          TORCH_CHECK_VALUE(0 <= slot[e] && slot[e] < size, op, ": argument 'slot' has ", slot[e], " at ", e,
                            ", outside [0, ", size, ")");
        }
      }
    }
  });
}

}  // namespace

at::Tensor ScatterBySlot(const at::Tensor& values, const at::Tensor& slot, const at::Tensor& indptr, int64_t size,
                         int64_t group_rows) {
  const std::string op = "sparsetir._scatter_by_slot";
  TORCH_CHECK_VALUE(size >= 0, op, ": argument 'size' must be non-negative, got ", size);
  TORCH_CHECK_VALUE(group_rows >= 1, op, ": argument 'group_rows' must be positive, got ", group_rows);
  TORCH_CHECK_VALUE(values.device().is_cpu() && values.dim() == 1 && values.scalar_type() != at::kBool, op,
                    ": argument 'values' must be a 1-D numeric CPU tensor, got ", values.dim(), "-D ",
                    values.scalar_type(), " on ", values.device());
  at::Tensor v = values.contiguous();
  TORCH_CHECK_VALUE(slot.device().is_cpu() && slot.dim() == 1 && slot.scalar_type() == at::kLong, op,
                    ": argument 'slot' must be a 1-D int64 CPU tensor, got ", slot.dim(), "-D ", slot.scalar_type(),
                    " on ", slot.device());
  TORCH_CHECK_VALUE(slot.numel() == v.numel(), op, ": arguments 'slot' and 'values' must have the same length, got ",
                    slot.numel(), " and ", v.numel());
  at::Tensor ip = CheckIndexTensor(op, "indptr", indptr);
  TORCH_CHECK_VALUE(ip.numel() >= 1, op, ": argument 'indptr' must hold rows + 1 >= 1 entries, got none");
  const int64_t rows = ip.numel() - 1, nnz = v.numel();
  // The groups cover every non-zero only if they start at 0 and end at nnz.
  const int64_t head = ip[0].item<int64_t>(), tail = ip[rows].item<int64_t>();
  TORCH_CHECK_VALUE(head == 0 && tail == nnz, op, ": argument 'indptr' must run from 0 to the ", nnz,
                    " non-zeros of 'values', got ", head, " to ", tail);
  at::Tensor s = slot.contiguous();
  at::Tensor out = at::zeros({size}, v.options());
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND2(at::kHalf, at::kBFloat16, v.scalar_type(), "scatter_by_slot", [&] {
    if (ip.scalar_type() == at::kInt) {
      ScatterGroups<scalar_t>(op, v.data_ptr<scalar_t>(), s.data_ptr<int64_t>(), ip.data_ptr<int32_t>(), rows, nnz,
                              size, group_rows, out.data_ptr<scalar_t>());
    } else {
      ScatterGroups<scalar_t>(op, v.data_ptr<scalar_t>(), s.data_ptr<int64_t>(), ip.data_ptr<int64_t>(), rows, nnz,
                              size, group_rows, out.data_ptr<scalar_t>());
    }
  });
  return out;
}

}  // namespace sparsetir::ops
