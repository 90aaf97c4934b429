#include "launch_shape.h"

#include <c10/util/Exception.h>

namespace sparsetir::ops {

void CheckLaunchShape(const char* op, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& block) {
  const std::array<int64_t, 3> grid_max = {2147483647LL, 65535, 65535}, block_max = {1024, 1024, 64};
  for (int d = 0; d < 3; ++d) {
    TORCH_CHECK_VALUE(grid[d] >= 1 && grid[d] <= grid_max[d], op, ": grid dimension ", d, " must be from 1 to ",
                      grid_max[d], ", got ", grid[d]);
    TORCH_CHECK_VALUE(block[d] >= 1 && block[d] <= block_max[d], op, ": block dimension ", d, " must be from 1 to ",
                      block_max[d], ", got ", block[d]);
  }
  TORCH_CHECK_VALUE(block[0] * block[1] * block[2] <= 1024, op, ": a block has at most 1024 threads, got ",
                    block[0] * block[1] * block[2]);
}

}  // namespace sparsetir::ops
