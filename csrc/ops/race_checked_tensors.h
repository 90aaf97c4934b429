// The SIMT emulator's race check (runtime/simt_race_check.h) over a kernel's
// tensor arguments: every tensor may be written, so every one is compared.
#pragma once

#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/simt_race_check.h"

namespace sparsetir::ops {

// `names[i]` names `tensors[i]` in the report; undefined tensors (the
// scalar arguments' places) are skipped.
inline void RunRaceCheckedOnTensors(const std::string& kernel, const std::vector<at::Tensor>& tensors,
                                    const std::vector<std::string>& names, const std::function<void()>& launch) {
  std::vector<RaceCheckedBuffer> buffers;
  for (size_t i = 0; i < tensors.size() && i < names.size(); ++i) {
    if (!tensors[i].defined()) continue;
    buffers.push_back({names[i], tensors[i].data_ptr(), tensors[i].nbytes(),
                       static_cast<size_t>(tensors[i].element_size())});
  }
  RunRaceChecked(kernel, buffers, launch);
}

}  // namespace sparsetir::ops
