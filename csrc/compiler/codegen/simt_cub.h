// CUB's warp and block collectives for hand-written kernels under the SIMT
// emulator: cub::WarpReduce, cub::WarpScan, cub::BlockReduce and
// cub::BlockScan, with the reduction operators kernels pass them (CUB's own
// cub::Sum / Max / Min of CCCL 2, and cuda::maximum / minimum and
// cuda::std::plus & co. of <cuda/functional>). Pasted after the emulator
// header into a source that includes cub/cub.cuh or one of their headers.
//
// As on the GPU, the warp collectives meet through shuffles (CUB's
// shuffle-based variants for logical warps of a power of two: their
// TempStorage is never touched), and the block collectives through the
// TempStorage the kernel declares in shared memory, after a __syncthreads:
// a kernel that reuses that storage without its own __syncthreads races here
// as there, and the race check can report it. Every thread gets the result
// (CUB defines it in the first thread of the warp or block). Values combine in
// thread order, not in CUB's tree: a float sum may differ from the GPU's in
// its last bits. A block collective whose block does not have the threads its
// template names traps, naming both.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtCub = R"LIBRARY(
namespace cuda {
template <typename T = void> struct maximum {
  template <typename A, typename B> auto operator()(const A& a, const B& b) const { return (a < b) ? b : a; }
};
template <typename T = void> struct minimum {
  template <typename A, typename B> auto operator()(const A& a, const B& b) const { return (a < b) ? a : b; }
};
namespace std {
template <typename T = void> struct plus {
  template <typename A, typename B> auto operator()(const A& a, const B& b) const { return a + b; }
};
template <typename T = void> struct multiplies {
  template <typename A, typename B> auto operator()(const A& a, const B& b) const { return a * b; }
};
template <typename T = void> struct bit_and {
  template <typename A, typename B> auto operator()(const A& a, const B& b) const { return a & b; }
};
template <typename T = void> struct bit_or {
  template <typename A, typename B> auto operator()(const A& a, const B& b) const { return a | b; }
};
template <typename T = void> struct bit_xor {
  template <typename A, typename B> auto operator()(const A& a, const B& b) const { return a ^ b; }
};
}  // namespace std
}  // namespace cuda

