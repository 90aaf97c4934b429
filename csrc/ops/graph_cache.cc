#include "graph_cache.h"

#include <list>
#include <unordered_map>

#include "launcher.h"
#include "revalidation.h"
#include "runtime/bsr_conversion.h"
#include "runtime/ell_conversion.h"
#include "support/error.h"
#include "tensor_fingerprint.h"
#include "vector_tensor.h"

namespace sparsetir::ops {
namespace {

struct Entry {
  Fingerprint indptr, indices;
  std::shared_ptr<GraphInfo> info;
  std::list<std::pair<const void*, const void*>>::iterator lru;  // position in the recency list
};

struct PairHash {
  size_t operator()(const std::pair<const void*, const void*>& k) const {
    return std::hash<const void*>()(k.first) * 31 + std::hash<const void*>()(k.second);
  }
};

class GraphCache {
 public:
  std::shared_ptr<GraphInfo> Lookup(const at::Tensor& indptr, const at::Tensor& indices) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(KeyOf(indptr, indices));
    if (found == entries_.end() || !found->second.indptr.Matches(indptr) || !found->second.indices.Matches(indices)) {
      ++stats_.misses;
      return nullptr;
    }
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, found->second.lru);  // now the most recent
    return found->second.info;
  }

  void Insert(const at::Tensor& indptr, const at::Tensor& indices, std::shared_ptr<GraphInfo> info) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = KeyOf(indptr, indices);
    Erase(key);
    DropExpired();
    while (!lru_.empty() && static_cast<int64_t>(entries_.size()) >= capacity_) {
      Key oldest = lru_.back();
      Erase(oldest);
    }
    lru_.push_front(key);
    entries_.emplace(key, Entry{Fingerprint(indptr), Fingerprint(indices), std::move(info), lru_.begin()});
  }

  GraphCacheStats Stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    GraphCacheStats s = stats_;
    s.entries = static_cast<int64_t>(entries_.size());
    return s;
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
    lru_.clear();
    stats_ = GraphCacheStats();
  }

  void SetCapacity(int64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    capacity_ = capacity < 1 ? 1 : capacity;
  }

 private:
  using Key = std::pair<const void*, const void*>;
  static Key KeyOf(const at::Tensor& a, const at::Tensor& b) {
    return {a.unsafeGetTensorImpl(), b.unsafeGetTensorImpl()};
  }

  void Erase(const Key& key) {
    auto found = entries_.find(key);
    if (found == entries_.end()) return;
    lru_.erase(found->second.lru);
    entries_.erase(found);
  }

  void DropExpired() {
    std::vector<Key> expired;
    for (const auto& [key, entry] : entries_) {
      if (entry.indptr.Expired() || entry.indices.Expired()) expired.push_back(key);
    }
    for (const Key& key : expired) Erase(key);
  }

  std::mutex mutex_;
  std::unordered_map<Key, Entry, PairHash> entries_;
  std::list<Key> lru_;  // most recently used first
  int64_t capacity_ = 128;
  GraphCacheStats stats_;
};

GraphCache& Cache() {
  static GraphCache* cache = new GraphCache();  // never destroyed: ops may run during interpreter exit
  return *cache;
}

CsrSummary Validate(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices) {
  const int64_t rows = indptr.numel() - 1, nnz = indices.numel();
  try {
    if (indptr.scalar_type() == at::kInt) {
      return ValidateCsr<int32_t>(op, indptr.data_ptr<int32_t>(), rows, indices.data_ptr<int32_t>(), nnz);
    }
    return ValidateCsr<int64_t>(op, indptr.data_ptr<int64_t>(), rows, indices.data_ptr<int64_t>(), nnz);
  } catch (const UserError& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
}

// Runs `convert` on the structure's raw arrays of its index dtype; a
// UserError (bad parameters) becomes a ValueError.
template <typename Convert>
auto WithIndexPointers(const at::Tensor& indptr, const at::Tensor& indices, const Convert& convert) {
  try {
    if (indptr.scalar_type() == at::kInt) return convert(indptr.data_ptr<int32_t>(), indices.data_ptr<int32_t>());
    return convert(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>());
  } catch (const UserError& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
}

}  // namespace

namespace {

// Row lengths as an int64 column (rows, 1), on the structure's device.
at::Tensor RowLengths(const at::Tensor& indptr) {
  return (indptr.slice(0, 1) - indptr.slice(0, 0, -1)).to(at::kLong).unsqueeze(1);
}

}  // namespace

at::Tensor GraphInfo::EmptyRows(const at::Tensor& indptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!empty_rows_.defined()) {
    empty_rows_ = summary_.empty_rows > 0 ? at::nonzero(RowLengths(indptr).squeeze(1) == 0).squeeze(1)
                                          : at::empty({0}, indptr.options().dtype(at::kLong));
  }
  return empty_rows_;
}

