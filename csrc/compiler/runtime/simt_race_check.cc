#include "runtime/simt_race_check.h"

#include <cstring>
#include <stdexcept>

#include "runtime/simt_scheduler.h"

namespace sparsetir {
namespace {

std::vector<std::vector<char>> Snapshot(const std::vector<RaceCheckedBuffer>& buffers) {
  std::vector<std::vector<char>> copies;
  for (const RaceCheckedBuffer& b : buffers) {
    const char* data = static_cast<const char*>(b.data);
    copies.emplace_back(data, data + b.bytes);
  }
  return copies;
}

void Restore(const std::vector<RaceCheckedBuffer>& buffers, const std::vector<std::vector<char>>& copies) {
  for (size_t k = 0; k < buffers.size(); ++k) {
    if (buffers[k].bytes) std::memcpy(buffers[k].data, copies[k].data(), buffers[k].bytes);
  }
}

}  // namespace

bool RaceCheckApplies(const std::string& cuda_source) {
  // The prelude defines the atomic helpers; a kernel calls them in its body.
  const size_t body = cuda_source.find("__global__");
  return body == std::string::npos || cuda_source.find("sparsetir_atomic_add", body) == std::string::npos;
}

void RunRaceChecked(const std::string& kernel, const std::vector<RaceCheckedBuffer>& buffers,
                    const std::function<void()>& launch) {
  const std::vector<std::vector<char>> inputs = Snapshot(buffers);
  {
    ScopedSimtOrder forward(SimtOrder::kForward);
    launch();
  }
  const std::vector<std::vector<char>> first = Snapshot(buffers);
  // Reversed catches any race between two threads; shuffled, orders that
  // neither end of the block produces.
  for (SimtOrder order : {SimtOrder::kReverse, SimtOrder::kShuffled}) {
    Restore(buffers, inputs);
    {
      ScopedSimtOrder other(order);
      launch();
    }
    for (size_t k = 0; k < buffers.size(); ++k) {
      const RaceCheckedBuffer& b = buffers[k];
      if (b.bytes == 0 || std::memcmp(first[k].data(), b.data, b.bytes) == 0) continue;
      size_t at = 0;
      const char* now = static_cast<const char*>(b.data);
      while (first[k][at] == now[at]) ++at;
      const size_t element = at / (b.element_bytes ? b.element_bytes : 1);
      throw std::runtime_error("SIMT emulator race check: kernel '" + kernel + "' wrote different values to '" +
                               b.name + "' (first at element " + std::to_string(element) + ") when the threads of " +
                               "its blocks ran " + (order == SimtOrder::kReverse ? "in reverse" : "shuffled") +
                               ": threads race on it, or floating-point atomics sum it in an order that depends on "
                               "them");
    }
  }
}

}  // namespace sparsetir
