// Hand-written reference CSR SDDMM with AVX2 + FMA intrinsics (8 float32 lanes per ymm register):
//   out[e] = values[e] * dot(X[i], Y[j])   for every non-zero e = (i, j) of A.
//
// A yardstick for the generated kernels on x86-64-v3 hosts, not part of the library. The method:
//   * specialized on K at compile time (K in {32, 64, 128, 256});
//   * the X row (or a chunk of CW columns of it) is loaded into CW/8 ymm registers once per row and reused by all
//     the row's non-zeros, so each multiply-add loads only Y. K = 32 and 64: the whole row (4 or 8 registers).
//     K = 128 and 256 do not fit beside the accumulators in 16 registers: one pass over the row's non-zeros per
//     chunk of columns, the partial dot products accumulating in `out` (see SDDMM_AVX2_CHUNK_*);
//   * four non-zeros per step: four independent dot products (two accumulators each while they fit) keep both FMA
//     pipes busy, and one horizontal-add tree reduces all four at once into a 4-wide store;
//   * rows are split into contiguous ranges holding ~nnz/threads non-zeros each (binary search on indptr);
//   * software prefetch of the Y rows (the chunk's columns of them) PREFETCH_DIST non-zeros ahead,
//     into L1 or L2 (baseline_prefetch.h);
//   * a small persistent thread pool (baseline_threads.h).
//
// A: CSR, int32 indptr (m+1) / indices (nnz), float32 values (nnz). X: m x K, Y: n x K row-major float32.
// out: nnz float32. Build:
//   g++ -O3 -march=x86-64-v3 -shared -fPIC -std=c++17 -pthread sddmm_avx2.cc -o libsddmm_avx2.so
#include <immintrin.h>

#include <cstdint>

#include "baseline_prefetch.h"
#include "baseline_threads.h"

#if !defined(__AVX2__) || !defined(__FMA__)
#error "sddmm_avx2.cc needs AVX2 and FMA (build with -march=x86-64-v3 or newer)"
#endif

#ifndef PREFETCH_DIST
#define PREFETCH_DIST 32  // in non-zeros, as in the SpMM baselines
#endif

// Columns per pass for K = 128 and 256. Timed on a 2-core Zen 3 EPYC (medians of interleaved runs, 1 and 2
// threads, a power-law 100k x 100k matrix with 1.9M non-zeros and a 21-diagonal banded one) against chunks of 32
// and one pass over the whole row, whose 16 or 32 X registers the compiler spills (X is then re-read from the
// stack, in L1): 32 is 10-25% slower than both; 64 and the whole row are within the run-to-run noise of each other
// at K = 128 (1 thread: 84 vs 80 ms power-law, 14.6 vs 14.7 ms banded) and 64 is ahead more often at K = 256 (2
// threads power-law 91 vs 101 ms, 1 thread banded 33.7 vs 36.8 ms; the other two cases favour the whole row by
// 3-5%). 64 keeps X in registers as intended, with no spill code.
#ifndef SDDMM_AVX2_CHUNK_128
#define SDDMM_AVX2_CHUNK_128 64
#endif
#ifndef SDDMM_AVX2_CHUNK_256
#define SDDMM_AVX2_CHUNK_256 64
#endif

namespace {

constexpr int kLanes = 8;

// Row `col` of a row-major matrix of K columns (or of a chunk of it: Y may point past the row starts).
template <int K>
inline const float* y_row(const float* Y, int32_t col) {
  return Y + static_cast<int64_t>(col) * K;
}

template <int CW>
inline void prefetch_chunk(const float* p) {
  const char* c = reinterpret_cast<const char*>(p);
#pragma GCC unroll 32
  for (int off = 0; off < CW * 4; off += 64) prefetch_line(c + off);
}

// The sums of the 8 lanes of a, b, c, d, as [sum a, sum b, sum c, sum d].
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = _mm256_hadd_ps(a, b);    // [a01 a23 b01 b23 | a45 a67 b45 b67]
  const __m256 cd = _mm256_hadd_ps(c, d);    // [c01 c23 d01 d23 | c45 c67 d45 d67]
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7]
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

