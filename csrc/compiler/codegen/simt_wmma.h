// CUDA's warp matrix functions (mma.h, nvcuda::wmma) for hand-written kernels
// under the SIMT emulator, pasted after the 16-bit float library into a
// source that includes mma.h.
//
// On the GPU a fragment's elements are spread over the warp's lanes in a
// mapping CUDA leaves unspecified; here every lane holds the whole tile (x[]
// is the tile, row by row), so a kernel that treats x[i] alike (scales it,
// converts it) behaves the same, and load, store and mma_sync need no
// exchange between lanes. Each of those is a warp barrier first, as its
// _sync says: no lane reads a tile before every lane has reached the call,
// so data the warp wrote before it is complete, and a store (every lane
// writes the same values) comes after every lane's earlier loads.
// mma_sync multiplies exactly (products of 16-bit values, of 8-bit integers)
// and adds in float (int for integers, double for double) in order; a
// tensor core's order and rounding of the sum may differ from it in the last
// bits of float.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtWmma = R"LIBRARY(
namespace nvcuda {
namespace wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

// The rows and columns of the tile a fragment holds.
template <typename Use, int M, int N, int K> struct sparsetir_tile;
template <int M, int N, int K> struct sparsetir_tile<matrix_a, M, N, K> { enum { rows = M, cols = K }; };
template <int M, int N, int K> struct sparsetir_tile<matrix_b, M, N, K> { enum { rows = K, cols = N }; };
template <int M, int N, int K> struct sparsetir_tile<accumulator, M, N, K> { enum { rows = M, cols = N }; };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> class fragment {
  static_assert((M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) ||
                    (M == 8 && N == 32 && K == 16) || (M == 8 && N == 8 && K == 4),
                "the SIMT emulator's wmma shapes are m16n16k16, m32n8k16, m8n32k16 and m8n8k4");

 public:
  enum { rows = sparsetir_tile<Use, M, N, K>::rows, cols = sparsetir_tile<Use, M, N, K>::cols };
  enum { num_elements = rows * cols };
  typedef T element_type;
  typedef T storage_element_type;
  T x[num_elements];  // the whole tile, row by row
};

template <typename T> struct sparsetir_same { typedef T type; };

// A pointer and leading dimension the GPU accepts: 256-bit aligned, a
// multiple of 16 bytes (the GPU would fault or read other addresses).
template <typename T> static inline void sparsetir_check_tile(const char* what, const T* p, unsigned ldm) {
  char why[160];
  if ((uintptr_t)p % 32 != 0) {
    snprintf(why, sizeof(why), "wmma::%s: the pointer %p is not 32-byte aligned", what, (const void*)p);
    sparsetir_trap(why);
  }
  if (ldm * sizeof(T) % 16 != 0) {
    snprintf(why, sizeof(why), "wmma::%s: ldm %u is not a multiple of 16 bytes", what, ldm);
    sparsetir_trap(why);
  }
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
static inline void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const typename sparsetir_same<T>::type& v) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

// Element (r, c) of a tile at p: row-major at p[r ldm + c], column-major at p[c ldm + r].
template <typename T> static inline T& sparsetir_tile_element(T* p, unsigned ldm, bool row_major, int r, int c) {
  return row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(!std::is_same<Layout, void>::value, "an accumulator's load_matrix_sync takes a layout_t");
  __syncwarp();
  sparsetir_check_tile("load_matrix_sync", p, ldm);
  const bool rows = std::is_same<Layout, row_major>::value;
  for (int r = 0; r < f.rows; ++r) {
    for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = sparsetir_tile_element(p, ldm, rows, r, c);
  }
}
template <int M, int N, int K, typename T>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm, layout_t layout) {
  __syncwarp();
  sparsetir_check_tile("load_matrix_sync", p, ldm);
  const bool rows = layout == mem_row_major;
  for (int r = 0; r < f.rows; ++r) {
    for (int c = 0; c < f.cols; ++c) f.x[r * f.cols + c] = sparsetir_tile_element(p, ldm, rows, r, c);
  }
}
template <int M, int N, int K, typename T>
static inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm,
                                     layout_t layout) {
  __syncwarp();
  sparsetir_check_tile("store_matrix_sync", p, ldm);
  const bool rows = layout == mem_row_major;
  for (int r = 0; r < f.rows; ++r) {
    for (int c = 0; c < f.cols; ++c) sparsetir_tile_element(p, ldm, rows, r, c) = f.x[r * f.cols + c];
  }
}

// d = a b + c (d may be c).
template <int M, int N, int K, typename Tab, typename La, typename Lb, typename Tc>
static inline void mma_sync(fragment<accumulator, M, N, K, Tc>& d, const fragment<matrix_a, M, N, K, Tab, La>& a,
                            const fragment<matrix_b, M, N, K, Tab, Lb>& b,
                            const fragment<accumulator, M, N, K, Tc>& c) {
  typedef typename std::conditional<std::is_integral<Tc>::value, int,
                                    typename std::conditional<std::is_same<Tc, double>::value, double,
                                                              float>::type>::type Sum;
  __syncwarp();
  Sum out[M * N];
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      Sum s = (Sum)c.x[i * N + j];
      for (int k = 0; k < K; ++k) s += (Sum)a.x[i * K + k] * (Sum)b.x[k * N + j];
      out[i * N + j] = s;
    }
  }
  for (int i = 0; i < M * N; ++i) d.x[i] = (Tc)out[i];
}

}  // namespace wmma
}  // namespace nvcuda
)LIBRARY";

}  // namespace sparsetir
