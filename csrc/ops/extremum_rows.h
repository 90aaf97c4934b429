// The row loops of spmm's max/min backward (op_spmm_extremum_backward.cc
// says what the two passes compute), written once over a lane policy so that
// each instruction-set level gets them with its own vectors:
//
//   policy   built in                      lanes (float, double, 16-bit)   columns of a block (<= 64)
//   Scalar   op_spmm_extremum_backward.cc  1                               any; every dtype
//   Sse2     extremum_lanes_sse2.cc        4, 2, -                         a multiple of the lanes (the generic level)
//   Avx2     extremum_lanes_avx2.cc        8, 4, 8                         a multiple of the lanes
//   Avx512   extremum_lanes_avx512.cc      16, 8, 16                       any: the last group is a masked load
//
// 16-bit values (bfloat16, float16) are computed in float32 lanes, their
// products rounded to 16 bits as the forward rounded them.
//
// A level's file compiles its own policy and instantiates the loops with it
// under `#pragma GCC target`, so this header includes nothing with inline
// code of its own: an inline function compiled for AVX-512 in one file and
// for SSE2 in another would let the linker keep either copy.
//
// The loops keep a row's state in G vectors of the policy (G groups of
// lanes, a template argument, the loops over them unrolled, so that they
// stay in registers; G = 0: as many
// as the block needs, counted at run time, for the Scalar policy): pass 1 the
// forward's output row, pass 2 the gradient row it accumulates and stores
// once. Pass 2 adds grad * value under a lane mask in the order of the
// transpose's non-zeros, as a scalar loop over the winners' bits would: every
// level gives the same bits.
#pragma once

#include <cstdint>

