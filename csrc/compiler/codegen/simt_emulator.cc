#include "codegen/simt_emulator.h"

namespace sparsetir {

bool KernelSynchronizes(const std::string& cuda_source) {
  // __shfl*_sync, __ballot_sync, __any_sync, __all_sync, __match*_sync.
  for (const char* name : {"__syncthreads", "__syncwarp", "_sync("}) {
    if (cuda_source.find(name) != std::string::npos) return true;
  }
  return false;
}

std::string SimtEmulatorEntry(const std::string& kernel, const std::vector<std::string>& param_types) {
  // Built with std::string and std::to_string only (no stream formatting of
  // integers, which is locale-dependent and differs between the C++ runtimes
  // a host process may have loaded).
  const size_t n = param_types.size();
  auto arg = [](size_t i) { return "args[" + std::to_string(i) + "]"; };
  std::string s = std::string(kAbiText) + "\n";
  s += "template <typename F> static void sparsetir_task(void* closure, int64_t begin, int64_t end) {\n";
  s += "  (*static_cast<F*>(closure))(begin, end);\n}\n";
  s += "extern \"C\" int32_t " + std::string(kEntrySymbol) +
       "(const SparsetirArg* __restrict__ args, const SparsetirLauncher* launcher) {\n";
  s += "  const sparsetir_uint3 grid = {(unsigned)" + arg(n) + ".i64, (unsigned)" + arg(n + 1) + ".i64, (unsigned)" +
       arg(n + 2) + ".i64};\n";
  s += "  const sparsetir_uint3 block = {(unsigned)" + arg(n + 3) + ".i64, (unsigned)" + arg(n + 4) +
       ".i64, (unsigned)" + arg(n + 5) + ".i64};\n";
  s += "  const SparsetirSimt* simt = (const SparsetirSimt*)" + arg(n + 6) + ".ptr;\n";
  s += "  auto sparsetir_thread = [&] {\n    " + kernel + "(";
  for (size_t i = 0; i < n; ++i) {
    const std::string& type = param_types[i];
    const bool pointer = !type.empty() && type.back() == '*';
    const bool real = type == "float" || type == "double";
    s += i ? ",\n        " : "";
    s += "(" + type + ")" + arg(i) + (pointer ? ".ptr" : real ? ".f64" : ".i64");
  }
  s += ");\n  };\n";
  s += "  auto sparsetir_body = [&](int64_t sparsetir_begin, int64_t sparsetir_end) {\n";
  s += "    sparsetir_emulate_blocks(simt, grid, block, sparsetir_begin, sparsetir_end, sparsetir_thread);\n  };\n";
  s += "  const int64_t sparsetir_blocks = (int64_t)grid.x * grid.y * grid.z;\n";
  s += "  launcher->parallel_for(launcher->ctx, 0, sparsetir_blocks, 1, sparsetir_task<decltype(sparsetir_body)>, "
       "&sparsetir_body);\n";
  s += "  return 0;\n}\n";
  return s;
}

}  // namespace sparsetir
