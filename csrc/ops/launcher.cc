#include "launcher.h"

#include <ATen/Parallel.h>

namespace sparsetir::ops {
namespace {

void ParallelFor(void*, int64_t begin, int64_t end, int64_t grain, SparsetirTask task, void* closure) {
  if (begin >= end) return;
  at::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) { task(closure, b, e); });
}

}  // namespace

SparsetirLauncher TorchLauncher() { return SparsetirLauncher{nullptr, ParallelFor, at::get_num_threads()}; }

}  // namespace sparsetir::ops
