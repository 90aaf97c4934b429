#include "validated_calls.h"

#include <mutex>
#include <unordered_map>

#include "tensor_fingerprint.h"

namespace sparsetir::ops {
namespace {

struct Entry {
  std::weak_ptr<Kernel> kernel;  // a dead kernel's address may be reused
  std::vector<Fingerprint> structure;
  std::vector<int64_t> scalars;
};

// Kernels are few; past this many entries the ones of dead kernels or dead
// tensors are dropped.
constexpr size_t kPruneAbove = 256;

std::mutex& Mutex() {
  static std::mutex mutex;
  return mutex;
}

std::unordered_map<const Kernel*, Entry>& Entries() {
  static auto* entries = new std::unordered_map<const Kernel*, Entry>();  // leaked: no exit-order issues
  return *entries;
}

void Prune(std::unordered_map<const Kernel*, Entry>& entries) {
  for (auto it = entries.begin(); it != entries.end();) {
    bool dead = it->second.kernel.expired();
    for (const Fingerprint& f : it->second.structure) dead |= f.Expired();
    it = dead ? entries.erase(it) : std::next(it);
  }
  if (entries.size() > kPruneAbove) entries.clear();
}

}  // namespace

bool StructureAlreadyValidated(const std::shared_ptr<Kernel>& kernel, const std::vector<at::Tensor>& structure,
                               const std::vector<int64_t>& scalars) {
  std::lock_guard<std::mutex> lock(Mutex());
  auto found = Entries().find(kernel.get());
  if (found == Entries().end()) return false;
  const Entry& e = found->second;
  if (e.kernel.lock() != kernel || e.scalars != scalars || e.structure.size() != structure.size()) return false;
  for (size_t i = 0; i < structure.size(); ++i) {
    if (!e.structure[i].Matches(structure[i])) return false;
  }
  return true;
}

void RememberValidated(const std::shared_ptr<Kernel>& kernel, const std::vector<at::Tensor>& structure,
                       const std::vector<int64_t>& scalars) {
  Entry entry{kernel, {}, scalars};
  for (const at::Tensor& t : structure) entry.structure.emplace_back(t);
  std::lock_guard<std::mutex> lock(Mutex());
  auto& entries = Entries();
  if (entries.size() >= kPruneAbove) Prune(entries);
  entries.insert_or_assign(kernel.get(), std::move(entry));
}

}  // namespace sparsetir::ops