namespace cub {
struct Sum {
  template <typename T> T operator()(const T& a, const T& b) const { return a + b; }
};
struct Max {
  template <typename T> T operator()(const T& a, const T& b) const { return (b > a) ? b : a; }
};
struct Min {
  template <typename T> T operator()(const T& a, const T& b) const { return (b < a) ? b : a; }
};
enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

// A value of any size moved between lanes, eight bytes a shuffle.
template <typename T> static inline T sparsetir_cub_exchange(unsigned mask, const T& v, int64_t src) {
  T out;
  for (size_t at = 0; at < sizeof(T); at += 8) {
    uint64_t bits = 0;
    memcpy(&bits, (const char*)&v + at, sizeof(T) - at < 8 ? sizeof(T) - at : 8);
    bits = sparsetir_exchange(mask, bits, src);
    memcpy((char*)&out + at, &bits, sizeof(T) - at < 8 ? sizeof(T) - at : 8);
  }
  return out;
}

// The calling lane's logical warp of `Threads` lanes: its mask, first lane and rank.
template <int Threads> struct sparsetir_cub_warp {
  static_assert(Threads >= 1 && Threads <= 32 && (Threads & (Threads - 1)) == 0,
                "the SIMT emulator's cub warp collectives take logical warps of 1, 2, 4, 8, 16 or 32 threads");
  int first, rank;
  unsigned mask;
  sparsetir_cub_warp() {
    const int lane = sparsetir_lane();
    first = lane / Threads * Threads, rank = lane - first;
    mask = Threads == 32 ? 0xFFFFFFFFu : ((1u << Threads) - 1u) << first;
  }
  // Every lane's value, in rank order, into values[0 .. Threads).
  template <typename T> void gather(const T& v, T* values) const {
    for (int r = 0; r < Threads; ++r) values[r] = sparsetir_cub_exchange(mask, v, sparsetir_warp_base() + first + r);
  }
};

// values[0 .. count) combined in order.
template <typename T, typename Op> static inline T sparsetir_cub_fold(const T* values, int count, Op op) {
  T acc = values[0];
  for (int i = 1; i < count; ++i) acc = op(acc, values[i]);
  return acc;
}

template <typename T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0> class WarpReduce {
 public:
  struct TempStorage {};  // the shuffles need none
  explicit WarpReduce(TempStorage&) {}
  T Sum(T input) { return Reduce(input, ::cub::Sum()); }
  T Sum(T input, int valid_items) { return Reduce(input, ::cub::Sum(), valid_items); }
  template <typename Op> T Reduce(T input, Op op) { return Reduce(input, op, LOGICAL_WARP_THREADS); }
  // The first `valid_items` lanes' values.
  template <typename Op> T Reduce(T input, Op op, int valid_items) {
    T values[LOGICAL_WARP_THREADS];
    warp_.gather(input, values);
    return sparsetir_cub_fold(values, valid_items < 1 ? 1 : valid_items > LOGICAL_WARP_THREADS ? LOGICAL_WARP_THREADS
                                                                                              : valid_items, op);
  }

 private:
  sparsetir_cub_warp<LOGICAL_WARP_THREADS> warp_;
};

// The forms WarpScan and BlockScan share, through the collective's own
// InclusiveScan(input, output, op, aggregate) and
// ExclusiveScan(input, output, initial, op, aggregate).
template <typename Collective, typename T> class sparsetir_cub_scan_forms {
 public:
  void InclusiveSum(T input, T& output) {
    T aggregate;
    self().InclusiveScan(input, output, ::cub::Sum(), aggregate);
  }
  void InclusiveSum(T input, T& output, T& aggregate) { self().InclusiveScan(input, output, ::cub::Sum(), aggregate); }
  void ExclusiveSum(T input, T& output) {
    T aggregate;
    self().ExclusiveScan(input, output, T(), ::cub::Sum(), aggregate);
  }
  void ExclusiveSum(T input, T& output, T& aggregate) {
    self().ExclusiveScan(input, output, T(), ::cub::Sum(), aggregate);
  }
  template <typename Op> void InclusiveScan(T input, T& output, Op op) {
    T aggregate;
    self().InclusiveScan(input, output, op, aggregate);
  }
  template <typename Op> void ExclusiveScan(T input, T& output, T initial, Op op) {
    T aggregate;
    self().ExclusiveScan(input, output, initial, op, aggregate);
  }

 private:
  Collective& self() { return static_cast<Collective&>(*this); }
};

template <typename T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpScan : public sparsetir_cub_scan_forms<WarpScan<T, LOGICAL_WARP_THREADS, LEGACY_PTX_ARCH>, T> {
  typedef sparsetir_cub_scan_forms<WarpScan, T> Forms;

 public:
  using Forms::ExclusiveScan;
  using Forms::ExclusiveSum;
  using Forms::InclusiveScan;
  using Forms::InclusiveSum;
  struct TempStorage {};
  explicit WarpScan(TempStorage&) {}
  template <typename Op> void InclusiveScan(T input, T& output, Op op, T& aggregate) {
    T values[LOGICAL_WARP_THREADS];
    warp_.gather(input, values);
    output = sparsetir_cub_fold(values, warp_.rank + 1, op);
    aggregate = sparsetir_cub_fold(values, LOGICAL_WARP_THREADS, op);
  }
  // Without an initial value the first lane's output is undefined in CUB: T() here.
  template <typename Op> void ExclusiveScan(T input, T& output, Op op) {
    T inclusive, aggregate;
    InclusiveScan(input, inclusive, op, aggregate);
    const T before = Broadcast(inclusive, warp_.rank == 0 ? 0 : warp_.rank - 1);
    output = warp_.rank == 0 ? T() : before;
  }
  template <typename Op> void ExclusiveScan(T input, T& output, T initial, Op op, T& aggregate) {
    T values[LOGICAL_WARP_THREADS];
    warp_.gather(input, values);
    output = initial;
    for (int r = 0; r < warp_.rank; ++r) output = op(output, values[r]);
    aggregate = sparsetir_cub_fold(values, LOGICAL_WARP_THREADS, op);
  }
  T Broadcast(T input, unsigned int src_lane) {
    return sparsetir_cub_exchange(warp_.mask, input, sparsetir_warp_base() + warp_.first + (int)src_lane);
  }

 private:
  sparsetir_cub_warp<LOGICAL_WARP_THREADS> warp_;
};

// The block's threads in row-major order (x fastest), as CUB numbers them,
// and a trap where the block is not the shape the template names.
template <int X, int Y, int Z> static inline int sparsetir_cub_block_rank(const char* collective) {
  if (blockDim.x != (unsigned)X || blockDim.y != (unsigned)Y || blockDim.z != (unsigned)Z) {
    char why[200];
    snprintf(why, sizeof(why), "cub::%s<T, %d, ..., %d, %d> in a block of (%u, %u, %u) threads", collective, X, Y, Z,
             blockDim.x, blockDim.y, blockDim.z);
    sparsetir_trap(why);
  }
  return (int)(threadIdx.x + threadIdx.y * X + threadIdx.z * X * Y);
}

// The values of every thread of the block, through the kernel's shared TempStorage.
template <typename T, int Threads> struct sparsetir_cub_block_storage {
  alignas(T) unsigned char bytes[sizeof(T) * Threads];
  T* values() { return reinterpret_cast<T*>(bytes); }
};

template <typename T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce {
  static constexpr int kThreads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

 public:
  typedef sparsetir_cub_block_storage<T, kThreads> TempStorage;
  explicit BlockReduce(TempStorage& storage)
      : storage_(storage), rank_(sparsetir_cub_block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("BlockReduce")) {}
  T Sum(T input) { return Reduce(input, ::cub::Sum(), kThreads); }
  T Sum(T input, int num_valid) { return Reduce(input, ::cub::Sum(), num_valid); }
  template <int N> T Sum(T (&inputs)[N]) { return Reduce(inputs, ::cub::Sum()); }
  template <typename Op> T Reduce(T input, Op op) { return Reduce(input, op, kThreads); }
  // The first `num_valid` threads' values.
  template <typename Op> T Reduce(T input, Op op, int num_valid) {
    T* values = storage_.values();
    values[rank_] = input;
    __syncthreads();
    return sparsetir_cub_fold(values, num_valid < 1 ? 1 : num_valid > kThreads ? kThreads : num_valid, op);
  }
  template <int N, typename Op> T Reduce(T (&inputs)[N], Op op) {
    return Reduce(sparsetir_cub_fold(inputs, N, op), op, kThreads);
  }

 private:
  TempStorage& storage_;
  int rank_;
};

template <typename T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockScan : public sparsetir_cub_scan_forms<
                      BlockScan<T, BLOCK_DIM_X, ALGORITHM, BLOCK_DIM_Y, BLOCK_DIM_Z, LEGACY_PTX_ARCH>, T> {
  static constexpr int kThreads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
  typedef sparsetir_cub_scan_forms<BlockScan, T> Forms;

 public:
  using Forms::ExclusiveScan;
  using Forms::ExclusiveSum;
  using Forms::InclusiveScan;
  using Forms::InclusiveSum;
  typedef sparsetir_cub_block_storage<T, kThreads> TempStorage;
  explicit BlockScan(TempStorage& storage)
      : storage_(storage), rank_(sparsetir_cub_block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("BlockScan")) {}
  template <typename Op> void InclusiveScan(T input, T& output, Op op, T& aggregate) {
    const T* values = Share(input);
    output = sparsetir_cub_fold(values, rank_ + 1, op);
    aggregate = sparsetir_cub_fold(values, kThreads, op);
  }
  // Without an initial value the first thread's output is undefined in CUB: T() here.
  template <typename Op> void ExclusiveScan(T input, T& output, Op op) {
    const T* values = Share(input);
    output = rank_ == 0 ? T() : sparsetir_cub_fold(values, rank_, op);
  }
  template <typename Op> void ExclusiveScan(T input, T& output, T initial, Op op, T& aggregate) {
    const T* values = Share(input);
    output = initial;
    for (int r = 0; r < rank_; ++r) output = op(output, values[r]);
    aggregate = sparsetir_cub_fold(values, kThreads, op);
  }
  // Each thread's N items, consecutive in the block's order.
  template <int N> void InclusiveSum(T (&input)[N], T (&output)[N]) { InclusiveScan(input, output, ::cub::Sum()); }
  template <int N> void InclusiveSum(T (&input)[N], T (&output)[N], T& aggregate) {
    InclusiveScan(input, output, ::cub::Sum(), aggregate);
  }
  template <int N> void ExclusiveSum(T (&input)[N], T (&output)[N]) {
    T aggregate;
    ExclusiveSum(input, output, aggregate);
  }
  template <int N> void ExclusiveSum(T (&input)[N], T (&output)[N], T& aggregate) {
    T before;
    ExclusiveScan(sparsetir_cub_fold(input, N, ::cub::Sum()), before, T(), ::cub::Sum(), aggregate);
    for (int i = 0; i < N; ++i) {
      output[i] = before;
      before = before + input[i];
    }
  }
  template <int N, typename Op> void InclusiveScan(T (&input)[N], T (&output)[N], Op op) {
    T aggregate;
    InclusiveScan(input, output, op, aggregate);
  }
  template <int N, typename Op> void InclusiveScan(T (&input)[N], T (&output)[N], Op op, T& aggregate) {
    const T* values = Share(sparsetir_cub_fold(input, N, op));
    aggregate = sparsetir_cub_fold(values, kThreads, op);
    output[0] = rank_ == 0 ? input[0] : op(sparsetir_cub_fold(values, rank_, op), input[0]);
    for (int i = 1; i < N; ++i) output[i] = op(output[i - 1], input[i]);
  }

 private:
  // Every thread's value, after the block's barrier.
  const T* Share(const T& input) {
    T* values = storage_.values();
    values[rank_] = input;
    __syncthreads();
    return values;
  }
  TempStorage& storage_;
  int rank_;
};
}  // namespace cub
)LIBRARY";

}  // namespace sparsetir
