#include "target.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "support/error.h"

namespace sparsetir {
namespace {

struct CpuLevel {
  const char* name;
  const char* march;      // the system compiler's -march for the level
  const char* alias;      // the -march name users may also write
  int64_t vector_bytes;
  int64_t vector_registers;
  bool x86;
};

// generic is the x86-64 baseline on x86 hosts; elsewhere it adds no -march
// (the compiler's default for the host).
constexpr CpuLevel kLevels[] = {
    {"generic", "x86-64", "x86-64", 16, 16, true},
    {"avx2", "x86-64-v3", "x86-64-v3", 32, 16, true},
    {"avx512", "x86-64-v4", "x86-64-v4", 64, 32, true},
    {"neon", "armv8-a", "armv8-a", 16, 32, false},
    {"sve", "armv8.2-a+sve", "armv8.2-a+sve", 16, 32, false},
};

const CpuLevel& LevelOf(const std::string& name) {
  for (const CpuLevel& level : kLevels) {
    if (name == level.name) return level;
  }
  ICHECK(false) << "no cpu level named '" << name << "'";
  return kLevels[0];
}

std::string KnownLevels() {
  std::string known;
  for (const CpuLevel& level : kLevels) known += std::string(known.empty() ? "" : ", ") + level.name + " (" + level.alias + ")";
  return known;
}

// The extensions beyond its level that the host has and kernels use.
std::vector<std::string> HostExtras(const std::string& level) {
  std::vector<std::string> extras;
#if defined(__x86_64__) && defined(__GNUC__)
  // AVX512-BF16 converts float32 to bfloat16 in one instruction.
  if (level == "avx512" && __builtin_cpu_supports("avx512bf16")) extras.push_back("avx512bf16");
#else
  (void)level;
#endif
  return extras;
}

bool HostIsX86() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

// Whether this CPU executes code of `level`.
bool HostRuns(const std::string& level) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (level == "generic") return true;
#if defined(__clang__)
  // Clang (14 at least) rejects the "x86-64-vN" names: ask for each level's
  // defining features instead.
  if (level == "avx2") {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
  }
  if (level == "avx512") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
  }
#else
  if (level == "avx2") return __builtin_cpu_supports("x86-64-v3");
  if (level == "avx512") return __builtin_cpu_supports("x86-64-v4");
#endif
  return false;
#elif defined(__aarch64__) && defined(__linux__)
  if (level == "generic" || level == "neon") return true;
  if (level == "sve") return (getauxval(AT_HWCAP) & HWCAP_SVE) != 0;
  return false;
#else
  return level == "generic";
#endif
}

std::string DetectedLevel() {
  for (const char* level : {"avx512", "avx2", "sve", "neon"}) {
    if (LevelOf(level).x86 == HostIsX86() && HostRuns(level)) return level;
  }
  return "generic";
}

// HostCpu's answer: the target, or why $SPARSETIR_CPU_ISA cannot be honoured.
struct HostAnswer {
  Target target;
  std::string error;
};

HostAnswer ResolveHost() {
  HostAnswer answer;
  answer.target = Target::DetectedCpu();
  const char* env = std::getenv("SPARSETIR_CPU_ISA");
  if (!env || !*env || std::string(env) == "native") return answer;
  try {
    Target wanted = Target::Cpu(env);
    if (wanted.is_x86() != HostIsX86() || !HostRuns(wanted.arch)) {
      answer.error = std::string("SPARSETIR_CPU_ISA=") + env + " asks for " + wanted.arch +
                     " code, which this CPU cannot run (it runs " + answer.target.arch +
                     "); unset it or name a level at or below that one";
      return answer;
    }
    // Extensions follow the host only at the level it was detected at.
    if (wanted.arch == answer.target.arch) wanted.features = answer.target.features;
    answer.target = wanted;
  } catch (const UserError& e) {
    answer.error = std::string("SPARSETIR_CPU_ISA: ") + e.what();
  }
  return answer;
}

}  // namespace

const std::vector<std::string>& CpuLevels() {
  static const std::vector<std::string> levels = [] {
    std::vector<std::string> names;
    for (const CpuLevel& level : kLevels) names.push_back(level.name);
    return names;
  }();
  return levels;
}

Target Target::Cpu(const std::string& isa) {
  for (const CpuLevel& level : kLevels) {
    if (isa == level.name || isa == level.alias) {
      Target t;
      t.kind = TargetKind::kCpu;
      t.arch = level.name;
      return t;
    }
  }
  throw UserError(UserErrorKind::kArgument, "unknown CPU instruction set '" + isa + "'; known: " + KnownLevels());
}

std::vector<std::string> Target::RunnableCpuLevels() {
  std::vector<std::string> levels;
  for (auto level = std::rbegin(kLevels); level != std::rend(kLevels); ++level) {
    if (level->x86 == HostIsX86() && HostRuns(level->name)) levels.push_back(level->name);
  }
  return levels;
}

Target Target::DetectedCpu() {
  Target t = Cpu(DetectedLevel());
  t.features = HostExtras(t.arch);
  return t;
}

const Target& Target::HostCpu() {
  static const HostAnswer answer = ResolveHost();
  if (!answer.error.empty()) throw UserError(UserErrorKind::kArgument, answer.error);
  return answer.target;
}

Target Target::Cuda(int sm) {
  Target t;
  t.kind = TargetKind::kCuda;
  t.arch = sm > 0 ? "sm_" + std::to_string(sm) : "";
  return t;
}

Target Target::Parse(const std::string& text) {
  if (text == "cpu") return HostCpu();
  if (text == "cuda") return Cuda();
  if (text.rfind("cpu:", 0) == 0) return Cpu(text.substr(4));
  if (text.rfind("cuda:sm_", 0) == 0) {
    const std::string digits = text.substr(8);
    if (!digits.empty() && digits.size() <= 3 && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
      return Cuda(std::stoi(digits));
    }
  }
  throw UserError(UserErrorKind::kArgument, "unknown target '" + text +
                                                "'; use \"cpu\", \"cuda\", \"cpu:<isa>\" (isa: " + KnownLevels() +
                                                ") or \"cuda:sm_XY\"");
}

int64_t Target::vector_bytes() const { return is_cuda() ? 16 : LevelOf(arch).vector_bytes; }

int64_t Target::vector_registers() const { return is_cuda() ? 1 : LevelOf(arch).vector_registers; }

bool Target::is_x86() const {
  if (!is_cpu()) return false;
  // generic is the host family's baseline.
  return arch == "generic" ? HostIsX86() : LevelOf(arch).x86;
}

std::vector<std::string> Target::CompilerFlags() const {
  ICHECK(is_cpu()) << "compiler flags of a " << str() << " target";
  std::vector<std::string> flags;
  if (arch != "generic" || HostIsX86()) flags.push_back(std::string("-march=") + LevelOf(arch).march);
  // Tuning never changes which instructions are used, only their choice and
  // order, so the host's tuning is safe for any level it runs.
  if (is_x86() == HostIsX86()) flags.push_back("-mtune=native");
  for (const std::string& feature : features) flags.push_back("-m" + feature);
  return flags;
}

std::string Target::str() const {
  std::string text = is_cpu() ? "cpu" : "cuda";
  if (!arch.empty()) text += ":" + arch;
  for (const std::string& feature : features) text += "+" + feature;
  return text;
}

}  // namespace sparsetir
