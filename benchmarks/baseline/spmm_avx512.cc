// Hand-written reference CSR SpMM (C = A @ B) with AVX-512 intrinsics.
//
// This is a yardstick for the generated kernels, not part of the library. It does what the "Performance method"
// section of ARCHITECTURE.md says a good CPU SpMM does:
//   * specialized on K at compile time (K in {32, 64, 128, 256}): the K-wide output row lives in K/16 zmm registers
//     across all the non-zeros of a row and is stored once;
//   * for K <= 64 (<= 4 accumulators), two accumulator sets alternate between consecutive non-zeros, so the FMA
//     latency chain is not the limit;
//   * rows are split into contiguous ranges holding ~nnz/threads non-zeros each (binary search on indptr);
//   * software prefetch of the B rows of the non-zeros PREFETCH_DIST ahead, into L1 or L2 (baseline_prefetch.h);
//   * a small persistent thread pool (the caller runs range 0), so a call costs no thread creation;
//   * optional non-temporal stores of C (-DSTREAM_MIN_BYTES=<bytes>; off by default: no clear gain measured).
//
// A: CSR, int32 indptr (m+1) / indices (nnz), float32 values. B: n x K row-major float32. C: m x K row-major float32.
// Rows with no non-zeros get zeros. Build:
//   g++ -O3 -march=native -shared -fPIC -std=c++17 -pthread spmm_avx512.cc -o libspmm_avx512.so
#include <immintrin.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#ifndef PREFETCH_DIST
#define PREFETCH_DIST 32  // in non-zeros (16-64 measured alike; 0-12 up to 2x slower when B is not in L2)
#endif

#ifndef STREAM_MIN_BYTES
#define STREAM_MIN_BYTES (int64_t{1} << 62)  // C size from which stores bypass the cache
#endif

#if !defined(__AVX512F__)
#error "spmm_avx512.cc needs AVX-512F (build with -march=native on an AVX-512 machine)"
#endif

#include "baseline_prefetch.h"

namespace {

template <int K>
inline void prefetch_b_row(const float* B, int32_t col) {
  const char* p = reinterpret_cast<const char*>(B + static_cast<int64_t>(col) * K);
#pragma GCC unroll 16
  for (int off = 0; off < K * 4; off += 64) prefetch_line(p + off);
}

template <int K, bool kStream>
void spmm_rows(const int32_t* __restrict indptr, const int32_t* __restrict indices, const float* __restrict values,
               const float* __restrict B, float* __restrict C, int64_t row_begin, int64_t row_end) {
  static_assert(K % 16 == 0 && K >= 16 && K <= 256, "K must be a multiple of 16 in [16, 256]");
  constexpr int NV = K / 16;              // zmm registers per output row
  constexpr bool kTwoSets = NV <= 4;      // alternate two accumulator sets to hide FMA latency
  constexpr int PD = PREFETCH_DIST;
  const int64_t nz_end = indptr[row_end];  // prefetch stays inside this thread's range of indices

  for (int64_t i = row_begin; i < row_end; ++i) {
    __m512 acc[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_ps();
    int64_t j = indptr[i];
    const int64_t e = indptr[i + 1];

    if constexpr (kTwoSets) {
      __m512 acc2[NV];
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc2[v] = _mm512_setzero_ps();
      for (; j + 1 < e; j += 2) {
        if (j + PD + 1 < nz_end) {
          prefetch_b_row<K>(B, indices[j + PD]);
          prefetch_b_row<K>(B, indices[j + PD + 1]);
        }
        const __m512 a0 = _mm512_set1_ps(values[j]);
        const __m512 a1 = _mm512_set1_ps(values[j + 1]);
        const float* b0 = B + static_cast<int64_t>(indices[j]) * K;
        const float* b1 = B + static_cast<int64_t>(indices[j + 1]) * K;
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) {
          acc[v] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b0 + 16 * v), acc[v]);
          acc2[v] = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b1 + 16 * v), acc2[v]);
        }
      }
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[v] = _mm512_add_ps(acc[v], acc2[v]);
    }
    for (; j < e; ++j) {
      if (j + PD < nz_end) prefetch_b_row<K>(B, indices[j + PD]);
      const __m512 a = _mm512_set1_ps(values[j]);
      const float* b = B + static_cast<int64_t>(indices[j]) * K;
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[v] = _mm512_fmadd_ps(a, _mm512_loadu_ps(b + 16 * v), acc[v]);
    }
    float* c = C + i * K;
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      if constexpr (kStream) _mm512_stream_ps(c + 16 * v, acc[v]);  // C is 64-byte aligned (checked by caller)
      else _mm512_storeu_ps(c + 16 * v, acc[v]);
    }
  }
  if constexpr (kStream) _mm_sfence();
}

