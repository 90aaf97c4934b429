#include "runtime/cpu_compiler.h"

#include <cstdlib>

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
  // -march=native: kernels are built on the machine that runs them, so they may
  // use every vector extension it has (AVX-512 where present).
  flags_ = {"-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-fno-plt", "-w"};
  if (path_.empty()) return;
  ProcessResult version = RunProcess({path_, "--version"});
  std::string first_line = version.output.substr(0, version.output.find('\n'));
  identity_ = path_ + "|" + first_line + "|";
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

void CpuCompiler::CompileShared(const std::string& source_path, const std::string& output_path) const {
  std::vector<std::string> argv = {path_};
  argv.insert(argv.end(), flags_.begin(), flags_.end());
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
