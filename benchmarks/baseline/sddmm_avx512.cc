// Hand-written reference CSR SDDMM with AVX-512 intrinsics (16 float32 lanes per zmm register):
//   out[e] = values[e] * dot(X[i], Y[j])   for every non-zero e = (i, j) of A.
//
// A yardstick for the generated kernels on x86-64-v4 hosts, not part of the library. The method:
//   * specialized on K at compile time (K in {32, 64, 128, 256});
//   * the X row is loaded into K/16 zmm registers once per row (16 at K = 256, half of the 32) and reused by all
//     the row's non-zeros, so each multiply-add loads only Y;
//   * four non-zeros per step: four independent dot products (two accumulators each up to K = 128) keep both FMA
//     pipes busy, and one horizontal-add tree reduces all four at once into a 4-wide store;
//   * rows are split into contiguous ranges holding ~nnz/threads non-zeros each (binary search on indptr);
//   * software prefetch of the Y rows PREFETCH_DIST non-zeros ahead, into L1 or L2 (baseline_prefetch.h);
//   * a small persistent thread pool (baseline_threads.h).
//
// A: CSR, int32 indptr (m+1) / indices (nnz), float32 values (nnz). X: m x K, Y: n x K row-major float32.
// out: nnz float32. Build:
//   g++ -O3 -march=x86-64-v4 -shared -fPIC -std=c++17 -pthread sddmm_avx512.cc -o libsddmm_avx512.so
#include <immintrin.h>

#include <cstdint>

#include "baseline_prefetch.h"
#include "baseline_threads.h"

#if !defined(__AVX512F__)
#error "sddmm_avx512.cc needs AVX-512F (build with -march=x86-64-v4 or newer)"
#endif

#ifndef PREFETCH_DIST
#define PREFETCH_DIST 32  // in non-zeros, as in the SpMM baselines
#endif

namespace {

constexpr int kLanes = 16;

template <int K>
inline void prefetch_row(const float* p) {
  const char* c = reinterpret_cast<const char*>(p);
#pragma GCC unroll 16
  for (int off = 0; off < K * 4; off += 64) prefetch_line(c + off);
}

// Row `col` of the row-major n x K matrix Y.
template <int K>
inline const float* y_row(const float* Y, int32_t col) {
  return Y + static_cast<int64_t>(col) * K;
}

// The low and high 8 lanes added (AVX-512F only: no 32x8 extract, which is AVX-512DQ).
inline __m256 fold(__m512 a) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
  return _mm256_add_ps(_mm512_castps512_ps256(a), hi);
}

// The sums of the 16 lanes of a, b, c, d, as [sum a, sum b, sum c, sum d].
inline __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m256 ab = _mm256_hadd_ps(fold(a), fold(b));  // [a01 a23 b01 b23 | a45 a67 b45 b67] of the folded
  const __m256 cd = _mm256_hadd_ps(fold(c), fold(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);           // [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7]
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// Accumulators per dot product: two halve the FMA chain while registers allow (x takes NV of the 32, and four
// dot products run at once).
template <int NV>
constexpr int kAccs = NV <= 8 ? 2 : 1;

// The dot products of the NV-vector X row x with four Y rows, as one __m128.
template <int NV>
inline __m128 dot4(const __m512* x, const float* y0, const float* y1, const float* y2, const float* y3) {
  constexpr int A = kAccs<NV>;
  __m512 s0[A], s1[A], s2[A], s3[A];
#pragma GCC unroll 2
  for (int a = 0; a < A; ++a) s0[a] = s1[a] = s2[a] = s3[a] = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    s0[v % A] = _mm512_fmadd_ps(x[v], _mm512_loadu_ps(y0 + kLanes * v), s0[v % A]);
    s1[v % A] = _mm512_fmadd_ps(x[v], _mm512_loadu_ps(y1 + kLanes * v), s1[v % A]);
    s2[v % A] = _mm512_fmadd_ps(x[v], _mm512_loadu_ps(y2 + kLanes * v), s2[v % A]);
    s3[v % A] = _mm512_fmadd_ps(x[v], _mm512_loadu_ps(y3 + kLanes * v), s3[v % A]);
  }
  if constexpr (A == 2) {
    s0[0] = _mm512_add_ps(s0[0], s0[1]);
    s1[0] = _mm512_add_ps(s1[0], s1[1]);
    s2[0] = _mm512_add_ps(s2[0], s2[1]);
    s3[0] = _mm512_add_ps(s3[0], s3[1]);
  }
  return hsum4(s0[0], s1[0], s2[0], s3[0]);
}

template <int NV>
inline float dot1(const __m512* x, const float* y) {
  __m512 s = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) s = _mm512_fmadd_ps(x[v], _mm512_loadu_ps(y + kLanes * v), s);
  return _mm512_reduce_add_ps(s);
}

template <int K>
void sddmm_rows(const int32_t* __restrict indptr, const int32_t* __restrict indices, const float* __restrict values,
                const float* __restrict X, const float* __restrict Y, float* __restrict out, int64_t row_begin,
                int64_t row_end) {
  static_assert(K % kLanes == 0 && K >= kLanes && K <= 256, "K must be a multiple of 16 in [16, 256]");
  constexpr int NV = K / kLanes;
  constexpr int PD = PREFETCH_DIST;
  const int64_t nz_end = indptr[row_end];  // prefetch stays inside this thread's range of indices
  __m512 x[NV];
  for (int64_t i = row_begin; i < row_end; ++i) {
    int64_t j = indptr[i];
    const int64_t e = indptr[i + 1];
    if (j == e) continue;  // an empty row has no output: do not load its X row
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) x[v] = _mm512_loadu_ps(X + i * K + kLanes * v);
    for (; j + 3 < e; j += 4) {
      if (j + PD + 3 < nz_end) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) prefetch_row<K>(y_row<K>(Y, indices[j + PD + k]));
      }
      const __m128 r = dot4<NV>(x, y_row<K>(Y, indices[j]), y_row<K>(Y, indices[j + 1]), y_row<K>(Y, indices[j + 2]),
                                y_row<K>(Y, indices[j + 3]));
      _mm_storeu_ps(out + j, _mm_mul_ps(r, _mm_loadu_ps(values + j)));
    }
    for (; j < e; ++j) {
      if (j + PD < nz_end) prefetch_row<K>(y_row<K>(Y, indices[j + PD]));
      out[j] = values[j] * dot1<NV>(x, y_row<K>(Y, indices[j]));
    }
  }
}

using RowsFn = void (*)(const int32_t*, const int32_t*, const float*, const float*, const float*, float*, int64_t,
                        int64_t);

RowsFn rows_fn_for(int64_t K) {
  switch (K) {
    case 32: return &sddmm_rows<32>;
    case 64: return &sddmm_rows<64>;
    case 128: return &sddmm_rows<128>;
    case 256: return &sddmm_rows<256>;
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

// Returns 0 on success, 1 for an unsupported K, 2 for bad sizes.
int sddmm_avx512(const int32_t* indptr, const int32_t* indices, const float* values, const float* X, const float* Y,
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
