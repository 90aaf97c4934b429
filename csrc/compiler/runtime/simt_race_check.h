// The SIMT emulator's race check (SPARSETIR_EMULATE_ORDER=check): a launch
// runs with the threads of every block in order, then again from the same
// inputs with them reversed, and again shuffled; a buffer whose bytes differ
// from the first run was written in an order that depends on how threads
// interleave: a race (or floating-point atomics, whose sums depend on the
// order). The check fails naming the kernel, the buffer, the first element
// that differs and the order, and leaves the last run's results in place.
//
// A kernel that adds floating-point values atomically (rows cut into
// segments that meet in the output) depends on the order by design, as on a
// GPU: it is not compared (RaceCheckApplies), and runs once.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace sparsetir {

// A buffer the launch may write: its name in messages, its bytes and the
// size of one element (to say which element differs).
struct RaceCheckedBuffer {
  std::string name;
  void* data = nullptr;
  size_t bytes = 0;
  size_t element_bytes = 1;
};

// False for a CUDA source that adds floating-point values atomically.
bool RaceCheckApplies(const std::string& cuda_source);

// Runs `launch` forward, reversed and shuffled as described above; throws
// std::runtime_error on a difference.
void RunRaceChecked(const std::string& kernel, const std::vector<RaceCheckedBuffer>& buffers,
                    const std::function<void()>& launch);

}  // namespace sparsetir
