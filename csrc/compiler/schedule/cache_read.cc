// cache_read: inside a loop, reads of a buffer go to a copy in local or
// shared scope, filled before the loop body.
//
// Before:  for i in T.serial(m):
//              ... B[i, k] ...
// After:   B_local = sch.cache_read("i", "B", "local")
//          for i in T.serial(m):
//              B_local = T.alloc_buffer((128,), "float32", scope="local")
//              for ax0 ...: B_local[ax0] = B[i, ax0]
//              ... B_local[k] ...
#include "schedule/cache.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {

std::string Schedule::CacheRead(const std::string& loop, const std::string& buffer, const std::string& scope) {
  EnsureStageIII("cache_read");
  std::string name;
  func_ = CacheRewrite(func_, loop, buffer, scope, CacheDirection::kRead, &name);
  Record(name + " = sch.cache_read(" + PyStr(loop) + ", " + PyStr(buffer) + ", " + PyStr(scope) + ")");
  return name;
}

}  // namespace sparsetir
