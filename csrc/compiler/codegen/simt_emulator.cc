#include "codegen/simt_emulator.h"

#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include "codegen/simt_async_copy.h"
#include "codegen/simt_atomic.h"
#include "codegen/simt_barrier.h"
#include "codegen/simt_cooperative_groups.h"
#include "codegen/simt_cub.h"
#include "codegen/simt_cuda_scopes.h"
#include "codegen/simt_float16_library.h"
#include "codegen/simt_float8_library.h"
#include "codegen/simt_latch_semaphore.h"
#include "codegen/simt_pipeline.h"
#include "codegen/simt_wmma.h"

namespace sparsetir {

namespace {

// Headers whose declarations the emulator header makes: an #include of one
// is dropped.
const std::set<std::string>& EmulatedHeaders() {
  static const std::set<std::string> headers = {
      "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h",   "device_launch_parameters.h",
      "vector_types.h", "device_functions.h", "assert.h", "cassert", "cuda_fp16.h", "cuda_bf16.h",
      "cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/scan.h",
      "cooperative_groups/memcpy_async.h", "mma.h", "cuda_pipeline.h", "cuda_pipeline_primitives.h",
      "cuda_fp8.h", "cub/cub.cuh", "cub/block/block_reduce.cuh", "cub/block/block_scan.cuh",
      "cub/warp/warp_reduce.cuh", "cub/warp/warp_scan.cuh", "cuda/functional", "cuda/std/functional",
      "cuda/barrier", "cuda/std/barrier", "cuda/pipeline", "cuda/atomic", "cuda/std/atomic", "cuda/latch",
      "cuda/std/latch", "cuda/semaphore", "cuda/std/semaphore"};
  return headers;
}

// Whether a header is one of those simt_cub.h declares.
bool IsCubHeader(const std::string& header) {
  return header.rfind("cub/", 0) == 0 || header == "cuda/functional" || header == "cuda/std/functional";
}

// std::regex's matcher recurses once per character it matches: a line past
// this length (no declaration is that long) is left to the compiler rather
// than risk the stack.
constexpr size_t kLongestRewrittenLine = 2000;

// The header a line includes (`#include <h>` or `"h"`), or "".
std::string IncludedHeader(const std::string& line) {
  size_t i = 0;
  auto blanks = [&] {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  };
  blanks();
  if (i >= line.size() || line[i] != '#') return "";
  ++i;
  blanks();
  if (line.compare(i, 7, "include") != 0) return "";
  i += 7;
  blanks();
  if (i >= line.size() || (line[i] != '<' && line[i] != '"')) return "";
  const size_t begin = ++i;
  while (i < line.size() && line[i] != '>' && line[i] != '"') ++i;
  return i < line.size() && i > begin ? line.substr(begin, i - begin) : "";
}

std::string RewriteInclude(const std::string& line) {
  const std::string header = IncludedHeader(line);
  if (EmulatedHeaders().count(header)) return std::string("// (declared by the SIMT emulator) ").append(line);
  // The rest of libcu++ (cuda/std/chrono, cuda/std/mdspan, ...).
  if (header.rfind("cuda/", 0) == 0) return "#error \"the SIMT emulator has no " + header + "\"";
  // The rest of CUB and Thrust (cub/block/block_load.cuh, ...): named, with what there is.
  if (header.rfind("cub/", 0) == 0 || header.rfind("thrust/", 0) == 0) {
    return "#error \"the SIMT emulator has no " + header +
           " (of CUB it has WarpReduce, WarpScan, BlockReduce and BlockScan: include cub/cub.cuh)\"";
  }
  return line;
}

// `extern __shared__ [__align__(n)] T name[] [__align__(n)];`: T and name.
std::string RewriteExternShared(const std::string& line) {
  static const std::string align = R"((?:__align__\s*\((?:[^()]|\([^()]*\))*\)\s*)?)";
  static const std::regex declaration(R"(\bextern\s+__shared__\s+)" + align + R"(([A-Za-z_][\w\s:<>,*]*?)\s*)" +
                                      align + R"(\b([A-Za-z_]\w*)\s*\[\s*\]\s*)" + align + ";");
  if (line.size() > kLongestRewrittenLine || line.find("__shared__") == std::string::npos) return line;
  return std::regex_replace(line, declaration, "static thread_local $1(&$2)[] = *($1(*)[])sparsetir_dynamic_shared();");
}

// `__shared__ alignas(n) T name[...]`: alignas first, as __shared__ becomes
// `static thread_local` and C++ takes no attribute between decl-specifiers.
std::string RewriteSharedAlignas(const std::string& line) {
  static const std::regex shared_alignas(R"(\b__shared__\s+(alignas\s*\((?:[^()]|\([^()]*\))*\)))");
  if (line.size() > kLongestRewrittenLine || line.find("alignas") == std::string::npos) return line;
  return std::regex_replace(line, shared_alignas, "$1 __shared__");
}

}  // namespace

std::string EmulatorSourceFromCuda(const std::string& source) {
  std::istringstream lines(source);
  std::string out, line;
  while (std::getline(lines, line)) out += RewriteSharedAlignas(RewriteExternShared(RewriteInclude(line))) + "\n";
  return out;
}

EmulatorLibraries EmulatorLibrariesFor(const std::string& source) {
  std::istringstream lines(source);
  std::string line;
  bool wmma = false, cooperative_groups = false, async_copy = false, cub = false, barrier = false, pipeline = false,
       std_atomic = false, atomic = false, latch = false, semaphore = false;
  EmulatorLibraries libraries;
  while (std::getline(lines, line)) {
    const std::string header = IncludedHeader(line);
    wmma |= header == "mma.h";
    libraries.float8_types |= header == "cuda_fp8.h";
    // mma.h and cuda_fp8.h include cuda_fp16.h and cuda_bf16.h.
    libraries.float16_types |= header == "cuda_fp16.h" || header == "cuda_bf16.h" || header == "mma.h" ||
                               header == "cuda_fp8.h";
    cooperative_groups |= header.rfind("cooperative_groups", 0) == 0;
    async_copy |= header == "cuda_pipeline.h" || header == "cuda_pipeline_primitives.h";
    cub |= EmulatedHeaders().count(header) && IsCubHeader(header);
    // cuda/pipeline includes cuda/barrier.
    barrier |= header == "cuda/barrier" || header == "cuda/std/barrier" || header == "cuda/pipeline";
    pipeline |= header == "cuda/pipeline";
    std_atomic |= header == "cuda/atomic" || header == "cuda/std/atomic";  // cuda/atomic includes the latter
    atomic |= header == "cuda/atomic";
    latch |= header == "cuda/latch" || header == "cuda/std/latch";  // the former includes the latter
    semaphore |= header == "cuda/semaphore" || header == "cuda/std/semaphore";
  }
  if (libraries.float16_types) libraries.text += SimtFloat16Library();
  if (libraries.float8_types) libraries.text += SimtFloat8Library();
  if (wmma) libraries.text += kSimtWmma;
  if (cooperative_groups) libraries.text += kSimtCooperativeGroups;
  if (async_copy) libraries.text += kSimtAsyncCopy;
  if (cub) libraries.text += kSimtCub;
  if (barrier || std_atomic || latch || semaphore) libraries.text += kSimtCudaScopes;
  if (std_atomic) libraries.text += kSimtStdAtomic;
  if (atomic) libraries.text += kSimtAtomic;
  if (barrier) libraries.text += kSimtBarrier;
  if (pipeline) libraries.text += kSimtPipeline;
  if (latch) libraries.text += kSimtLatch;
  if (semaphore) libraries.text += kSimtSemaphore;
  return libraries;
}

bool KernelSynchronizes(const std::string& cuda_source) {
  // __shfl*_sync, __ballot_sync, __any_sync, __all_sync, __match*_sync; a
  // group's sync() and collectives (cooperative_groups.h) and CUB's warp and
  // block collectives (simt_cub.h) are built on them.
  // cuda/barrier's and cuda/pipeline's waits yield to the runtime, and so do
  // spin points (atomics, fences, __nanosleep, the waits of cuda/latch and
  // cuda/semaphore: a thread may spin until another of its block writes).
  for (const char* name : {"__syncthreads", "__syncwarp", "_sync(", "cooperative_groups", "cub::", "cuda/barrier",
                           "cuda/std/barrier", "cuda/pipeline", "atomic", "__threadfence", "__nanosleep", "latch",
                           "semaphore"}) {
    if (cuda_source.find(name) != std::string::npos) return true;
  }
  return false;
}

std::string SimtEmulatorEntry(const std::string& kernel, const std::vector<std::string>& param_types) {
  // Built with std::string and std::to_string only (no stream formatting of
  // integers, which is locale-dependent and differs between the C++ runtimes
  // a host process may have loaded).
  // Every name of the entry is reserved (sparsetir_*), so that a kernel may
  // be called `grid`, `block` or `args`.
  const size_t n = param_types.size();
  auto arg = [](size_t i) { return "sparsetir_args[" + std::to_string(i) + "]"; };
  std::string s = std::string(kAbiText) + "\n";
  s += "template <typename F> static void sparsetir_task(void* closure, int64_t begin, int64_t end) {\n";
  s += "  (*static_cast<F*>(closure))(begin, end);\n}\n";
  s += "extern \"C\" int32_t " + std::string(kEntrySymbol) +
       "(const SparsetirArg* __restrict__ sparsetir_args, const SparsetirLauncher* sparsetir_launcher) {\n";
  s += "  const sparsetir_uint3 sparsetir_grid = {(unsigned)" + arg(n) + ".i64, (unsigned)" + arg(n + 1) +
       ".i64, (unsigned)" + arg(n + 2) + ".i64};\n";
  s += "  const sparsetir_uint3 sparsetir_block = {(unsigned)" + arg(n + 3) + ".i64, (unsigned)" + arg(n + 4) +
       ".i64, (unsigned)" + arg(n + 5) + ".i64};\n";
  s += "  const SparsetirSimt* sparsetir_launch = (const SparsetirSimt*)" + arg(n + 6) + ".ptr;\n";
  s += "  auto sparsetir_thread = [&] {\n    " + kernel + "(";
  for (size_t i = 0; i < n; ++i) {
    const std::string& type = param_types[i];
    const bool pointer = !type.empty() && type.back() == '*';
    const bool real = type == "float" || type == "double";
    s += i ? ",\n        " : "";
    if (type == kSimtStructArg) {
      s += std::string(kSimtStructArg) + "{" + arg(i) + ".ptr}";
    } else if (pointer) {
      // A pointer of the tensor's element type, or of a vector of it.
      s += "sparsetir_tensor_pointer<std::remove_cv<" + type.substr(0, type.size() - 1) + ">::type>{" + arg(i) +
           ".ptr}";
    } else {
      s += "(" + type + ")" + arg(i) + (real ? ".f64" : ".i64");
    }
  }
  s += ");\n  };\n";
  s += "  auto sparsetir_body = [&](int64_t sparsetir_begin, int64_t sparsetir_end) {\n";
  s += "    sparsetir_emulate_blocks(sparsetir_launch, sparsetir_grid, sparsetir_block, sparsetir_begin, "
       "sparsetir_end,\n                             sparsetir_thread);\n  };\n";
  s += "  const int64_t sparsetir_blocks = (int64_t)sparsetir_grid.x * sparsetir_grid.y * sparsetir_grid.z;\n";
  s += "  sparsetir_launcher->parallel_for(sparsetir_launcher->ctx, 0, sparsetir_blocks, 1, "
       "sparsetir_task<decltype(sparsetir_body)>, &sparsetir_body);\n";
  s += "  return 0;\n}\n";
  return s;
}

}  // namespace sparsetir
