#include "runtime/nvrtc.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/dynamic_library.h"
#include "support/error.h"

namespace sparsetir {
namespace fs = std::filesystem;

// The part of nvrtc.h used here, declared by hand: no CUDA header is needed
// to build the extension.
typedef struct _nvrtcProgram* nvrtcProgram;
typedef int nvrtcResult;  // NVRTC_SUCCESS = 0

struct Nvrtc::Api {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*GetNumSupportedArchs)(int*);
  nvrtcResult (*GetSupportedArchs)(int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char*);
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char*, const char**);
};

namespace {

// A libnvrtc this process has already mapped (torch's), from /proc/self/maps.
std::string MappedNvrtc() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) continue;  // replaced on disk
    std::string file = fs::path(path).filename().string();
    if (file.rfind("libnvrtc.so", 0) == 0) return path;
  }
  return "";
}

std::vector<std::string> SplitPath(const char* text) {
  std::vector<std::string> out;
  std::stringstream s(text ? text : "");
  std::string part;
  while (std::getline(s, part, ':')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// Opens libnvrtc from `dir`, its builtins first (by full path: the wheel's
// libnvrtc has no RUNPATH to find them by).
std::unique_ptr<DynamicLibrary> OpenFromDirectory(const std::string& dir, std::string* error) {
  std::error_code ec;
  std::string library;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("libnvrtc-builtins.so", 0) == 0 && file.find(".alt.") == std::string::npos) {
      // Mapped for NVRTC to find by soname; never looked up here.
      static std::vector<std::unique_ptr<DynamicLibrary>> builtins;
      if (auto builtin = DynamicLibrary::Open(entry.path().string(), nullptr, /*global=*/true)) {
        builtins.push_back(std::move(builtin));
      }
    }
    if (file.rfind("libnvrtc.so", 0) == 0 && (library.empty() || file.size() > library.size())) {
      library = entry.path().string();
    }
  }
  if (library.empty()) return nullptr;
  return DynamicLibrary::Open(library, error);
}

std::unique_ptr<DynamicLibrary> FindNvrtc(std::string* tried) {
  std::string error;
  if (const char* path = std::getenv("SPARSETIR_NVRTC"); path && *path) {
    if (auto lib = DynamicLibrary::Open(path, &error)) return lib;
    *tried += "\n  $SPARSETIR_NVRTC=" + std::string(path) + ": " + error;
  }
  if (std::string mapped = MappedNvrtc(); !mapped.empty()) {
    if (auto lib = DynamicLibrary::Open(mapped, &error)) return lib;
  }
  for (const std::string& dir : SplitPath(std::getenv("SPARSETIR_NVRTC_DIRS"))) {
    error.clear();
    if (auto lib = OpenFromDirectory(dir, &error)) return lib;
    *tried += "\n  " + dir + ": no usable libnvrtc" + (error.empty() ? "" : " (" + error + ")");
  }
  for (const char* soname : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
    if (auto lib = DynamicLibrary::Open(soname, &error)) return lib;
    *tried += "\n  " + std::string(soname) + ": " + error;
  }
  return nullptr;
}

template <typename F>
void Bind(const DynamicLibrary& lib, const char* name, F* slot) {
  *slot = reinterpret_cast<F>(lib.Symbol(name));
  if (!*slot) throw UserError(UserErrorKind::kCompile, "NVRTC at " + lib.path() + " has no symbol " + name);
}

}  // namespace

const Nvrtc& Nvrtc::Get() {
  static const Nvrtc nvrtc;  // a failed construction is retried at the next call
  return nvrtc;
}

