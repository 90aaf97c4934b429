// Shared by cache_read and cache_write: the region of a buffer one iteration of
// a loop touches, and the rewrite of the loop body onto a scoped copy.
#pragma once

#include <string>

#include "ir/function.h"

namespace sparsetir {

enum class CacheDirection { kRead, kWrite };

// Rewrites `loop_name` of stage-III `f` so that its body uses a `scope` copy of
// buffer `buffer_name`: copied in before the body (unless, for kWrite, the
// body begins by overwriting the whole copy, as a reduction's init does) and,
// for kWrite, copied out after it. Returns the new function; *cache_name is set.
PrimFunc CacheRewrite(const PrimFunc& f, const std::string& loop_name, const std::string& buffer_name,
                      const std::string& scope, CacheDirection direction, std::string* cache_name);

}  // namespace sparsetir