at::Tensor GraphInfo::MeanDivisors(const at::Tensor& indptr, at::ScalarType dtype) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = mean_divisors_.find(dtype);
  if (found == mean_divisors_.end()) {
    found = mean_divisors_.emplace(dtype, RowLengths(indptr).clamp_min(1).to(dtype)).first;
  }
  return found->second;
}

std::array<int64_t, kNearBits> GraphInfo::NearGathers(const at::Tensor& indptr, const at::Tensor& indices) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!near_gathers_) {
    std::array<int64_t, kNearBits> near{};
    WithIndexPointers(indptr, indices, [&](const auto* p, const auto* i) {
      CountNearGathers(p, summary_.rows, i, near.data());
      return 0;
    });
    near_gathers_ = near;
  }
  return *near_gathers_;
}

RowSegments GraphInfo::Segments(const at::Tensor& indptr, int64_t length) {
  ICHECK(length > 0) << "row segments of length " << length;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = segments_.find(length);
  if (found != segments_.end()) return found->second;
  // Torch operations on the structure's own device: row r has
  // ceil(len_r / length) segments, the k-th starting at indptr[r] + k * length.
  const at::Tensor starts = indptr.slice(0, 0, summary_.rows).to(at::kLong);
  const at::Tensor counts = (indptr.slice(0, 1).to(at::kLong) - starts + (length - 1)).div(length, "floor");
  const at::Tensor rows = at::arange(summary_.rows, starts.options());
  const at::Tensor row = at::repeat_interleave(rows, counts);
  const at::Tensor first = counts.cumsum(0) - counts;  // each row's first segment
  const at::Tensor within = at::arange(row.numel(), starts.options()) - first.index_select(0, row);
  const at::Tensor ptr = at::cat({starts.index_select(0, row) + within * length,
                                  at::full({1}, summary_.nnz, starts.options())});
  // A row's place among the rows cut in several segments, or -1.
  const at::Tensor split = counts > 1;
  const at::Tensor row_slot = at::where(split, split.cumsum(0) - 1, at::full({}, -1, starts.options()));
  RowSegments segments{row.to(indptr.scalar_type()), ptr.to(indptr.scalar_type()),
                       row_slot.index_select(0, row).to(indptr.scalar_type()), split.nonzero().view({-1}),
                       (counts == 0).nonzero().view({-1})};
  segments_.emplace(length, segments);
  return segments;
}

CsrTranspose GraphInfo::Transpose(const at::Tensor& indptr_, const at::Tensor& indices_, int64_t columns) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = transposes_.find(columns);
  if (found != transposes_.end()) return found->second;
  ICHECK(summary_.max_index < columns) << "transpose with too few columns";
  if (indptr_.is_cuda()) {
    // Built on the host from copies, once per graph, then moved to the device.
    GraphInfo host(summary_);
    CsrTranspose h = host.Transpose(indptr_.cpu(), indices_.cpu(), columns);
    const auto device = indptr_.device();
    CsrTranspose t{h.indptr.to(device), h.indices.to(device), h.perm.to(device)};
    transposes_.emplace(columns, t);
    return t;
  }
  auto options = indptr_.options();
  CsrTranspose t{at::empty({columns + 1}, options), at::empty({summary_.nnz}, options),
                 at::empty({summary_.nnz}, options)};
  if (indptr_.scalar_type() == at::kInt) {
    TransposeCsr<int32_t>(indptr_.data_ptr<int32_t>(), indices_.data_ptr<int32_t>(), summary_.rows, columns,
                          t.indptr.data_ptr<int32_t>(), t.indices.data_ptr<int32_t>(), t.perm.data_ptr<int32_t>());
  } else {
    TransposeCsr<int64_t>(indptr_.data_ptr<int64_t>(), indices_.data_ptr<int64_t>(), summary_.rows, columns,
                          t.indptr.data_ptr<int64_t>(), t.indices.data_ptr<int64_t>(), t.perm.data_ptr<int64_t>());
  }
  transposes_.emplace(columns, t);
  return t;
}

at::Tensor GraphInfo::TransposePositions(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns) {
  auto made = Derived("transpose_position/" + std::to_string(columns), [&] {
    const CsrTranspose t = Transpose(indptr, indices, columns);
    at::Tensor position = at::empty_like(t.perm);
    position.index_put_({t.perm}, at::arange(summary_.nnz, t.perm.options()));
    return std::static_pointer_cast<void>(std::make_shared<at::Tensor>(std::move(position)));
  });
  return *std::static_pointer_cast<at::Tensor>(made);
}

