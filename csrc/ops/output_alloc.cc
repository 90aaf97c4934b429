#include "output_alloc.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace sparsetir::ops {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{1} << 21;
// Smaller outputs come from the allocator's own free lists without faults.
constexpr int64_t kLargeOutputBytes = int64_t{4} << 20;
// How many released large outputs are kept for reuse (the memory they hold
// stays with the process until reused, evicted or released).
constexpr size_t kRecycled = 4;

void AdviseHugePages(const at::Tensor& t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  const uintptr_t end = begin + static_cast<uintptr_t>(t.nbytes());
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1), last = end & ~(kHugePage - 1);
  // A hint: where it fails (THP off, memory not from a private mapping) the
  // pages are simply faulted in small.
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)t;
#endif
}

struct Recycler {
  std::mutex mutex;
  std::deque<c10::Storage> storages;  // newest last
};

Recycler& Pool() {
  static auto* pool = new Recycler();  // leaked: no exit-order issues with torch's allocator
  return *pool;
}

// A released storage of exactly `bytes` bytes, or an empty one.
c10::Storage TakeReleased(Recycler& pool, size_t bytes) {
  for (const c10::Storage& s : pool.storages) {
    if (s.use_count() == 1 && s.nbytes() == bytes) return s;  // only the pool holds it
  }
  return c10::Storage();
}

void Keep(Recycler& pool, const c10::Storage& storage) {
  if (pool.storages.size() >= kRecycled) {
    // Evict the oldest released one; if every kept output is still in use,
    // the oldest entry goes (its tensor lives on, it is just not recycled).
    auto victim = pool.storages.begin();
    for (auto it = pool.storages.begin(); it != pool.storages.end(); ++it) {
      if (it->use_count() == 1) {
        victim = it;
        break;
      }
    }
    pool.storages.erase(victim);
  }
  pool.storages.push_back(storage);
}

}  // namespace

at::Tensor EmptyOutput(at::IntArrayRef sizes, const at::TensorOptions& options) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options.dtype())));
  if (!options.device().is_cpu() || bytes < kLargeOutputBytes) return at::empty(sizes, options);
  Recycler& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  c10::Storage reused = TakeReleased(pool, static_cast<size_t>(bytes));
  if (reused) {
    std::vector<int64_t> strides(sizes.size());
    int64_t stride = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= std::max<int64_t>(sizes[d], 1);
    }
    return at::empty({0}, options).set_(reused, 0, sizes, strides);
  }
  at::Tensor out = at::empty(sizes, options);
  AdviseHugePages(out);
  Keep(pool, out.storage());
  return out;
}

void ReleaseRecycledOutputs() {
  Recycler& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.storages.clear();
}

}  // namespace sparsetir::ops
