#include "runtime/kernel_cache.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/cpu_compiler.h"
#include "support/error.h"
#include "support/file_lock.h"
#include "support/sha256.h"

#ifndef SPARSETIR_VERSION
#define SPARSETIR_VERSION "dev"
#endif

namespace sparsetir {
namespace fs = std::filesystem;

namespace {

std::mutex& TableMutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, std::shared_ptr<Module>>& Table() {
  static std::map<std::string, std::shared_ptr<Module>> table;
  return table;
}

bool Writable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec && !fs::is_directory(dir)) return false;
  return access(dir.c_str(), W_OK) == 0;
}

fs::path ResolveDirectory() {
  fs::path dir;
  if (const char* env = std::getenv("SPARSETIR_CACHE_DIR"); env && *env) {
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = fs::path(xdg) / "sparsetir";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".cache" / "sparsetir";
  } else {
    dir = fs::temp_directory_path() / "sparsetir-cache";
  }
  if (Writable(dir)) return dir;
  std::string pattern = (fs::temp_directory_path() / "sparsetir-cache-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw UserError(UserErrorKind::kCompile, "cannot write the kernel cache directory " + dir.string() +
                                                 " nor create a temporary one; set $SPARSETIR_CACHE_DIR");
  }
  std::cerr << "sparsetir: warning: the kernel cache directory " << dir << " is not writable; using "
            << pattern << " for this process (set $SPARSETIR_CACHE_DIR to choose another)\n";
  return pattern;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFileAtomically(const fs::path& path, const std::string& content) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw UserError(UserErrorKind::kCompile, "cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

// Loads <key>.so if its checksum matches; nullptr otherwise.
std::shared_ptr<Module> TryLoad(const fs::path& object, const fs::path& checksum) {
  std::error_code ec;
  if (!fs::exists(object, ec) || !fs::exists(checksum, ec)) return nullptr;
  if (Sha256Hex(ReadFile(object)) != ReadFile(checksum)) return nullptr;
  std::string error;
  return Module::Load(object.string(), &error);
}

}  // namespace

std::string CacheDirectory() {
  static const fs::path dir = ResolveDirectory();
  return dir.string();
}

CacheStats& GetCacheStats() {
  static CacheStats stats;
  return stats;
}

void ClearMemoryCache() {
  std::lock_guard<std::mutex> guard(TableMutex());
  Table().clear();
}

std::shared_ptr<Module> GetOrBuildCpuModule(const std::string& source) {
  const CpuCompiler& compiler = CpuCompiler::Get();
  const std::string key =
      Sha256Hex(source + "\n// compiler: " + compiler.identity() + "\n// sparsetir " SPARSETIR_VERSION "\n// target: cpu")
          .substr(0, 32);
  // One builder at a time per process: keeps the table simple; the file lock
  // below serializes processes.
  std::lock_guard<std::mutex> guard(TableMutex());
  auto found = Table().find(key);
  if (found != Table().end()) {
    ++GetCacheStats().memory_hits;
    return found->second;
  }
  const fs::path dir = CacheDirectory();
  const fs::path object = dir / (key + ".so");
  const fs::path checksum = dir / (key + ".sha256");
  const fs::path source_path = dir / (key + ".cc");
  FileLock lock((dir / (key + ".lock")).string());
  std::shared_ptr<Module> module = TryLoad(object, checksum);
  if (module) {
    ++GetCacheStats().disk_hits;
  } else {
    WriteFileAtomically(source_path, source);
    fs::path tmp = object;
    tmp += ".tmp." + std::to_string(getpid());
    compiler.CompileShared(source_path.string(), tmp.string());
    WriteFileAtomically(checksum, Sha256Hex(ReadFile(tmp)));
    fs::rename(tmp, object);
    ++GetCacheStats().compiles;
    std::string error;
    module = Module::Load(object.string(), &error);
    if (!module) {
      throw UserError(UserErrorKind::kCompile, "the compiled kernel " + object.string() + " cannot be loaded: " + error);
    }
  }
  Table()[key] = module;
  return module;
}

}  // namespace sparsetir