using RowsFn = void (*)(const int32_t*, const int32_t*, const float*, const float*, float*, int64_t, int64_t);

template <bool kStream>
RowsFn rows_fn_for(int64_t K) {
  switch (K) {
    case 32: return &spmm_rows<32, kStream>;
    case 64: return &spmm_rows<64, kStream>;
    case 128: return &spmm_rows<128, kStream>;
    case 256: return &spmm_rows<256, kStream>;
    default: return nullptr;
  }
}

// A minimal persistent pool: run(n, f) calls f(0) on the caller and f(1..n-1) on workers, and returns when all
// are done. Calls are serialized. The pool is never destroyed (workers are detached and park on a condvar), which
// keeps process exit free of ordering problems.
class Pool {
 public:
  void run(int n, const std::function<void(int)>& f) {
    std::lock_guard<std::mutex> call_lock(call_mu_);
    if (n <= 1) { f(0); return; }
    {
      std::unique_lock<std::mutex> lk(mu_);
      while (static_cast<int>(workers_) < n - 1) {
        // A new worker starts from the current generation, so it joins the run posted just below.
        std::thread(&Pool::worker_loop, this, static_cast<int>(++workers_), generation_).detach();
      }
      task_ = &f;
      active_ = n;
      pending_ = n - 1;
      ++generation_;
    }
    cv_.notify_all();
    f(0);
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  void worker_loop(int id, uint64_t seen) {
    for (;;) {
      const std::function<void(int)>* task;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return generation_ != seen; });
        seen = generation_;
        if (id >= active_) continue;
        task = task_;
      }
      (*task)(id);
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (--pending_ == 0) done_cv_.notify_one();
      }
    }
  }

  std::mutex call_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  unsigned workers_ = 0;
  uint64_t generation_ = 0;
  int active_ = 0, pending_ = 0;
  const std::function<void(int)>* task_ = nullptr;
};

Pool& pool() {
  static Pool* p = new Pool();  // intentionally leaked
  return *p;
}

}  // namespace

extern "C" {

// The nnz-balanced row partition (also exported for reports): writes threads + 1 row boundaries.
// bounds[t] = first row whose indptr >= t * nnz / threads (binary search); bounds[threads] = m so that trailing
// empty rows are still written. Monotone in t, so the ranges tile [0, m).
void spmm_avx512_partition(const int32_t* indptr, int64_t m, int threads, int64_t* bounds) {
  const int64_t nnz = indptr[m];
  bounds[0] = 0;
  bounds[threads] = m;
  for (int t = 1; t < threads; ++t) {
    const int64_t target = nnz * t / threads;
    bounds[t] = std::lower_bound(indptr, indptr + m + 1, static_cast<int32_t>(target)) - indptr;
    bounds[t] = std::min(std::max(bounds[t], bounds[t - 1]), m);
  }
}

// Returns 0 on success, 1 for an unsupported K, 2 for bad sizes.
int spmm_avx512(const int32_t* indptr, const int32_t* indices, const float* values, const float* B, float* C,
                int64_t m, int64_t n, int64_t K, int num_threads) {
  choose_prefetch_level(n, K * 4, PREFETCH_DIST);
  if (m < 0) return 2;
  // Non-temporal stores for a C too big to stay in cache: saves the read-for-ownership of every C line.
  const bool stream = m * K * 4 >= STREAM_MIN_BYTES && (reinterpret_cast<uintptr_t>(C) & 63) == 0;
  const RowsFn fn = stream ? rows_fn_for<true>(K) : rows_fn_for<false>(K);
  if (fn == nullptr) return 1;
  if (m == 0) return 0;
  const int64_t nnz = indptr[m];
  int threads = std::max(1, num_threads);
  // Too little work to pay for waking a worker (~tens of microseconds): run on the caller.
  if (nnz * K < (int64_t{1} << 20) || m < threads) threads = 1;
  if (threads == 1) {
    fn(indptr, indices, values, B, C, 0, m);
    return 0;
  }
  std::vector<int64_t> bounds(threads + 1);
  spmm_avx512_partition(indptr, m, threads, bounds.data());
  pool().run(threads, [&](int t) { fn(indptr, indices, values, B, C, bounds[t], bounds[t + 1]); });
  return 0;
}

}  // extern "C"
