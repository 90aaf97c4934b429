// Stand-alone correctness check of one instruction set level's SpMM and SDDMM baselines, with no Python: for hosts
// (or emulators) where torch / scipy are not at hand, e.g. an AArch64 build run under qemu-aarch64, or an AVX-512
// machine with only a compiler. Checks against a float64 reference, on random matrices with leading / inner /
// trailing empty rows, a row holding half of the non-zeros, fewer rows than threads, every K in {32, 64, 128, 256},
// 1-3 threads, and the rejection of an unsupported K. Exits 1 on the first failure.
//
//   g++ -O2 -std=c++17 -pthread -march=x86-64-v3 -DISA=avx2 selftest.cc spmm_avx2.cc sddmm_avx2.cc -o selftest
//   aarch64-linux-gnu-g++ -O2 -std=c++17 -pthread -static -DISA=neon selftest.cc spmm_neon.cc sddmm_neon.cc -o st
//   qemu-aarch64 ./st
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#ifndef ISA
#error "define ISA as the level to check: -DISA=avx2, avx512 or neon"
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define STR2(a) #a
#define STR(a) STR2(a)
#define SPMM CAT(spmm_, ISA)
#define SDDMM CAT(sddmm_, ISA)

extern "C" int SPMM(const int32_t*, const int32_t*, const float*, const float*, float*, int64_t, int64_t, int64_t,
                    int);
extern "C" int SDDMM(const int32_t*, const int32_t*, const float*, const float*, const float*, float*, int64_t,
                     int64_t, int64_t, int);

namespace {

constexpr double kRtol = 1e-5;  // per element, relative to the same sum over absolute values

struct Csr {
  std::string name;
  int64_t m = 0, n = 0;
  std::vector<int32_t> indptr, indices;
  std::vector<float> values;
};

// Rows get row_nnz(i) non-zeros at random (possibly repeated, unsorted) columns.
template <class RowNnz>
Csr make_csr(const std::string& name, int64_t m, int64_t n, RowNnz row_nnz, std::mt19937_64& rng) {
  Csr a{name, m, n, {0}, {}, {}};
  std::uniform_int_distribution<int32_t> col(0, static_cast<int32_t>(n - 1));
  std::uniform_real_distribution<float> val(0.5f, 1.5f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = row_nnz(i); k > 0; --k) {
      a.indices.push_back(col(rng));
      a.values.push_back(val(rng));
    }
    a.indptr.push_back(static_cast<int32_t>(a.indices.size()));
  }
  return a;
}

std::vector<float> uniform(size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = d(rng);
  return v;
}

bool close(double got, double ref, double scale) {
  if (!std::isfinite(got)) return false;
  if (scale == 0) return got == 0;
  return std::fabs(got - ref) <= kRtol * scale;
}

bool check_spmm(const Csr& a, int64_t K, int threads, std::mt19937_64& rng) {
  const std::vector<float> B = uniform(a.n * K, rng);
  std::vector<float> C(a.m * K, NAN);  // an element the kernel does not write fails the check
  if (SPMM(a.indptr.data(), a.indices.data(), a.values.data(), B.data(), C.data(), a.m, a.n, K, threads) != 0) {
    return false;
  }
  std::vector<double> ref(K), scale(K);
  for (int64_t i = 0; i < a.m; ++i) {
    std::fill(ref.begin(), ref.end(), 0.0);
    std::fill(scale.begin(), scale.end(), 0.0);
    for (int32_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      const float* b = &B[static_cast<int64_t>(a.indices[e]) * K];
      for (int64_t k = 0; k < K; ++k) {
        ref[k] += double{a.values[e]} * b[k];
        scale[k] += std::fabs(double{a.values[e]} * b[k]);
      }
    }
    for (int64_t k = 0; k < K; ++k) {
      if (!close(C[i * K + k], ref[k], scale[k])) return false;
    }
  }
  return true;
}

bool check_sddmm(const Csr& a, int64_t K, int threads, std::mt19937_64& rng) {
  const std::vector<float> X = uniform(a.m * K, rng), Y = uniform(a.n * K, rng);
  std::vector<float> out(a.values.size(), NAN);
  if (SDDMM(a.indptr.data(), a.indices.data(), a.values.data(), X.data(), Y.data(), out.data(), a.m, a.n, K,
            threads) != 0) {
    return false;
  }
  for (int64_t i = 0; i < a.m; ++i) {
    for (int32_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      double dot = 0, scale = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double{X[i * K + k]} * Y[static_cast<int64_t>(a.indices[e]) * K + k];
        dot += p;
        scale += std::fabs(p);
      }
      if (!close(out[e], a.values[e] * dot, std::fabs(a.values[e]) * scale)) return false;
    }
  }
  return true;
}

std::vector<Csr> matrices(std::mt19937_64& rng) {
  std::vector<Csr> mats;
  // Leading, inner and trailing empty rows; 1-40 non-zeros elsewhere (all remainders of 2 and 4 occur).
  std::uniform_int_distribution<int> few(1, 40);
  mats.push_back(make_csr("random_with_empty_rows", 3000, 2500, [&](int64_t i) {
    return (i < 50 || (i >= 1000 && i < 1200) || i >= 2700) ? 0 : few(rng);
  }, rng));
  // One row with half the non-zeros; above the multi-threading threshold at every K.
  mats.push_back(make_csr("one_heavy_row", 20000, 20000, [](int64_t i) { return i == 7 ? 20000 : 1; }, rng));
  mats.push_back(make_csr("fewer_rows_than_threads", 2, 50000, [](int64_t) { return 30000; }, rng));
  mats.push_back(make_csr("tiny_1x1", 1, 1, [](int64_t) { return 1; }, rng));
  mats.push_back(make_csr("all_empty", 5, 4, [](int64_t) { return 0; }, rng));
  return mats;
}

}  // namespace

int main() {
  std::mt19937_64 rng(1);
  int checks = 0;
  for (const Csr& a : matrices(rng)) {
    for (int64_t K : {32, 64, 128, 256}) {
      for (int threads = 1; threads <= 3; ++threads) {
        for (const bool spmm : {true, false}) {
          const bool ok = spmm ? check_spmm(a, K, threads, rng) : check_sddmm(a, K, threads, rng);
          ++checks;
          if (!ok) {
            std::printf("FAIL %s_%s %s K=%lld threads=%d\n", spmm ? "spmm" : "sddmm", STR(ISA), a.name.c_str(),
                        static_cast<long long>(K), threads);
            return 1;
          }
        }
      }
    }
  }
  const int32_t indptr[2] = {0, 1}, indices[1] = {0};
  const float one[48] = {1.0f};
  float out[48];
  const bool spmm_rejects = SPMM(indptr, indices, one, one, out, 1, 1, 48, 1) == 1;
  const bool sddmm_rejects = SDDMM(indptr, indices, one, one, one, out, 1, 1, 48, 1) == 1;
  if (!spmm_rejects || !sddmm_rejects) {
    std::printf("FAIL %s: K=48 was accepted\n", STR(ISA));
    return 1;
  }
  std::printf("selftest %s: OK, %d checks, unsupported K rejected\n", STR(ISA), checks);
  return 0;
}
