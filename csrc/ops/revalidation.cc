#include "revalidation.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sparsetir::ops {
namespace {

bool EnabledByEnvironment() {
  const char* value = std::getenv("SPARSETIR_VALIDATE");
  return value != nullptr && std::string(value) == "always";
}

std::atomic<bool>& Enabled() {
  static std::atomic<bool> enabled{EnabledByEnvironment()};
  return enabled;
}

// Four independent multiply-xor lanes over 8-byte words, so the pass runs at
// memory speed rather than at the latency of one multiply per word.
uint64_t DigestBytes(const unsigned char* data, size_t size, uint64_t seed) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t lane[4] = {seed ^ size, seed + kMul, seed ^ (kMul >> 7), seed - kMul};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int l = 0; l < 4; ++l) {
      uint64_t word;
      std::memcpy(&word, data + i + 8 * l, 8);
      lane[l] = (lane[l] ^ word) * kMul;
      lane[l] ^= lane[l] >> 29;
    }
  }
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    lane[0] = (lane[0] ^ word) * kMul;
    lane[0] ^= lane[0] >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, data + i, size - i);  // fewer than 8 bytes left
  uint64_t h = (lane[0] ^ tail) * kMul;
  for (int l = 1; l < 4; ++l) h = (h ^ lane[l] ^ (h >> 31)) * kMul;
  return h ^ (h >> 33);
}

uint64_t DigestTensor(const at::Tensor& t, uint64_t seed) {
  return DigestBytes(static_cast<const unsigned char*>(t.data_ptr()), t.numel() * t.element_size(), seed);
}

}  // namespace

bool ValidateEveryCall() { return Enabled().load(std::memory_order_relaxed); }
void SetValidateEveryCall(bool enabled) { Enabled().store(enabled, std::memory_order_relaxed); }

uint64_t StructureDigest(const at::Tensor& indptr, const at::Tensor& indices) {
  const uint64_t digest = DigestTensor(indices, DigestTensor(indptr, 0x5A17D16E57ull));
  return digest != 0 ? digest : 1;  // 0 marks an entry made without the re-check
}

}  // namespace sparsetir::ops
