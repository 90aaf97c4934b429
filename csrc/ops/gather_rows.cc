#include "gather_rows.h"

#include <algorithm>
#include <vector>

#include "kernel_library.h"

namespace sparsetir::ops {
namespace {

// Rows at least this wide keep index_select's gather, a block per row: there
// its threads are busy.
constexpr int64_t kNarrowRowBytes = 256;

}  // namespace

at::Tensor GatherRows(const at::Tensor& values, const at::Tensor& index) {
  const int64_t width = values.numel() / std::max<int64_t>(values.size(0), 1);
  const bool narrow = values.dim() > 1 && width * static_cast<int64_t>(values.element_size()) < kNarrowRowBytes;
  // The cuda target: CUDA tensors, or CPU ones under the emulator, which stand for them.
  if (!narrow || !TargetFor(values, "edge_softmax").is_cuda()) return values.index_select(0, index);
  const at::Tensor flat = (index.to(at::kLong).unsqueeze(1) * width +
                           at::arange(width, index.options().dtype(at::kLong))).reshape(-1);
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = index.numel();
  return values.contiguous().reshape(-1).index_select(0, flat).view(shape);
}

}  // namespace sparsetir::ops
