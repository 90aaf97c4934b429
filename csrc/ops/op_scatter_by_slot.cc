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

// The checked arguments of either form: 1-D values and int64 slots of one
// length, an index row pointer from 0 to nnz, all three on one device.
struct ScatterArgs {
  at::Tensor values, slot, indptr;
  int64_t rows = 0, nnz = 0;
};

ScatterArgs CheckScatterArgs(const std::string& op, const at::Tensor& values, const at::Tensor& slot,
                             const at::Tensor& indptr, int64_t size, int64_t group_rows) {
  TORCH_CHECK_VALUE(size >= 0, op, ": argument 'size' must be non-negative, got ", size);
  TORCH_CHECK_VALUE(group_rows >= 1, op, ": argument 'group_rows' must be positive, got ", group_rows);
  TORCH_CHECK_VALUE(values.dim() == 1 && values.scalar_type() != at::kBool, op,
                    ": argument 'values' must be a 1-D numeric tensor, got ", values.dim(), "-D ",
                    values.scalar_type());
  TORCH_CHECK_VALUE(slot.dim() == 1 && slot.scalar_type() == at::kLong, op,
                    ": argument 'slot' must be a 1-D int64 tensor, got ", slot.dim(), "-D ", slot.scalar_type());
  CheckSameDevice(op, "slot", slot, values, "values");
  CheckSameDevice(op, "indptr", indptr, values, "values");
  TORCH_CHECK_VALUE(slot.numel() == values.numel(), op,
                    ": arguments 'slot' and 'values' must have the same length, got ", slot.numel(), " and ",
                    values.numel());
  ScatterArgs a{values.contiguous(), slot.contiguous(), CheckIndexTensor(op, "indptr", indptr)};
  TORCH_CHECK_VALUE(a.indptr.numel() >= 1, op, ": argument 'indptr' must hold rows + 1 >= 1 entries, got none");
  a.rows = a.indptr.numel() - 1;
  a.nnz = a.values.numel();
  // The groups cover every non-zero only if they start at 0 and end at nnz.
  const int64_t head = a.indptr[0].item<int64_t>(), tail = a.indptr[a.rows].item<int64_t>();
  TORCH_CHECK_VALUE(head == 0 && tail == a.nnz, op, ": argument 'indptr' must run from 0 to the ", a.nnz,
                    " non-zeros of 'values', got ", head, " to ", tail);
  return a;
}

}  // namespace

at::Tensor ScatterBySlot(const at::Tensor& values, const at::Tensor& slot, const at::Tensor& indptr, int64_t size,
                         int64_t group_rows) {
  const std::string op = "sparsetir._scatter_by_slot";
  const ScatterArgs a = CheckScatterArgs(op, values, slot, indptr, size, group_rows);
  at::Tensor out = at::zeros({size}, a.values.options());
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND2(at::kHalf, at::kBFloat16, a.values.scalar_type(), "scatter_by_slot", [&] {
    if (a.indptr.scalar_type() == at::kInt) {
      ScatterGroups<scalar_t>(op, a.values.data_ptr<scalar_t>(), a.slot.data_ptr<int64_t>(),
                              a.indptr.data_ptr<int32_t>(), a.rows, a.nnz, size, group_rows,
                              out.data_ptr<scalar_t>());
    } else {
      ScatterGroups<scalar_t>(op, a.values.data_ptr<scalar_t>(), a.slot.data_ptr<int64_t>(),
                              a.indptr.data_ptr<int64_t>(), a.rows, a.nnz, size, group_rows,
                              out.data_ptr<scalar_t>());
    }
  });
  return out;
}

// CUDA tensors: index_add_ (atomic adds, so duplicates sum in any order).
// The slots are checked first, one reduction and one host read.
at::Tensor ScatterBySlotByTorchOps(const at::Tensor& values, const at::Tensor& slot, const at::Tensor& indptr,
                                   int64_t size, int64_t group_rows) {
  const std::string op = "sparsetir._scatter_by_slot";
  const ScatterArgs a = CheckScatterArgs(op, values, slot, indptr, size, group_rows);
  if (a.nnz > 0) {
    const auto [low, high] = at::aminmax(a.slot);
    const int64_t lo = low.item<int64_t>(), hi = high.item<int64_t>();
    TORCH_CHECK_VALUE(0 <= lo && hi < size, op, ": argument 'slot' holds ", lo < 0 ? lo : hi, ", outside [0, ",
                      size, ")");
  }
  return at::zeros({size}, a.values.options()).index_add_(0, a.slot, a.values);
}

}  // namespace sparsetir::ops