namespace sparsetir::ops::extremum {

constexpr int64_t kBlock = 64;            // columns per pass: one bit each in a non-zero's word
constexpr int64_t kPrefetchDistance = 8;  // non-zeros ahead whose dense row is fetched early

// The element formats of the level files, which see no torch types: float,
// double, and the 16-bit ones as their bit patterns (uint16_t), computed in
// float.
struct Bf16 {};
struct Half {};
template <typename T>
struct Storage {
  using scalar_t = T;
  using acc_t = T;
};
template <>
struct Storage<Bf16> {
  using scalar_t = uint16_t;
  using acc_t = float;
};
template <>
struct Storage<Half> {
  using scalar_t = uint16_t;
  using acc_t = float;
};

// Pass 1: the winners of rows of the CSR structure, for the columns
// [k0, k0 + kb) of dense / out / grad (row stride K).
template <typename scalar_t, typename acc_t, typename index_t>
struct WinnerArgs {
  const index_t* indptr;
  const index_t* indices;
  const scalar_t* values;
  const scalar_t* dense;
  const scalar_t* out;
  const scalar_t* grad;
  int64_t K, k0, kb;
  const index_t* position;  // a non-zero's position in the transpose
  uint64_t* wins;           // one word per non-zero, at its transpose position
  acc_t* grad_values;       // null: the values need no gradient
};

// Pass 2: rows of the transpose, whose non-zero p is the structure's perm[p].
template <typename scalar_t, typename acc_t, typename index_t>
struct DenseGradArgs {
  const index_t* t_indptr;
  const index_t* t_indices;
  const index_t* perm;
  const scalar_t* values;
  const scalar_t* grad;
  const uint64_t* wins;
  int64_t K, k0, kb;
  acc_t* grad_dense;  // (n, K), every element of the block's columns written
};

// The entry points of each level (x86-64 only), for the formats T its file
// instantiates (float and double everywhere, Bf16 and Half on AVX2 and
// AVX-512) and int32_t / int64_t indices: the rows [row_begin, row_end) of
// one pass. A block of kb columns must suit the level (CanRun); the others
// take the Scalar policy.
template <typename T, typename index_t>
using WinnerArgsOf = WinnerArgs<typename Storage<T>::scalar_t, typename Storage<T>::acc_t, index_t>;
template <typename T, typename index_t>
using DenseGradArgsOf = DenseGradArgs<typename Storage<T>::scalar_t, typename Storage<T>::acc_t, index_t>;
#define SPARSETIR_EXTREMUM_LEVEL(Level)                                                                   \
  template <typename T, typename index_t>                                                                 \
  void Winners##Level(const WinnerArgsOf<T, index_t>& a, int64_t row_begin, int64_t row_end);             \
  template <typename T, typename index_t>                                                                 \
  void DenseGrads##Level(const DenseGradArgsOf<T, index_t>& a, int64_t row_begin, int64_t row_end);       \
  template <typename T>                                                                                   \
  bool CanRun##Level(int64_t kb);
SPARSETIR_EXTREMUM_LEVEL(Sse2)
SPARSETIR_EXTREMUM_LEVEL(Avx2)
SPARSETIR_EXTREMUM_LEVEL(Avx512)
#undef SPARSETIR_EXTREMUM_LEVEL

// static: each file has its own copy, compiled for its level (see above).
static inline void PrefetchBytes(const void* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(static_cast<const char*>(p) + b);
}

// Pass 1 over rows: walking a row's non-zeros in storage order, a column's
// first attaining non-zero takes its bit, and once every column has one the
// rest of the row only writes empty words (no product is read).
//
// A policy P supplies: scalar_t, acc_t, Vec, kLanes; Widen(x) (an element
// as acc_t); Load(p, n) (the first min(n, kLanes) lanes of p, n >= 1, the
// rest zero); Broadcast(v) (an element in every lane);
// Product(v, x) (v x rounded as the forward rounded it); Multiply(x, v) (in
// acc_t); Equal(a, b) (bit l set where lane l of a equals b's); AddWhere(acc,
// bits, x) (acc + x in the lanes whose bit is set, acc elsewhere);
// Zero() (a vector of zeros); Store(p, v, n) (the first min(n, kLanes)
// lanes, into acc_t); Fits(kb) (the policy
// takes a block of kb columns).
template <class P, int G, bool kWhole, typename index_t>
void WinnerRows(const WinnerArgs<typename P::scalar_t, typename P::acc_t, index_t>& a, int64_t row_begin,
                int64_t row_end) {
  using Vec = typename P::Vec;
  const int64_t K = a.K, k0 = a.k0, kb = a.kb;
  const int groups = G > 0 ? G : static_cast<int>((kb + P::kLanes - 1) / P::kLanes);
  // The lanes of group g inside the block (a whole group: a plain load).
  const auto Left = [kb](int g) -> int64_t { return kWhole ? int64_t{P::kLanes} : kb - g * P::kLanes; };
  const uint64_t all = kb == kBlock ? ~uint64_t{0} : (uint64_t{1} << kb) - 1;
  // Rows fetch ahead across their ends: most rows of a power-law graph are
  // shorter than the distance.
  const int64_t last = a.indptr[row_end];
  for (int64_t i = row_begin; i < row_end; ++i) {
    const int64_t start = a.indptr[i], stop = a.indptr[i + 1];
    Vec out[G > 0 ? G : kBlock / P::kLanes];
#pragma GCC unroll 16
    for (int g = 0; g < groups; ++g) out[g] = P::Load(a.out + i * K + k0 + g * P::kLanes, Left(g));
    uint64_t open = all;  // the columns whose winner is still to be found
    for (int64_t e = start; e < stop; ++e) {
      uint64_t won = 0;
      if (open != 0) {
        if (e + kPrefetchDistance < last) {
          PrefetchBytes(a.dense + static_cast<int64_t>(a.indices[e + kPrefetchDistance]) * K + k0,
                        kb * static_cast<int64_t>(sizeof(typename P::scalar_t)));
        }
        const typename P::scalar_t* row = a.dense + static_cast<int64_t>(a.indices[e]) * K + k0;
        const Vec v = P::Broadcast(a.values[e]);
        uint64_t hits = 0;
#pragma GCC unroll 16
        for (int g = 0; g < groups; ++g) {
          const Vec product = P::Product(v, P::Load(row + g * P::kLanes, Left(g)));
          hits |= P::Equal(product, out[g]) << (g * P::kLanes);
        }
        won = hits & open;
        open &= ~won;
      }
      a.wins[a.position[e]] = won;
      if (a.grad_values == nullptr) continue;
      const typename P::scalar_t* row = a.dense + static_cast<int64_t>(a.indices[e]) * K + k0;
      const typename P::scalar_t* grad_row = a.grad + i * K + k0;
      for (uint64_t bits = won; bits != 0; bits &= bits - 1) {
        const int k = __builtin_ctzll(bits);
        a.grad_values[e] += P::Widen(grad_row[k]) * P::Widen(row[k]);
      }
    }
  }
}

// Pass 2 over rows of the transpose: grad_dense[j] gathers grad[i] * value
// over the winners among row j's non-zeros; only a winning word's gradient
// row is read (fetched ahead).
template <class P, int G, bool kWhole, typename index_t>
void DenseGradRows(const DenseGradArgs<typename P::scalar_t, typename P::acc_t, index_t>& a, int64_t row_begin,
                   int64_t row_end) {
  using Vec = typename P::Vec;
  const int64_t K = a.K, k0 = a.k0, kb = a.kb;
  const int groups = G > 0 ? G : static_cast<int>((kb + P::kLanes - 1) / P::kLanes);
  // The lanes of group g inside the block (a whole group: a plain load).
  const auto Left = [kb](int g) -> int64_t { return kWhole ? int64_t{P::kLanes} : kb - g * P::kLanes; };
  const int64_t last = a.t_indptr[row_end];
  for (int64_t j = row_begin; j < row_end; ++j) {
    Vec acc[G > 0 ? G : kBlock / P::kLanes];
#pragma GCC unroll 16
    for (int g = 0; g < groups; ++g) acc[g] = P::Zero();
    for (int64_t p = a.t_indptr[j], stop = a.t_indptr[j + 1]; p < stop; ++p) {
      if (p + kPrefetchDistance < last && a.wins[p + kPrefetchDistance] != 0) {
        PrefetchBytes(a.grad + static_cast<int64_t>(a.t_indices[p + kPrefetchDistance]) * K + k0,
                      kb * static_cast<int64_t>(sizeof(typename P::scalar_t)));
      }
      const uint64_t won = a.wins[p];
      if (won == 0) continue;
      const Vec v = P::Broadcast(a.values[a.perm[p]]);
      const typename P::scalar_t* grad_row = a.grad + static_cast<int64_t>(a.t_indices[p]) * K + k0;
#pragma GCC unroll 16
      for (int g = 0; g < groups; ++g) {
        const uint64_t bits = won >> (g * P::kLanes);
        acc[g] = P::AddWhere(acc[g], bits, P::Multiply(P::Load(grad_row + g * P::kLanes, Left(g)), v));
      }
    }
#pragma GCC unroll 16
    for (int g = 0; g < groups; ++g) P::Store(a.grad_dense + j * K + k0 + g * P::kLanes, acc[g], Left(g));
  }
}

// Runs run.operator()<G>() with G = `groups` (1 .. kBlock / P::kLanes): the
// groups are a template argument so that the row state lives in registers.
template <class P, int G = 1, typename Run>
void WithGroups(int64_t groups, const Run& run) {
  if constexpr (G < kBlock / P::kLanes) {
    if (groups != G) return WithGroups<P, G + 1>(groups, run);
  }
  run.template operator()<G>();
}

// The functions a level's file exports for its policy Lanes<T>; the file
// then instantiates them per format with SPARSETIR_EXTREMUM_INSTANTIATE.
#define SPARSETIR_EXTREMUM_DEFINE_LEVEL(Level, Lanes)                                                      \
  template <typename T, typename index_t>                                                                  \
  void Winners##Level(const WinnerArgsOf<T, index_t>& a, int64_t row_begin, int64_t row_end) {             \
    using P = Lanes<T>;                                                                                    \
    WithGroups<P>((a.kb + P::kLanes - 1) / P::kLanes, [&]<int G>() {                                       \
      if (a.kb == G * P::kLanes) return WinnerRows<P, G, true, index_t>(a, row_begin, row_end);            \
      WinnerRows<P, G, false, index_t>(a, row_begin, row_end);                                             \
    });                                                                                                    \
  }                                                                                                        \
  template <typename T, typename index_t>                                                                  \
  void DenseGrads##Level(const DenseGradArgsOf<T, index_t>& a, int64_t row_begin, int64_t row_end) {       \
    using P = Lanes<T>;                                                                                    \
    WithGroups<P>((a.kb + P::kLanes - 1) / P::kLanes, [&]<int G>() {                                       \
      if (a.kb == G * P::kLanes) return DenseGradRows<P, G, true, index_t>(a, row_begin, row_end);         \
      DenseGradRows<P, G, false, index_t>(a, row_begin, row_end);                                          \
    });                                                                                                    \
  }                                                                                                        \
  template <typename T>                                                                                    \
  bool CanRun##Level(int64_t kb) {                                                                         \
    return Lanes<T>::Fits(kb);                                                                             \
  }

#define SPARSETIR_EXTREMUM_INSTANTIATE(Level, T)                                                            \
  template void Winners##Level<T, int32_t>(const WinnerArgsOf<T, int32_t>&, int64_t, int64_t);             \
  template void Winners##Level<T, int64_t>(const WinnerArgsOf<T, int64_t>&, int64_t, int64_t);             \
  template void DenseGrads##Level<T, int32_t>(const DenseGradArgsOf<T, int32_t>&, int64_t, int64_t);       \
  template void DenseGrads##Level<T, int64_t>(const DenseGradArgsOf<T, int64_t>&, int64_t, int64_t);       \
  template bool CanRun##Level<T>(int64_t);

}  // namespace sparsetir::ops::extremum
