// Hand-written reference CSR SpMM (C = A @ B) with Arm NEON (Advanced SIMD) intrinsics, 4 float32 lanes per q
// register, 32 q registers.
//
// A yardstick for the generated kernels on AArch64 hosts, not part of the library. Same method as spmm_avx512.cc
// and spmm_avx2.cc, sized for 32 q registers:
//   * specialized on K at compile time (K in {32, 64, 128, 256});
//   * the output row, or a chunk of 64 columns of it, lives in q registers across all the non-zeros of the row and
//     is stored once. K = 32: two accumulator sets of 8 alternate between consecutive non-zeros (an FMA chain per
//     register; 8 are about what two 4-cycle FMA pipes need, 16 leave slack for the loads). K = 64: one set of 16.
//     K = 128 and 256: one pass over the row's non-zeros per chunk of 64 columns: 16 accumulators leave the other
//     16 registers for the B loads in flight, where a whole 128-column row (32 accumulators) would not fit at all.
//     The chunk width follows from the register count and has not been timed on Arm hardware;
//   * rows are split into contiguous ranges holding ~nnz/threads non-zeros each (binary search on indptr);
//   * software prefetch of the B rows (the chunk's columns of them) PREFETCH_DIST non-zeros ahead,
//     into L1 or L2 (baseline_prefetch.h);
//   * a small persistent thread pool (baseline_threads.h).
//
// A: CSR, int32 indptr (m+1) / indices (nnz), float32 values. B: n x K row-major float32. C: m x K row-major float32.
// Rows with no non-zeros get zeros. Build:
//   g++ -O3 -march=armv8-a -shared -fPIC -std=c++17 -pthread spmm_neon.cc -o libspmm_neon.so
#if !defined(__ARM_NEON) || !defined(__aarch64__)
#error "spmm_neon.cc needs AArch64 Advanced SIMD (build with -march=armv8-a or newer for aarch64)"
#endif

#include <arm_neon.h>

#include <cstdint>

#include "baseline_prefetch.h"
#include "baseline_threads.h"

#ifndef PREFETCH_DIST
#define PREFETCH_DIST 32  // in non-zeros, as in the x86 baselines
#endif

namespace {

constexpr int kLanes = 4;
constexpr int kChunk = 64;  // columns per pass for K > 64, see above

// Prefetches the CW columns of a B row that start at `p` (a 64-byte cache line is 16 floats).
template <int CW>
inline void prefetch_chunk(const float* p) {
#pragma GCC unroll 32
  for (int off = 0; off < CW; off += 16) prefetch_line(p + off);
}

// acc[v] += a * b[4v .. 4v+3] for the NV vectors of one chunk.
template <int NV>
inline void fma_row(float32x4_t* acc, float a, const float* b) {
#pragma GCC unroll 64
  for (int v = 0; v < NV; ++v) acc[v] = vfmaq_n_f32(acc[v], vld1q_f32(b + kLanes * v), a);
}

// One pass over the non-zeros [j, e) of a row, for the CW columns of B and C that start at Bc and c: the chunk's
// accumulators stay in registers for the whole pass. nz_end bounds the prefetch to this thread's non-zeros.
template <int K, int CW>
inline void row_chunk(const int32_t* __restrict indices, const float* __restrict values, const float* __restrict Bc,
                      float* __restrict c, int64_t j, int64_t e, int64_t nz_end) {
  constexpr int NV = CW / kLanes;
  constexpr bool kTwoSets = NV <= 8;  // 8 FMA chains at most: a second set keeps both pipes fed
  constexpr int PD = PREFETCH_DIST;
  float32x4_t acc[NV];
#pragma GCC unroll 64
  for (int v = 0; v < NV; ++v) acc[v] = vdupq_n_f32(0.0f);

  if constexpr (kTwoSets) {
    float32x4_t acc2[NV];
#pragma GCC unroll 64
    for (int v = 0; v < NV; ++v) acc2[v] = vdupq_n_f32(0.0f);
    for (; j + 1 < e; j += 2) {
      if (j + PD + 1 < nz_end) {
        prefetch_chunk<CW>(Bc + static_cast<int64_t>(indices[j + PD]) * K);
        prefetch_chunk<CW>(Bc + static_cast<int64_t>(indices[j + PD + 1]) * K);
      }
      fma_row<NV>(acc, values[j], Bc + static_cast<int64_t>(indices[j]) * K);
      fma_row<NV>(acc2, values[j + 1], Bc + static_cast<int64_t>(indices[j + 1]) * K);
    }
#pragma GCC unroll 64
    for (int v = 0; v < NV; ++v) acc[v] = vaddq_f32(acc[v], acc2[v]);
  }
  for (; j < e; ++j) {
    if (j + PD < nz_end) prefetch_chunk<CW>(Bc + static_cast<int64_t>(indices[j + PD]) * K);
    fma_row<NV>(acc, values[j], Bc + static_cast<int64_t>(indices[j]) * K);
  }
#pragma GCC unroll 64
  for (int v = 0; v < NV; ++v) vst1q_f32(c + kLanes * v, acc[v]);
}

template <int K, int CW>
void spmm_rows(const int32_t* __restrict indptr, const int32_t* __restrict indices, const float* __restrict values,
               const float* __restrict B, float* __restrict C, int64_t row_begin, int64_t row_end) {
  static_assert(CW % kLanes == 0 && K % CW == 0, "the chunk must be whole q vectors and tile K");
  const int64_t nz_end = indptr[row_end];
  for (int64_t i = row_begin; i < row_end; ++i) {
    for (int c0 = 0; c0 < K; c0 += CW) {
      row_chunk<K, CW>(indices, values, B + c0, C + i * K + c0, indptr[i], indptr[i + 1], nz_end);
    }
  }
}

using RowsFn = void (*)(const int32_t*, const int32_t*, const float*, const float*, float*, int64_t, int64_t);

RowsFn rows_fn_for(int64_t K) {
  switch (K) {
    case 32: return &spmm_rows<32, 32>;
    case 64: return &spmm_rows<64, 64>;
    case 128: return &spmm_rows<128, kChunk>;
    case 256: return &spmm_rows<256, kChunk>;
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

// Returns 0 on success, 1 for an unsupported K, 2 for bad sizes.
int spmm_neon(const int32_t* indptr, const int32_t* indices, const float* values, const float* B, float* C,
              int64_t m, int64_t n, int64_t K, int num_threads) {
  choose_prefetch_level(n, K * 4, PREFETCH_DIST);
  if (m < 0) return 2;
  const RowsFn fn = rows_fn_for(K);
  if (fn == nullptr) return 1;
  for_row_ranges(indptr, m, K, num_threads,
                 [&](int64_t begin, int64_t end) { fn(indptr, indices, values, B, C, begin, end); });
  return 0;
}

}  // extern "C"
