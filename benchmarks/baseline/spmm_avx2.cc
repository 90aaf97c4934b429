// Hand-written reference CSR SpMM (C = A @ B) with AVX2 + FMA intrinsics (8 float32 lanes per ymm register).
//
// A yardstick for the generated kernels on x86-64-v3 hosts (no AVX-512), not part of the library. Same method as
// spmm_avx512.cc, sized for 16 ymm registers:
//   * specialized on K at compile time (K in {32, 64, 128, 256});
//   * the output row, or a chunk of CW columns of it, lives in CW/8 ymm registers across all the non-zeros of the
//     row and is stored once. K = 32: two accumulator sets of 4 alternate between consecutive non-zeros (one set of
//     4 is latency-bound: 4-cycle FMA on 2 pipes wants 8 chains in flight). K = 64: one set of 8. K = 128 and 256:
//     several passes over the row's non-zeros, one per chunk of columns (see SPMM_AVX2_CHUNK_* for the widths
//     measured);
//   * rows are split into contiguous ranges holding ~nnz/threads non-zeros each (binary search on indptr);
//   * software prefetch of the B rows (the chunk's columns of them) PREFETCH_DIST non-zeros ahead,
//     into L1 or L2 (baseline_prefetch.h);
//   * a small persistent thread pool (baseline_threads.h), so a call costs no thread creation.
//
// A: CSR, int32 indptr (m+1) / indices (nnz), float32 values. B: n x K row-major float32. C: m x K row-major float32.
// Rows with no non-zeros get zeros. Build:
//   g++ -O3 -march=x86-64-v3 -shared -fPIC -std=c++17 -pthread spmm_avx2.cc -o libspmm_avx2.so
#include <immintrin.h>

#include <cstdint>

#include "baseline_prefetch.h"
#include "baseline_threads.h"

#if !defined(__AVX2__) || !defined(__FMA__)
#error "spmm_avx2.cc needs AVX2 and FMA (build with -march=x86-64-v3 or newer)"
#endif

#ifndef PREFETCH_DIST
#define PREFETCH_DIST 32  // in non-zeros, as in spmm_avx512.cc
#endif

// Columns per pass for K = 128 and 256. Timed on a 2-core Zen 3 EPYC (medians of interleaved runs, 1 and 2
// threads, a power-law 100k x 100k matrix with 1.9M non-zeros and a 21-diagonal banded one) with chunks of 32 (two
// accumulator sets of 4), 64 (one set of 8) and the whole row (16 or 32 accumulators, which the compiler spills):
// 64 was the fastest, or within 1-2% of it, in every case. K = 128: 64 and 128 tie on the power-law matrix (95 vs
// 94 ms, 1 thread), 64 wins on the banded one (15.0 vs 18.3 ms); 32 is 15-25% slower. K = 256 (1 thread, 64 vs 32
// vs whole row): 195 vs 225 vs 220 ms power-law, 35.6 vs 35.8 vs 44.8 ms banded. Narrower chunks re-read the row's
// indices and values more often; the whole row spends its time on spills.
#ifndef SPMM_AVX2_CHUNK_128
#define SPMM_AVX2_CHUNK_128 64
#endif
#ifndef SPMM_AVX2_CHUNK_256
#define SPMM_AVX2_CHUNK_256 64
#endif

namespace {

constexpr int kLanes = 8;

// Prefetches the CW columns of a B row that start at `p` (a 64-byte cache line is 16 floats).
template <int CW>
inline void prefetch_chunk(const float* p) {
  const char* c = reinterpret_cast<const char*>(p);
#pragma GCC unroll 32
  for (int off = 0; off < CW * 4; off += 64) prefetch_line(c + off);
}

// acc[v] += a * b[8v .. 8v+7] for the NV vectors of one chunk.
template <int NV>
inline void fma_row(__m256* acc, __m256 a, const float* b) {
#pragma GCC unroll 32
  for (int v = 0; v < NV; ++v) acc[v] = _mm256_fmadd_ps(a, _mm256_loadu_ps(b + kLanes * v), acc[v]);
}

// One pass over the non-zeros [j, e) of a row, for the CW columns of B and C that start at Bc and c: the chunk's
// accumulators stay in registers for the whole pass. nz_end bounds the prefetch to this thread's non-zeros.
template <int K, int CW>
inline void row_chunk(const int32_t* __restrict indices, const float* __restrict values, const float* __restrict Bc,
                      float* __restrict c, int64_t j, int64_t e, int64_t nz_end) {
  constexpr int NV = CW / kLanes;
  constexpr bool kTwoSets = NV <= 4;  // fewer than 8 chains of FMAs would leave the FMA pipes waiting on latency
  constexpr int PD = PREFETCH_DIST;
  __m256 acc[NV];
#pragma GCC unroll 32
  for (int v = 0; v < NV; ++v) acc[v] = _mm256_setzero_ps();

  if constexpr (kTwoSets) {
    __m256 acc2[NV];
#pragma GCC unroll 32
    for (int v = 0; v < NV; ++v) acc2[v] = _mm256_setzero_ps();
    for (; j + 1 < e; j += 2) {
      if (j + PD + 1 < nz_end) {
        prefetch_chunk<CW>(Bc + static_cast<int64_t>(indices[j + PD]) * K);
        prefetch_chunk<CW>(Bc + static_cast<int64_t>(indices[j + PD + 1]) * K);
      }
      fma_row<NV>(acc, _mm256_set1_ps(values[j]), Bc + static_cast<int64_t>(indices[j]) * K);
      fma_row<NV>(acc2, _mm256_set1_ps(values[j + 1]), Bc + static_cast<int64_t>(indices[j + 1]) * K);
    }
#pragma GCC unroll 32
    for (int v = 0; v < NV; ++v) acc[v] = _mm256_add_ps(acc[v], acc2[v]);
  }
  for (; j < e; ++j) {
    if (j + PD < nz_end) prefetch_chunk<CW>(Bc + static_cast<int64_t>(indices[j + PD]) * K);
    fma_row<NV>(acc, _mm256_set1_ps(values[j]), Bc + static_cast<int64_t>(indices[j]) * K);
  }
#pragma GCC unroll 32
  for (int v = 0; v < NV; ++v) _mm256_storeu_ps(c + kLanes * v, acc[v]);
}

template <int K, int CW>
void spmm_rows(const int32_t* __restrict indptr, const int32_t* __restrict indices, const float* __restrict values,
               const float* __restrict B, float* __restrict C, int64_t row_begin, int64_t row_end) {
  static_assert(CW % kLanes == 0 && K % CW == 0, "the chunk must be whole ymm vectors and tile K");
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
    case 128: return &spmm_rows<128, SPMM_AVX2_CHUNK_128>;
    case 256: return &spmm_rows<256, SPMM_AVX2_CHUNK_256>;
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

// Returns 0 on success, 1 for an unsupported K, 2 for bad sizes.
int spmm_avx2(const int32_t* indptr, const int32_t* indices, const float* values, const float* B, float* C,
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