BsrFromCsr GraphInfo::Bsr(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t block_h,
                          int64_t block_w) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(columns, block_h, block_w);
  auto found = bsr_.find(key);
  if (found != bsr_.end()) return found->second;
  ICHECK(summary_.max_index < columns) << "BSR conversion with too few columns";
  const SparsetirLauncher launcher = TorchLauncher();
  BsrFromCsr out = WithIndexPointers(indptr, indices, [&](auto* ip, auto* ix) {
    auto b = CsrToBsr(ip, ix, summary_.rows, columns, block_h, block_w, &launcher);
    return BsrFromCsr{VectorToTensor(std::move(b.indptr)), VectorToTensor(std::move(b.indices)),
                      VectorToTensor(std::move(b.slot))};
  });
  bsr_.emplace(key, out);
  return out;
}

EllFromCsr GraphInfo::Ell(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices,
                          int64_t width) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = ell_.find(width);
  if (found != ell_.end()) return found->second;
  const SparsetirLauncher launcher = TorchLauncher();
  EllFromCsr out = WithIndexPointers(indptr, indices, [&](auto* ip, auto* ix) {
    auto ell = CsrToEll(op, ip, ix, summary_.rows, width, &launcher);
    return EllFromCsr{VectorToTensor(std::move(ell.indices)).view({summary_.rows, width}),
                      VectorToTensor(std::move(ell.slot))};
  });
  ell_.emplace(width, out);
  return out;
}

HybFromCsr GraphInfo::Hyb(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices,
                          int64_t columns, int64_t parts, int64_t max_width) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(columns, parts, max_width);
  auto found = hyb_.find(key);
  if (found != hyb_.end()) return found->second;
  ICHECK(summary_.max_index < columns) << "hyb conversion with too few columns";
  const SparsetirLauncher launcher = TorchLauncher();
  HybFromCsr out = WithIndexPointers(indptr, indices, [&](auto* ip, auto* ix) {
    auto hyb = CsrToHyb(op, ip, ix, summary_.rows, columns, parts, max_width, &launcher);
    std::vector<int64_t> info;
    for (int64_t b = 0; b < hyb.buckets(); ++b) {
      info.insert(info.end(), {hyb.bucket_part[b], hyb.bucket_width[b], hyb.bucket_rows[b]});
    }
    return HybFromCsr{VectorToTensor(std::move(info)).view({hyb.buckets(), 3}),
                      VectorToTensor(std::move(hyb.row_map)), VectorToTensor(std::move(hyb.indices)),
                      VectorToTensor(std::move(hyb.slot))};
  });
  hyb_.emplace(key, out);
  return out;
}

std::shared_ptr<void> GraphInfo::Derived(const std::string& key, const std::function<std::shared_ptr<void>()>& make) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = derived_.find(key);
    if (found != derived_.end()) return found->second;
  }
  std::shared_ptr<void> made = make();
  std::lock_guard<std::mutex> lock(mutex_);
  return derived_.emplace(key, std::move(made)).first->second;
}

std::shared_ptr<GraphInfo> ValidatedGraph(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices) {
  // Inference tensors have no version counter, so nothing can tell whether
  // they changed: validate them on every call.
  const bool cacheable = !indptr.is_inference() && !indices.is_inference();
  std::shared_ptr<GraphInfo> cached = cacheable ? Cache().Lookup(indptr, indices) : nullptr;
  const bool recheck = ValidateEveryCall();
  if (cached && !recheck) return cached;
  // A structure on a GPU is validated once, through host copies (one
  // transfer per graph; the cache keys on the device tensors themselves).
  const at::Tensor host_indptr = indptr.is_cuda() ? indptr.cpu() : indptr;
  const at::Tensor host_indices = indices.is_cuda() ? indices.cpu() : indices;
  const uint64_t digest = recheck ? StructureDigest(host_indptr, host_indices) : 0;
  // Re-checked and unchanged since the entry was validated: the contents are
  // the ones that passed, and the entry's derived forms hold.
  if (cached && cached->digest() == digest) return cached;
  const CsrSummary summary = Validate(op, host_indptr, host_indices);
  auto info = std::make_shared<GraphInfo>(summary);
  info->set_digest(digest);
  if (cacheable) Cache().Insert(indptr, indices, info);
  return info;
}

GraphCacheStats GetGraphCacheStats() { return Cache().Stats(); }
void ClearGraphCache() { Cache().Clear(); }
void SetGraphCacheCapacity(int64_t capacity) { Cache().SetCapacity(capacity); }

}  // namespace sparsetir::ops
