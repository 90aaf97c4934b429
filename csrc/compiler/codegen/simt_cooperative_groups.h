// CUDA's cooperative groups (cooperative_groups.h, cooperative_groups/reduce.h,
// scan.h and memcpy_async.h) for hand-written kernels under the SIMT emulator, pasted after
// the emulator header into a source that includes them: the thread block,
// tiles of 1 to 32 threads, coalesced groups, their collectives, reduce,
// the scans and memcpy_async.
//
// Everything is built on the emulator's barriers and warp operations: a
// tile's operations are the warp operations with the tile's mask, which meet
// by that mask, so the tiles of a warp never meet each other.
// coalesced_threads() is a meeting of its own (converge_warp in simt_abi.h).
// Not emulated, each failing to compile with a message naming it: the grid
// and cluster groups (the blocks of a grid run in turn, so a grid barrier
// could never open).
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtCooperativeGroups = R"LIBRARY(
namespace cooperative_groups {

class thread_block {
 public:
  void sync() const { __syncthreads(); }
  unsigned long long thread_rank() const { return (unsigned long long)sparsetir_thread_rank(); }
  unsigned long long num_threads() const { return (unsigned long long)blockDim.x * blockDim.y * blockDim.z; }
  unsigned long long size() const { return num_threads(); }
  dim3 group_index() const { return blockIdx; }
  dim3 thread_index() const { return threadIdx; }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};
static inline thread_block this_thread_block() { return thread_block(); }

// Size consecutive lanes of a warp; `meta_group_rank` is the tile's index in
// the group it was partitioned from. A thread_block_tile<Size, Parent> (what
// tiled_partition returns) is a thread_block_tile<Size>.
template <unsigned int Size, typename Parent = void> class thread_block_tile;
template <unsigned int Size> class thread_block_tile<Size, void> {
  static_assert(Size >= 1 && Size <= 32 && (Size & (Size - 1)) == 0,
                "the SIMT emulator's thread_block_tile has 1, 2, 4, 8, 16 or 32 threads");

 public:
  thread_block_tile(unsigned int meta_rank, unsigned int meta_size)
      : first_lane_(sparsetir_lane() / Size * Size),
        mask_(Size == 32 ? 0xffffffffu : ((1u << Size) - 1u) << first_lane_),
        meta_rank_(meta_rank),
        meta_size_(meta_size) {}
  void sync() const { __syncwarp(mask_); }
  unsigned int thread_rank() const { return (unsigned int)sparsetir_lane() % Size; }
  unsigned int num_threads() const { return Size; }
  unsigned int size() const { return Size; }
  unsigned int meta_group_rank() const { return meta_rank_; }
  unsigned int meta_group_size() const { return meta_size_; }
  template <typename T> T shfl(T v, int src_rank) const { return __shfl_sync(mask_, v, src_rank, Size); }
  template <typename T> T shfl_down(T v, unsigned int delta) const { return __shfl_down_sync(mask_, v, delta, Size); }
  template <typename T> T shfl_up(T v, unsigned int delta) const { return __shfl_up_sync(mask_, v, delta, Size); }
  template <typename T> T shfl_xor(T v, unsigned int lane_mask) const {
    return __shfl_xor_sync(mask_, v, (int)lane_mask, Size);
  }
  int any(int predicate) const { return __any_sync(mask_, predicate); }
  int all(int predicate) const { return __all_sync(mask_, predicate); }
  // Lane masks count from the tile's first thread.
  unsigned int ballot(int predicate) const { return __ballot_sync(mask_, predicate) >> first_lane_; }
  template <typename T> unsigned int match_any(T v) const { return __match_any_sync(mask_, v) >> first_lane_; }
  template <typename T> unsigned int match_all(T v, int& predicate) const {
    return __match_all_sync(mask_, v, &predicate) >> first_lane_;
  }

 private:
  unsigned int first_lane_, mask_, meta_rank_, meta_size_;
};
template <unsigned int Size, typename Parent> class thread_block_tile : public thread_block_tile<Size, void> {
 public:
  using thread_block_tile<Size, void>::thread_block_tile;
};

template <unsigned int Size, typename Parent> static inline thread_block_tile<Size, Parent> tiled_partition(
    const Parent& parent) {
  return thread_block_tile<Size, Parent>((unsigned int)(parent.thread_rank() / Size),
                                         (unsigned int)((parent.num_threads() + Size - 1) / Size));
}

template <typename Group> static inline void sync(const Group& group) { group.sync(); }
template <typename Group> static inline unsigned long long thread_rank(const Group& group) {
  return group.thread_rank();
}
template <typename Group> static inline unsigned long long group_size(const Group& group) {
  return group.num_threads();
}

// What the emulator cannot give (see simt_cooperative_groups.h).
template <typename Unused = void> static inline thread_block this_grid() {
  static_assert(sizeof(Unused) == 0, "the SIMT emulator has no grid group (this_grid): its blocks run in turn");
  return thread_block();
}
template <typename Unused = void> static inline thread_block this_cluster() {
  static_assert(sizeof(Unused) == 0, "the SIMT emulator has no cluster group (this_cluster)");
  return thread_block();
}

// The lanes of a warp that call coalesced_threads() together: on the GPU the
// lanes converged there; here the lanes that wait at the same call site once
// nothing else of the warp can run (the runtime's converge_warp), the largest
// group the GPU could form. Ranks count the group's lanes from the lowest.
class coalesced_group {
 public:
  explicit coalesced_group(unsigned int mask) : mask_(mask) {}
  void sync() const { __syncwarp(mask_); }
  unsigned int num_threads() const { return (unsigned int)__popc(mask_); }
  unsigned int size() const { return num_threads(); }
  unsigned int thread_rank() const { return (unsigned int)__popc(mask_ & ((1u << sparsetir_lane()) - 1u)); }
  unsigned int meta_group_rank() const { return 0; }
  unsigned int meta_group_size() const { return 1; }
  // The group's lanes as a warp mask (not CUDA's: the emulator's collectives use it).
  unsigned int sparsetir_lanes() const { return mask_; }
  template <typename T> T shfl(T v, unsigned int rank) const { return __shfl_sync(mask_, v, LaneOf(rank)); }
  template <typename T> T shfl_down(T v, unsigned int delta) const {
    const unsigned int rank = thread_rank() + delta;
    return __shfl_sync(mask_, v, rank < num_threads() ? LaneOf(rank) : sparsetir_lane());
  }
  template <typename T> T shfl_up(T v, unsigned int delta) const {
    const unsigned int rank = thread_rank();
    return __shfl_sync(mask_, v, rank >= delta ? LaneOf(rank - delta) : sparsetir_lane());
  }
  int any(int predicate) const { return __any_sync(mask_, predicate); }
  int all(int predicate) const { return __all_sync(mask_, predicate); }
  // Lane masks in rank order: bit r for the group's r-th thread.
  unsigned int ballot(int predicate) const { return ByRank(__ballot_sync(mask_, predicate)); }
  template <typename T> unsigned int match_any(T v) const { return ByRank(__match_any_sync(mask_, v)); }
  template <typename T> unsigned int match_all(T v, int& predicate) const {
    return ByRank(__match_all_sync(mask_, v, &predicate));
  }

