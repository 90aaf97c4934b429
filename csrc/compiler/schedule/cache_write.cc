// cache_write: inside a loop, a buffer is accumulated in a copy in local (or
// shared) scope and written back after the loop body: the register-resident
// output row of an SpMM.
//
// Before:  for i in T.serial(m):
//              for k_init ...: C[i, k_init] = 0
//              for j ...: for k ...: C[i, k] = C[i, k] + A[...] * B[...]
// After:   C_local = sch.cache_write("i", "C", "local")
//          for i in T.serial(m):
//              C_local = T.alloc_buffer((128,), "float32", scope="local")
//              (copy in) ... C_local[k] = C_local[k] + ... (copy out) C[i, ax0] = C_local[ax0]
// The copies are vectorized with the widest vectors the body already has (the
// recipe's choice for its target), 64 bytes when it has none.
// When the loop adds into the buffer with T.atomic_add, the copy starts at 0,
// the body accumulates into it privately, and the copy out is one
// T.atomic_add per element.
#include "schedule/cache.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {

std::string Schedule::CacheWrite(const std::string& loop, const std::string& buffer, const std::string& scope) {
  EnsureStageIII("cache_write");
  std::string name;
  func_ = CacheRewrite(func_, loop, buffer, scope, CacheDirection::kWrite, &name);
  Record(name + " = sch.cache_write(" + PyStr(loop) + ", " + PyStr(buffer) + ", " + PyStr(scope) + ")");
  return name;
}

}  // namespace sparsetir
