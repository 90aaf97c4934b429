#include "runtime/cpu_compiler.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "support/error.h"
#include "support/process.h"

namespace sparsetir {

CpuCompiler::CpuCompiler() {
  std::vector<std::string> candidates;
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) candidates.push_back(cxx);
  for (const char* name : {"c++", "g++", "clang++"}) candidates.push_back(name);
  for (const std::string& candidate : candidates) {
    path_ = FindProgram(candidate);
    if (!path_.empty()) break;
  }
  // No -march here: the target adds its level's (Target::CompilerFlags), so
  // that a kernel uses exactly the extensions its cache key names.
  flags_ = {"-std=c++17", "-O3", "-fPIC", "-shared", "-fno-math-errno", "-fno-plt", "-w"};
  if (path_.empty()) return;
  // The resolved binary's path, size and modification time identify it: an
  // upgrade changes them. (Asking `--version` would cost a process spawn on
  // every cold start, which dominates loading a cached kernel.)
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(path_, ec);
  struct stat st {};
  std::string resolved = ec ? path_ : real.string();
  stat(resolved.c_str(), &st);
  identity_ = resolved + "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtime) + "|";
  for (const std::string& f : flags_) identity_ += f + " ";
}

const CpuCompiler& CpuCompiler::Get() {
  static const CpuCompiler instance;
  if (instance.path_.empty()) {
    throw UserError(UserErrorKind::kCompile,
                    "no C++ compiler found: sparsetir compiles CPU kernels at their first call and needs one. "
                    "Install g++ (Debian/Ubuntu: apt-get install g++) or set $CXX to a compiler's path.");
  }
  return instance;
}

void CpuCompiler::CompileShared(const std::string& source_path, const std::string& output_path,
                                const Target& target) const {
  std::vector<std::string> argv = {path_};
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  for (const std::string& flag : target.CompilerFlags()) argv.push_back(flag);
  argv.insert(argv.end(), {source_path, "-o", output_path});
  ProcessResult result = RunProcess(argv);
  if (result.exit_code != 0) {
    std::string log = result.output.size() > 20000 ? result.output.substr(0, 20000) + "\n[log truncated]" : result.output;
    throw UserError(UserErrorKind::kCompile, "the C++ compiler failed (exit code " + std::to_string(result.exit_code) +
                                                 ") on the generated source " + source_path + "\ncompiler: " + path_ +
                                                 "\n" + log);
  }
}

}  // namespace sparsetir
