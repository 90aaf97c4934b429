// Whole-number settings read from the environment (the cuda kernels'
// choices a user may override, such as $SPARSETIR_CUDA_ROW_SEGMENT).
#pragma once

#include <cstdint>

namespace sparsetir::ops {

// The value of the environment variable `name`, a whole number in
// [0, `most`], or `fallback` when unset; anything else is a ValueError that
// names the variable and says what it takes (`what`).
int64_t EnvSetting(const char* name, int64_t fallback, int64_t most, const char* what);

}  // namespace sparsetir::ops
