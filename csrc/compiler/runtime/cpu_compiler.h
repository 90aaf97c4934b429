// The system C++ compiler, used to build generated CPU kernels into shared
// objects. Chosen from $CXX, else c++ / g++ / clang++ on PATH.
#pragma once

#include <string>
#include <vector>

#include "target.h"

namespace sparsetir {

class CpuCompiler {
 public:
  // The process-wide instance; throws a CompileError saying what to install
  // when no compiler is found.
  static const CpuCompiler& Get();

  const std::string& path() const { return path_; }
  // "<resolved path>|<size>|<mtime>|<flags>": part of every cache key, so a
  // compiler upgrade or a flag change never reuses a stale object. The
  // target's flags are not in it: the key holds the target itself.
  const std::string& identity() const { return identity_; }

  // Compiles `source_path` into the shared object `output_path` for `target`
  // (a cpu target: its -march and extensions). On failure throws a
  // CompileError carrying the compiler's log and the source path.
  void CompileShared(const std::string& source_path, const std::string& output_path, const Target& target) const;

 private:
  CpuCompiler();
  std::string path_;
  std::string identity_;
  std::vector<std::string> flags_;
};

}  // namespace sparsetir
