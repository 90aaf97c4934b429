#include "validated_calls.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "tensor_fingerprint.h"

namespace sparsetir::ops {
namespace {

struct Entry {
  std::weak_ptr<Kernel> kernel;  // a dead kernel's address may be reused
  std::vector<Fingerprint> structure;
  std::vector<int64_t> scalars;
  bool Dead() const {
    bool dead = kernel.expired();
    for (const Fingerprint& f : structure) dead |= f.Expired();
    return dead;
  }
};

// A kernel may serve several structures in turn (the ELL buckets of one hyb
// matrix share a kernel): it remembers the last few, newest last.
constexpr size_t kPerKernel = 16;
// Kernels are few; past this many the entries of dead kernels or dead tensors
// are dropped.
constexpr size_t kPruneAbove = 256;

std::mutex& Mutex() {
  static std::mutex mutex;
  return mutex;
}

using Entries = std::unordered_map<const Kernel*, std::vector<Entry>>;

Entries& AllEntries() {
  static auto* entries = new Entries();  // leaked: no exit-order issues
  return *entries;
}

void Prune(Entries& entries) {
  for (auto it = entries.begin(); it != entries.end();) {
    auto& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(), [](const Entry& e) { return e.Dead(); }), list.end());
    it = list.empty() ? entries.erase(it) : std::next(it);
  }
  if (entries.size() > kPruneAbove) entries.clear();
}

bool Matches(const Entry& e, const std::shared_ptr<Kernel>& kernel, const std::vector<at::Tensor>& structure,
             const std::vector<int64_t>& scalars) {
  if (e.kernel.lock() != kernel || e.scalars != scalars || e.structure.size() != structure.size()) return false;
  for (size_t i = 0; i < structure.size(); ++i) {
    if (!e.structure[i].Matches(structure[i])) return false;
  }
  return true;
}

}  // namespace

bool StructureAlreadyValidated(const std::shared_ptr<Kernel>& kernel, const std::vector<at::Tensor>& structure,
                               const std::vector<int64_t>& scalars) {
  std::lock_guard<std::mutex> lock(Mutex());
  auto found = AllEntries().find(kernel.get());
  if (found == AllEntries().end()) return false;
  for (const Entry& e : found->second) {
    if (Matches(e, kernel, structure, scalars)) return true;
  }
  return false;
}

void RememberValidated(const std::shared_ptr<Kernel>& kernel, const std::vector<at::Tensor>& structure,
                       const std::vector<int64_t>& scalars) {
  Entry entry{kernel, {}, scalars};
  for (const at::Tensor& t : structure) entry.structure.emplace_back(t);
  std::lock_guard<std::mutex> lock(Mutex());
  Entries& entries = AllEntries();
  if (entries.size() >= kPruneAbove) Prune(entries);
  std::vector<Entry>& list = entries[kernel.get()];
  if (!list.empty() && list.front().kernel.lock() != kernel) list.clear();  // an earlier kernel at this address
  if (list.size() >= kPerKernel) list.erase(list.begin());
  list.push_back(std::move(entry));
}

}  // namespace sparsetir::ops