inline float hsum1(__m256 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Accumulators per dot product: two halve the FMA chain while registers allow (x takes NV of the 16, and four
// dot products run at once).
template <int NV>
constexpr int kAccs = NV <= 4 ? 2 : 1;

// The dot products of the NV-vector chunk x with the chunks of four Y rows, as one __m128.
template <int NV>
inline __m128 dot4(const __m256* x, const float* y0, const float* y1, const float* y2, const float* y3) {
  constexpr int A = kAccs<NV>;
  __m256 s0[A], s1[A], s2[A], s3[A];
#pragma GCC unroll 2
  for (int a = 0; a < A; ++a) s0[a] = s1[a] = s2[a] = s3[a] = _mm256_setzero_ps();
#pragma GCC unroll 32
  for (int v = 0; v < NV; ++v) {
    s0[v % A] = _mm256_fmadd_ps(x[v], _mm256_loadu_ps(y0 + kLanes * v), s0[v % A]);
    s1[v % A] = _mm256_fmadd_ps(x[v], _mm256_loadu_ps(y1 + kLanes * v), s1[v % A]);
    s2[v % A] = _mm256_fmadd_ps(x[v], _mm256_loadu_ps(y2 + kLanes * v), s2[v % A]);
    s3[v % A] = _mm256_fmadd_ps(x[v], _mm256_loadu_ps(y3 + kLanes * v), s3[v % A]);
  }
  if constexpr (A == 2) {
    s0[0] = _mm256_add_ps(s0[0], s0[1]);
    s1[0] = _mm256_add_ps(s1[0], s1[1]);
    s2[0] = _mm256_add_ps(s2[0], s2[1]);
    s3[0] = _mm256_add_ps(s3[0], s3[1]);
  }
  return hsum4(s0[0], s1[0], s2[0], s3[0]);
}

template <int NV>
inline float dot1(const __m256* x, const float* y) {
  __m256 s = _mm256_setzero_ps();
#pragma GCC unroll 32
  for (int v = 0; v < NV; ++v) s = _mm256_fmadd_ps(x[v], _mm256_loadu_ps(y + kLanes * v), s);
  return hsum1(s);
}

// One pass over the non-zeros [j, e) of a row for the CW columns that start at x (registers) and Yc. kFirst: out
// has no partial sum yet; kLast: the dot products are complete, so scale them by values.
template <int K, int CW, bool kFirst, bool kLast>
inline void row_chunk(const __m256* x, const int32_t* __restrict indices, const float* __restrict values,
                      const float* __restrict Yc, float* __restrict out, int64_t j, int64_t e, int64_t nz_end) {
  constexpr int NV = CW / kLanes;
  constexpr int PD = PREFETCH_DIST;
  for (; j + 3 < e; j += 4) {
    if (j + PD + 3 < nz_end) {
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) prefetch_chunk<CW>(y_row<K>(Yc, indices[j + PD + k]));
    }
    __m128 r = dot4<NV>(x, y_row<K>(Yc, indices[j]), y_row<K>(Yc, indices[j + 1]), y_row<K>(Yc, indices[j + 2]),
                        y_row<K>(Yc, indices[j + 3]));
    if constexpr (!kFirst) r = _mm_add_ps(r, _mm_loadu_ps(out + j));
    if constexpr (kLast) r = _mm_mul_ps(r, _mm_loadu_ps(values + j));
    _mm_storeu_ps(out + j, r);
  }
  for (; j < e; ++j) {
    if (j + PD < nz_end) prefetch_chunk<CW>(y_row<K>(Yc, indices[j + PD]));
    float r = dot1<NV>(x, y_row<K>(Yc, indices[j]));
    if constexpr (!kFirst) r += out[j];
    if constexpr (kLast) r *= values[j];
    out[j] = r;
  }
}

template <int NV>
inline void load_x(__m256* x, const float* p) {
#pragma GCC unroll 32
  for (int v = 0; v < NV; ++v) x[v] = _mm256_loadu_ps(p + kLanes * v);
}

template <int K, int CW>
void sddmm_rows(const int32_t* __restrict indptr, const int32_t* __restrict indices, const float* __restrict values,
                const float* __restrict X, const float* __restrict Y, float* __restrict out, int64_t row_begin,
                int64_t row_end) {
  static_assert(CW % kLanes == 0 && K % CW == 0, "the chunk must be whole ymm vectors and tile K");
  constexpr int NV = CW / kLanes;
  const int64_t nz_end = indptr[row_end];
  __m256 x[NV];
  for (int64_t i = row_begin; i < row_end; ++i) {
    const int64_t j = indptr[i], e = indptr[i + 1];
    if (j == e) continue;  // an empty row has no output: do not load its X row
    const float* xi = X + i * K;
    load_x<NV>(x, xi);
    if constexpr (CW == K) {
      row_chunk<K, CW, true, true>(x, indices, values, Y, out, j, e, nz_end);
    } else {
      row_chunk<K, CW, true, false>(x, indices, values, Y, out, j, e, nz_end);
      for (int c0 = CW; c0 < K - CW; c0 += CW) {
        load_x<NV>(x, xi + c0);
        row_chunk<K, CW, false, false>(x, indices, values, Y + c0, out, j, e, nz_end);
      }
      load_x<NV>(x, xi + K - CW);
      row_chunk<K, CW, false, true>(x, indices, values, Y + K - CW, out, j, e, nz_end);
    }
  }
}

using RowsFn = void (*)(const int32_t*, const int32_t*, const float*, const float*, const float*, float*, int64_t,
                        int64_t);

RowsFn rows_fn_for(int64_t K) {
  switch (K) {
    case 32: return &sddmm_rows<32, 32>;
    case 64: return &sddmm_rows<64, 64>;
    case 128: return &sddmm_rows<128, SDDMM_AVX2_CHUNK_128>;
    case 256: return &sddmm_rows<256, SDDMM_AVX2_CHUNK_256>;
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

// Returns 0 on success, 1 for an unsupported K, 2 for bad sizes.
int sddmm_avx2(const int32_t* indptr, const int32_t* indices, const float* values, const float* X, const float* Y,
               float* out, int64_t m, int64_t n, int64_t K, int num_threads) {
  choose_prefetch_level(n, K * 4, PREFETCH_DIST);
  if (m < 0) return 2;
  const RowsFn fn = rows_fn_for(K);
  if (fn == nullptr) return 1;
  for_row_ranges(indptr, m, K, num_threads,
                 [&](int64_t begin, int64_t end) { fn(indptr, indices, values, X, Y, out, begin, end); });
  return 0;
}

}  // extern "C"
