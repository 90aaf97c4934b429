// Hand-written reference CSR SDDMM with Arm NEON (Advanced SIMD) intrinsics, 4 float32 lanes per q register,
// 32 q registers:
//   out[e] = values[e] * dot(X[i], Y[j])   for every non-zero e = (i, j) of A.
//
// A yardstick for the generated kernels on AArch64 hosts, not part of the library. The method:
//   * specialized on K at compile time (K in {32, 64, 128, 256});
//   * the X row (or a chunk of 64 columns of it) is loaded into q registers once per row and reused by all the
//     row's non-zeros, so each multiply-add loads only Y. K = 32 and 64: the whole row (8 or 16 registers).
//     K = 128 and 256 would need 32 or 64: one pass over the row's non-zeros per 64-column chunk instead, the
//     partial dot products accumulating in `out` (the chunk width follows from the register count and has not
//     been timed on Arm hardware);
//   * four non-zeros per step: four independent dot products (two accumulators each while X leaves room) keep the
//     FMA pipes busy, and one pairwise-add tree reduces all four at once into a 4-wide store;
//   * rows are split into contiguous ranges holding ~nnz/threads non-zeros each (binary search on indptr);
//   * software prefetch of the Y rows (the chunk's columns of them) PREFETCH_DIST non-zeros ahead,
//     into L1 or L2 (baseline_prefetch.h);
//   * a small persistent thread pool (baseline_threads.h).
//
// A: CSR, int32 indptr (m+1) / indices (nnz), float32 values (nnz). X: m x K, Y: n x K row-major float32.
// out: nnz float32. Build:
//   g++ -O3 -march=armv8-a -shared -fPIC -std=c++17 -pthread sddmm_neon.cc -o libsddmm_neon.so
#if !defined(__ARM_NEON) || !defined(__aarch64__)
#error "sddmm_neon.cc needs AArch64 Advanced SIMD (build with -march=armv8-a or newer for aarch64)"
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

// Row `col` of a row-major matrix of K columns (or of a chunk of it: Y may point past the row starts).
template <int K>
inline const float* y_row(const float* Y, int32_t col) {
  return Y + static_cast<int64_t>(col) * K;
}

template <int CW>
inline void prefetch_chunk(const float* p) {
#pragma GCC unroll 32
  for (int off = 0; off < CW; off += 16) prefetch_line(p + off);  // one 64-byte line per 16 floats
}

// Accumulators per dot product: two halve the FMA chain while registers allow (x takes NV of the 32, and four
// dot products run at once, each load needing a register of its own).
template <int NV>
constexpr int kAccs = NV <= 8 ? 2 : 1;

// The dot products of the NV-vector chunk x with the chunks of four Y rows, as [dot0, dot1, dot2, dot3].
template <int NV>
inline float32x4_t dot4(const float32x4_t* x, const float* y0, const float* y1, const float* y2, const float* y3) {
  constexpr int A = kAccs<NV>;
  float32x4_t s0[A], s1[A], s2[A], s3[A];
#pragma GCC unroll 2
  for (int a = 0; a < A; ++a) s0[a] = s1[a] = s2[a] = s3[a] = vdupq_n_f32(0.0f);
#pragma GCC unroll 64
  for (int v = 0; v < NV; ++v) {
    s0[v % A] = vfmaq_f32(s0[v % A], x[v], vld1q_f32(y0 + kLanes * v));
    s1[v % A] = vfmaq_f32(s1[v % A], x[v], vld1q_f32(y1 + kLanes * v));
    s2[v % A] = vfmaq_f32(s2[v % A], x[v], vld1q_f32(y2 + kLanes * v));
    s3[v % A] = vfmaq_f32(s3[v % A], x[v], vld1q_f32(y3 + kLanes * v));
  }
  if constexpr (A == 2) {
    s0[0] = vaddq_f32(s0[0], s0[1]);
    s1[0] = vaddq_f32(s1[0], s1[1]);
    s2[0] = vaddq_f32(s2[0], s2[1]);
    s3[0] = vaddq_f32(s3[0], s3[1]);
  }
  // [a01 a23 b01 b23], [c01 c23 d01 d23] -> [a b c d]
  return vpaddq_f32(vpaddq_f32(s0[0], s1[0]), vpaddq_f32(s2[0], s3[0]));
}

template <int NV>
inline float dot1(const float32x4_t* x, const float* y) {
  float32x4_t s = vdupq_n_f32(0.0f);
#pragma GCC unroll 64
  for (int v = 0; v < NV; ++v) s = vfmaq_f32(s, x[v], vld1q_f32(y + kLanes * v));
  return vaddvq_f32(s);
}

// One pass over the non-zeros [j, e) of a row for the CW columns that start at x (registers) and Yc. kFirst: out
// has no partial sum yet; kLast: the dot products are complete, so scale them by values.
template <int K, int CW, bool kFirst, bool kLast>
inline void row_chunk(const float32x4_t* x, const int32_t* __restrict indices, const float* __restrict values,
                      const float* __restrict Yc, float* __restrict out, int64_t j, int64_t e, int64_t nz_end) {
  constexpr int NV = CW / kLanes;
  constexpr int PD = PREFETCH_DIST;
  for (; j + 3 < e; j += 4) {
    if (j + PD + 3 < nz_end) {
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) prefetch_chunk<CW>(y_row<K>(Yc, indices[j + PD + k]));
    }
    float32x4_t r = dot4<NV>(x, y_row<K>(Yc, indices[j]), y_row<K>(Yc, indices[j + 1]), y_row<K>(Yc, indices[j + 2]),
                             y_row<K>(Yc, indices[j + 3]));
    if constexpr (!kFirst) r = vaddq_f32(r, vld1q_f32(out + j));
    if constexpr (kLast) r = vmulq_f32(r, vld1q_f32(values + j));
    vst1q_f32(out + j, r);
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
inline void load_x(float32x4_t* x, const float* p) {
#pragma GCC unroll 64
  for (int v = 0; v < NV; ++v) x[v] = vld1q_f32(p + kLanes * v);
}

template <int K, int CW>
void sddmm_rows(const int32_t* __restrict indptr, const int32_t* __restrict indices, const float* __restrict values,
                const float* __restrict X, const float* __restrict Y, float* __restrict out, int64_t row_begin,
                int64_t row_end) {
  static_assert(CW % kLanes == 0 && K % CW == 0, "the chunk must be whole q vectors and tile K");
  constexpr int NV = CW / kLanes;
  const int64_t nz_end = indptr[row_end];
  float32x4_t x[NV];
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
    case 128: return &sddmm_rows<128, kChunk>;
    case 256: return &sddmm_rows<256, kChunk>;
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

// Returns 0 on success, 1 for an unsupported K, 2 for bad sizes.
int sddmm_neon(const int32_t* indptr, const int32_t* indices, const float* values, const float* X, const float* Y,
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