 private:
  int LaneOf(unsigned int rank) const {
    unsigned int lanes = mask_;
    for (unsigned int r = 0; r < rank && lanes; ++r) lanes &= lanes - 1u;
    return lanes ? __ffs((int)lanes) - 1 : 0;
  }
  unsigned int ByRank(unsigned int lanes) const {
    unsigned int out = 0, rank = 0;
    for (int lane = 0; lane < 32; ++lane) {
      if (mask_ >> lane & 1u) out |= (lanes >> lane & 1u) << rank++;
    }
    return out;
  }
  unsigned int mask_;
};
// Not inlined: its return address names the call site.
__attribute__((noinline)) static coalesced_group coalesced_threads() {
  return coalesced_group(sparsetir_simt->converge_warp(sparsetir_simt->ctx, (uint64_t)__builtin_return_address(0)));
}

// memcpy_async (cooperative_groups/memcpy_async.h): each thread of the
// group copies its own slice of the bytes at once; wait() is the group's
// barrier after which every slice is there. Reading the destination before
// it races with the other threads' copies, as on the GPU (the race check
// reports it).
template <typename Group, typename T, typename Count>
static inline void memcpy_async(const Group& group, T* __restrict__ dst, const T* __restrict__ src,
                                const Count& bytes) {
  const size_t n = (size_t)bytes, threads = (size_t)group.num_threads(), slice = (n + threads - 1) / threads;
  const size_t first = (size_t)group.thread_rank() * slice, begin = first < n ? first : n;
  const size_t end = begin + slice < n ? begin + slice : n;
  memcpy((char*)dst + begin, (const char*)src + begin, end - begin);
}
template <typename Group> static inline void wait(const Group& group) { group.sync(); }
template <unsigned int Stage, typename Group> static inline void wait_prior(const Group& group) { group.sync(); }

// The operators of reduce and the scans (cooperative_groups/functional.h).
template <typename T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <typename T> struct less { T operator()(T a, T b) const { return (b < a) ? b : a; } };
template <typename T> struct greater { T operator()(T a, T b) const { return (a < b) ? b : a; } };
template <typename T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <typename T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <typename T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

// v combined over the tile by a butterfly: every thread gets the same bits.
template <unsigned int Size, typename Parent, typename T, typename Op>
static inline T reduce(const thread_block_tile<Size, Parent>& tile, T v, Op op) {
  for (unsigned int d = Size / 2; d > 0; d /= 2) v = op(v, tile.shfl_xor(v, d));
  return v;
}
// Thread r gets v of threads 0..r combined (Hillis and Steele), or of 0..r-1
// (the exclusive scan; T() at the first thread).
template <unsigned int Size, typename Parent, typename T, typename Op>
static inline T inclusive_scan(const thread_block_tile<Size, Parent>& tile, T v, Op op) {
  for (unsigned int d = 1; d < Size; d *= 2) {
    const T before = tile.shfl_up(v, d);
    if (tile.thread_rank() >= d) v = op(before, v);
  }
  return v;
}
template <unsigned int Size, typename Parent, typename T>
static inline T inclusive_scan(const thread_block_tile<Size, Parent>& tile, T v) {
  return inclusive_scan(tile, v, plus<T>());
}
template <unsigned int Size, typename Parent, typename T, typename Op>
static inline T exclusive_scan(const thread_block_tile<Size, Parent>& tile, T v, Op op) {
  const T inclusive = inclusive_scan(tile, v, op), before = tile.shfl_up(inclusive, 1);
  return tile.thread_rank() == 0 ? T() : before;
}
template <unsigned int Size, typename Parent, typename T>
static inline T exclusive_scan(const thread_block_tile<Size, Parent>& tile, T v) {
  return exclusive_scan(tile, v, plus<T>());
}

// A coalesced group's lanes need not be consecutive: every thread reads each
// rank's value in turn (in the same order in every thread, so that all get
// the same bits). Lanes in order are ranks in order, as __reduce_*_sync reads them.
template <typename T, typename Op> static inline T reduce(const coalesced_group& group, T v, Op op) {
  return sparsetir_reduce_lanes(group.sparsetir_lanes(), v, op);
}
template <typename T, typename Op> static inline T inclusive_scan(const coalesced_group& group, T v, Op op) {
  T r = group.shfl(v, 0), mine = r;
  for (unsigned int rank = 1; rank < group.num_threads(); ++rank) {
    r = op(r, group.shfl(v, rank));
    if (rank == group.thread_rank()) mine = r;
  }
  return mine;
}
template <typename T> static inline T inclusive_scan(const coalesced_group& group, T v) {
  return inclusive_scan(group, v, plus<T>());
}
template <typename T, typename Op> static inline T exclusive_scan(const coalesced_group& group, T v, Op op) {
  const T before = group.shfl_up(inclusive_scan(group, v, op), 1);
  return group.thread_rank() == 0 ? T() : before;
}
template <typename T> static inline T exclusive_scan(const coalesced_group& group, T v) {
  return exclusive_scan(group, v, plus<T>());
}

}  // namespace cooperative_groups
)LIBRARY";

}  // namespace sparsetir
