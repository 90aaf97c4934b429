// The asynchronous copies of cuda_pipeline_primitives.h (and cuda_pipeline.h,
// which includes it) for hand-written kernels under the SIMT emulator, pasted
// after the emulator header into a source that includes either.
//
// A copy is done at once, which is one of the orders the GPU may run it in:
// the thread's data is there when __pipeline_wait_prior returns, and other
// threads see it after a barrier. A kernel that reads the destination
// earlier races with the copy on the GPU; under the emulator's race check
// another thread's copy lands before or after the read by the order.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtAsyncCopy = R"LIBRARY(
// Copies size_and_align bytes (4, 8 or 16, both addresses aligned to it),
// the last `zfill` of them as zeros.
static inline void __pipeline_memcpy_async(void* __restrict__ dst, const void* __restrict__ src,
                                           size_t size_and_align, size_t zfill = 0) {
  char why[160];
  if ((size_and_align != 4 && size_and_align != 8 && size_and_align != 16) || zfill > size_and_align) {
    snprintf(why, sizeof(why), "__pipeline_memcpy_async: size %zu must be 4, 8 or 16 and zfill %zu at most it",
             size_and_align, zfill);
    sparsetir_trap(why);
  }
  if ((uintptr_t)dst % size_and_align != 0 || (uintptr_t)src % size_and_align != 0) {
    snprintf(why, sizeof(why), "__pipeline_memcpy_async: %p or %p is not aligned to its size %zu", dst, src,
             size_and_align);
    sparsetir_trap(why);
  }
  memcpy(dst, src, size_and_align - zfill);
  memset((char*)dst + size_and_align - zfill, 0, zfill);
}
static inline void __pipeline_commit() {}
static inline void __pipeline_wait_prior(size_t) {}
)LIBRARY";

}  // namespace sparsetir
