// Target: the one description of what generated code is for.
//
// A JIT compiler knows the machine at the first call, so the CPU target names
// the instruction-set level the kernels may use; recipes size their vectors
// and register tiles from it, the system compiler gets its -march from it, and
// the kernel cache keys objects by it (a cache shared by two machines never
// hands one machine's AVX-512 code to the other).
//
//   cpu levels  generic  x86-64 baseline (SSE2): 16-byte vectors, 16 registers
//               avx2     x86-64-v3 (AVX2, FMA, F16C): 32-byte vectors, 16 registers
//               avx512   x86-64-v4 (AVX-512 F/BW/CD/DQ/VL): 64-byte vectors, 32 registers
//               neon     armv8-a (Advanced SIMD): 16-byte vectors, 32 registers
//               sve      armv8.2-a+sve: kernels use its 128-bit NEON view (16 bytes, 32 registers)
//   cuda        arch "sm_XY", or "" for the device a kernel runs on
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparsetir {

enum class TargetKind { kCpu, kCuda };

struct Target {
  TargetKind kind = TargetKind::kCpu;
  // cpu: the level ("generic", "avx2", "avx512", "neon", "sve"); cuda: "sm_XY" or "".
  std::string arch = "generic";
  // cpu: extensions beyond the level that kernels may use, sorted (for
  // example "avx512bf16"); each becomes a -m<feature> compiler flag.
  std::vector<std::string> features;

  // The CPU target for `isa`: a level above, or an -march alias of one
  // ("x86-64", "x86-64-v3", "x86-64-v4", "armv8-a"). Unknown names raise a
  // user error listing the known ones.
  static Target Cpu(const std::string& isa);
  // The CPU this process runs on, detected once (cpuid / getauxval). With
  // $SPARSETIR_CPU_ISA set, that level instead, so that every level can be
  // built and measured on one machine; a level this CPU cannot execute is a
  // user error naming the variable and the missing extension.
  static const Target& HostCpu();
  // The detected level, ignoring $SPARSETIR_CPU_ISA.
  static Target DetectedCpu();
  // The CPU levels this machine executes, best first: the detected level
  // and the levels of its family below it.
  static std::vector<std::string> RunnableCpuLevels();
  // A cuda target; `sm` = 0: the architecture of the device that runs it.
  static Target Cuda(int sm = 0);
  // "cpu", "cuda", "cpu:<isa>", "cuda:sm_XY": what users pass as `target`.
  // "cpu" is HostCpu().
  static Target Parse(const std::string& text);

  bool is_cpu() const { return kind == TargetKind::kCpu; }
  bool is_cuda() const { return kind == TargetKind::kCuda; }
  // The width of one SIMD register in bytes (cuda: 16, a float4 load).
  int64_t vector_bytes() const;
  // How many SIMD registers the code generator's vectors may occupy.
  int64_t vector_registers() const;
  // The widest vector of `element_bytes`-byte lanes that fills one register.
  int64_t max_lanes(int64_t element_bytes) const { return vector_bytes() / element_bytes; }
  // True for levels of the x86-64 family (generic, avx2, avx512).
  bool is_x86() const;
  // The system compiler's flags for this level: -march=... plus -m<feature>.
  std::vector<std::string> CompilerFlags() const;
  // "cpu:avx2", "cpu:avx512+avx512bf16", "cuda:sm_90", "cuda": in cache keys,
  // messages and st.explain.
  std::string str() const;

  bool operator==(const Target& other) const {
    return kind == other.kind && arch == other.arch && features == other.features;
  }
  bool operator!=(const Target& other) const { return !(*this == other); }
};

// The CPU levels, in the order of the table above.
const std::vector<std::string>& CpuLevels();

}  // namespace sparsetir
