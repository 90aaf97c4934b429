// The kernel cache: generated source -> loaded module.
//
//  - In memory: a table keyed by the content key, so a repeated build is a lookup.
//  - On disk: content-addressed files <key>.so (+ <key>.cc, the source, kept for
//    error messages and inspection, and <key>.sha256, the object's checksum).
//    The key hashes the source, the compiler's identity and flags, the library
//    version and the target. Writes are atomic (temporary file, then rename);
//    one OS file lock per key makes concurrent processes compile once; an object
//    whose checksum does not match (truncated, corrupt) is rebuilt.
//  - Directory: $SPARSETIR_CACHE_DIR, else $XDG_CACHE_HOME/sparsetir, else
//    ~/.cache/sparsetir. If it cannot be written, a private temporary directory
//    is used and a warning is printed once.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "runtime/module.h"

namespace sparsetir {

struct CacheStats {
  std::atomic<int64_t> compiles{0};     // objects built by the system compiler
  std::atomic<int64_t> disk_hits{0};    // objects loaded from the disk cache
  std::atomic<int64_t> memory_hits{0};  // builds answered by the in-memory table
};

// Returns the module for `source` (target "cpu"), compiling it at most once.
std::shared_ptr<Module> GetOrBuildCpuModule(const std::string& source);

// The directory in use (resolving the fallback on first call).
std::string CacheDirectory();
CacheStats& GetCacheStats();
// Forgets the in-memory table (the disk cache stays); used by tests.
void ClearMemoryCache();

}  // namespace sparsetir