Nvrtc::Nvrtc() {
  std::string tried;
  std::unique_ptr<DynamicLibrary> lib = FindNvrtc(&tried);
  if (!lib) {
    throw UserError(UserErrorKind::kCompile,
                    "NVRTC (libnvrtc) was not found; install torch's CUDA build or the nvidia-cuda-nvrtc wheel, or "
                    "set $SPARSETIR_NVRTC to the library's path. Tried:" + tried);
  }
  auto* api = new Api();
  Bind(*lib, "nvrtcGetErrorString", &api->GetErrorString);
  Bind(*lib, "nvrtcVersion", &api->Version);
  Bind(*lib, "nvrtcGetNumSupportedArchs", &api->GetNumSupportedArchs);
  Bind(*lib, "nvrtcGetSupportedArchs", &api->GetSupportedArchs);
  Bind(*lib, "nvrtcCreateProgram", &api->CreateProgram);
  Bind(*lib, "nvrtcDestroyProgram", &api->DestroyProgram);
  Bind(*lib, "nvrtcCompileProgram", &api->CompileProgram);
  Bind(*lib, "nvrtcGetProgramLogSize", &api->GetProgramLogSize);
  Bind(*lib, "nvrtcGetProgramLog", &api->GetProgramLog);
  Bind(*lib, "nvrtcGetPTXSize", &api->GetPTXSize);
  Bind(*lib, "nvrtcGetPTX", &api->GetPTX);
  Bind(*lib, "nvrtcGetCUBINSize", &api->GetCUBINSize);
  Bind(*lib, "nvrtcGetCUBIN", &api->GetCUBIN);
  Bind(*lib, "nvrtcAddNameExpression", &api->AddNameExpression);
  Bind(*lib, "nvrtcGetLoweredName", &api->GetLoweredName);
  api_ = api;
  path_ = lib->path();
  library_ = std::move(lib);
  api_->Version(&version_.first, &version_.second);
  int count = 0;
  if (api_->GetNumSupportedArchs(&count) == 0 && count > 0) {
    archs_.resize(count);
    api_->GetSupportedArchs(archs_.data());
  }
}

NvrtcResult Nvrtc::Compile(const std::string& source, const std::string& name, int arch, bool want_cubin,
                           const std::vector<std::string>& extra_options,
                           const std::vector<std::string>& name_expressions) const {
  if (want_cubin && !archs_.empty() && std::find(archs_.begin(), archs_.end(), arch) == archs_.end()) {
    int fallback = 0;
    for (int a : archs_) {
      if (a <= arch) fallback = a;
    }
    if (fallback == 0) {
      throw UserError(UserErrorKind::kCompile, "NVRTC " + std::to_string(version_.first) + "." +
                                                   std::to_string(version_.second) + " cannot compile for sm_" +
                                                   std::to_string(arch));
    }
    arch = fallback;
    want_cubin = false;
  }
  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  if (nvrtcResult r = api_->CreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr); r != 0) {
    throw UserError(UserErrorKind::kCompile, std::string("nvrtcCreateProgram: ") + api_->GetErrorString(r));
  }
  for (const std::string& expression : name_expressions) {
    if (nvrtcResult r = api_->AddNameExpression(program, expression.c_str()); r != 0) {
      api_->DestroyProgram(&program);
      throw UserError(UserErrorKind::kCompile,
                      "nvrtcAddNameExpression(" + expression + "): " + api_->GetErrorString(r));
    }
  }
  std::vector<std::string> options = {(want_cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") +
                                          std::to_string(arch),
                                      "-std=c++17"};
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled = api_->CompileProgram(program, static_cast<int>(argv.size()), argv.data());
  NvrtcResult result;
  size_t size = 0;
  api_->GetProgramLogSize(program, &size);
  result.log.resize(size);
  if (size) api_->GetProgramLog(program, result.log.data());
  while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n')) result.log.pop_back();
  nvrtcResult fetched = 0;  // the first failure of the calls that fetch the output
  if (compiled == 0) {
    // A compile for sm_XY keeps the PTX it assembled too: cuda_check hands
    // that PTX to ptxas rather than compiling the source a second time.
    fetched = api_->GetPTXSize(program, &size);
    result.ptx.resize(fetched == 0 ? size : 0);
    if (fetched == 0) fetched = api_->GetPTX(program, result.ptx.data());
    while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();  // the size counts the NUL
    if (fetched == 0 && want_cubin) {
      fetched = api_->GetCUBINSize(program, &size);
      result.cubin.resize(fetched == 0 ? size : 0);
      if (fetched == 0) fetched = api_->GetCUBIN(program, result.cubin.data());
    }
    for (const std::string& expression : name_expressions) {
      const char* lowered = nullptr;  // the program's: copied before it is destroyed
      if (fetched == 0) fetched = api_->GetLoweredName(program, expression.c_str(), &lowered);
      result.lowered_names.push_back(fetched == 0 && lowered ? lowered : "");
    }
  }
  api_->DestroyProgram(&program);
  if (compiled != 0) {
    throw UserError(UserErrorKind::kCompile, "NVRTC failed to compile " + name + " for " + options[0] + " (" +
                                                 api_->GetErrorString(compiled) + "):\n" + result.log);
  }
  if (fetched != 0) {
    throw UserError(UserErrorKind::kCompile, std::string("NVRTC compiled ") + name + " but its output cannot be read: " +
                                                 api_->GetErrorString(fetched));
  }
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace sparsetir
