// Where the hand-written baselines (spmm_*.cc, sddmm_*.cc) prefetch the dense rows they gather, chosen per call by
// the rule the library's operators use (GatherPrefetchFor in csrc/ops/csr_kernels.cc), so that the yardstick keeps
// what the generated kernels gained from it: into L2 (not L1) when the rows PREFETCH_DIST non-zeros ahead span
// 16 KiB or more (half an L1: more would evict the rows in use) or the gathered operand has 16 MiB or more (it
// streams from DRAM, and a core keeps more L2 misses than L1 misses in flight); else into L1. ISA-neutral
// (GCC's __builtin_prefetch: prefetcht0 / prefetcht1 on x86-64, pldl1keep / pldl2keep on AArch64).
#pragma once

#include <cstdint>

namespace {

// Set by the entry point before its rows run; read by every prefetch of the call (a branch that always goes
// the same way).
bool g_prefetch_to_l2 = false;

inline void choose_prefetch_level(int64_t gathered_rows, int64_t row_bytes, int64_t distance) {
  g_prefetch_to_l2 = distance * row_bytes >= (16 << 10) || gathered_rows * row_bytes >= (16 << 20);
}

inline void prefetch_line(const void* p) {
  if (g_prefetch_to_l2) {
    __builtin_prefetch(p, 0, 2);
  } else {
    __builtin_prefetch(p, 0, 3);
  }
}

}  // namespace
