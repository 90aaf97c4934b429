// The kernel cache: generated source -> loaded module.
//
//  - In memory: a table keyed by the content key, so a repeated build is a lookup.
//  - On disk: content-addressed files <key>.so (+ <key>.cc, the source, kept for
//    error messages and inspection, and <key>.sha256, the checksum of the key
//    and the object, so an object copied under another key does not match).
//    The key hashes the source, the compiler's identity and flags, the library
//    version and the target (for the CPU: its instruction-set level). Files are written 0600 and atomically (temporary
//    file, then rename; the temporary file is removed on failure); one OS file
//    lock per key makes concurrent processes compile once; an object whose
//    checksum does not match (truncated, corrupt, copied) is rebuilt.
//  - Trust (runtime/cache_trust.h): objects are loaded only from a private
//    directory (ours, 0700, no group/other write) and only when the object and
//    its checksum are our own regular files that no one else can write.
//  - Directory: $SPARSETIR_CACHE_DIR, else $XDG_CACHE_HOME/sparsetir, else
//    ~/.cache/sparsetir, created 0700 (and again if it is deleted while
//    running). If it cannot be used or is not private, or none of the three
//    variables is set, a new private directory (mkdtemp) is used for the
//    process, with a warning in the first two cases, and removed at exit.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "target.h"

namespace sparsetir {

struct CacheStats {
  std::atomic<int64_t> compiles{0};     // objects built by the system compiler
  std::atomic<int64_t> disk_hits{0};    // objects loaded from the disk cache
  std::atomic<int64_t> memory_hits{0};  // builds answered by the in-memory table
};

// Returns the module for `source` built for the cpu target `target`,
// compiling it at most once. The key holds the target (its level and
// extensions), so a cache directory shared by machines of different levels
// never loads one level's object on another.
std::shared_ptr<CpuModule> GetOrBuildCpuModule(const std::string& source, const Target& target);

// The device image of the CUDA source `source` for sm_<arch>: a CUBIN from
// NVRTC (PTX where NVRTC does not list the architecture), cached beside the
// CPU kernels with the same discipline (<key>.cubin, <key>.cu, the key hashing
// the source, NVRTC's version, the architecture, the options and the library
// version). `options` are NVRTC's, after the architecture (-I, -D, ...). A
// compile error carries NVRTC's log and the path of the saved source.
std::string GetOrBuildCudaImage(const std::string& source, int arch, const std::vector<std::string>& options = {});

// The same for an instance of a template kernel (`name_expression`, such as
// "k<float, 4>", part of the key): the image and the instance's name in it
// (cached with the image, which NVRTC alone can tell).
struct CudaImage {
  std::string image;
  std::string lowered_name;
};
CudaImage GetOrBuildCudaImage(const std::string& source, int arch, const std::vector<std::string>& options,
                              const std::string& name_expression);

// The directory in use (resolving the fallback on first call).
std::string CacheDirectory();
CacheStats& GetCacheStats();
// Forgets the in-memory table (the disk cache stays); used by tests.
void ClearMemoryCache();

}  // namespace sparsetir
