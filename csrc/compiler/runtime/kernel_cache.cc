#include "runtime/kernel_cache.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/cache_trust.h"
#include "runtime/cpu_compiler.h"
#include "runtime/nvrtc.h"
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

std::map<std::string, std::shared_ptr<CpuModule>>& Table() {
  static std::map<std::string, std::shared_ptr<CpuModule>> table;
  return table;
}

void Warn(const std::string& message) { std::cerr << "sparsetir: warning: " << message << "\n"; }

// A fallback directory belongs to this process alone: removed at exit, so
// that fallbacks do not pile up in the temporary directory.
struct FallbackDirectory {
  fs::path path;
  ~FallbackDirectory() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

fs::path Fallback(const std::string& why) {
  static FallbackDirectory fallback;
  if (fallback.path.empty()) {
    fallback.path = MakePrivateTemporaryDirectory();
    if (!why.empty()) Warn(why + "; using " + fallback.path.string() + " for this process (set $SPARSETIR_CACHE_DIR to choose another)");
  }
  return fallback.path;
}

// Without $SPARSETIR_CACHE_DIR, $XDG_CACHE_HOME or $HOME there is no per-user
// place to share: the cache is a new private directory (never a fixed path in
// the shared temporary directory, which another user could prepare).
fs::path ResolveDirectory() {
  fs::path dir;
  if (const char* env = std::getenv("SPARSETIR_CACHE_DIR"); env && *env) {
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = fs::path(xdg) / "sparsetir";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".cache" / "sparsetir";
  } else {
    return Fallback("");
  }
  std::string why = EnsurePrivateDirectory(dir.string());
  if (why.empty()) return dir;
  return Fallback("the kernel cache directory " + dir.string() + " " + why);
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The checksum binds an object to its key: an object copied under another
// key does not match.
std::string Checksum(const std::string& key, const std::string& object) {
  return Sha256Hex("sparsetir kernel " + key + "\n" + object);
}

// The bytes of a cached object if it and its checksum are trusted files
// (cache_trust.h) and the checksum matches the key; "" otherwise (the caller
// rebuilds).
std::string TrustedObject(const std::string& key, const fs::path& object, const fs::path& checksum) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(object, ec)) && !fs::exists(fs::symlink_status(checksum, ec))) return "";
  for (const fs::path& file : {object, checksum}) {
    if (std::string why = UntrustedFileReason(file.string()); !why.empty()) {
      Warn("not loading the cached kernel " + file.string() + ": it " + why + "; rebuilding it");
      return "";
    }
  }
  std::string content = ReadFile(object);
  if (content.empty() || Checksum(key, content) != ReadFile(checksum)) return "";
  return content;
}

// Loads <key>.so if TrustedObject accepts it; nullptr otherwise.
std::shared_ptr<CpuModule> TryLoad(const std::string& key, const fs::path& object, const fs::path& checksum) {
  if (TrustedObject(key, object, checksum).empty()) return nullptr;
  std::string error;
  return CpuModule::Load(object.string(), &error);
}

// The cache directory, recreated (0700) if it was deleted while running.
fs::path UsableDirectory() {
  fs::path dir = CacheDirectory();
  std::string why = EnsurePrivateDirectory(dir.string());
  if (why.empty()) return dir;
  Warn("the kernel cache directory " + dir.string() + " " + why + "; compiling into a private directory instead");
  fs::path fallback = Fallback("");
  why = EnsurePrivateDirectory(fallback.string());
  if (!why.empty()) {
    throw UserError(UserErrorKind::kCompile, "no usable kernel cache directory: " + fallback.string() + " " + why);
  }
  return fallback;
}

// Compiles `source` into <key>.so with mode 0600; the checksum is written
// before the object appears under its name, and the temporary object is
// removed if anything fails.
std::shared_ptr<CpuModule> Build(const CpuCompiler& compiler, const std::string& key, const std::string& source,
                              const Target& target, const fs::path& dir) {
  const fs::path object = dir / (key + ".so");
  const fs::path source_path = dir / (key + ".cc");
  WritePrivateFile(source_path.string(), source);
  const fs::path tmp = dir / (key + ".so.tmp." + std::to_string(getpid()));
  try {
    compiler.CompileShared(source_path.string(), tmp.string(), target);
    if (chmod(tmp.c_str(), 0600) != 0) {
      throw UserError(UserErrorKind::kCompile, "cannot set the mode of " + tmp.string());
    }
    WritePrivateFile((dir / (key + ".sha256")).string(), Checksum(key, ReadFile(tmp)));
    fs::rename(tmp, object);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::string error;
  std::shared_ptr<CpuModule> module = CpuModule::Load(object.string(), &error);
  if (!module) {
    throw UserError(UserErrorKind::kCompile, "the compiled kernel " + object.string() + " cannot be loaded: " + error);
  }
  return module;
}

// True when `message` reports a full disk or an exhausted quota, in our own
// words (WritePrivateFile) or the compiler's and linker's (strerror's text).
bool ReportsNoSpace(const std::string& message) {
  return message.find(std::strerror(ENOSPC)) != std::string::npos ||
         message.find(std::strerror(EDQUOT)) != std::string::npos;
}

// Runs `build(dir)`; when it fails because `dir` is out of space, warns and
// runs it once more in this process's private directory, which may lie on
// another file system: a full cache disk slows the first call of a kernel
// down but does not stop the caller's work. Other errors, and a second
// failure, reach the caller.
template <typename Build>
auto BuildWithSpaceFallback(const fs::path& dir, const Build& build) {
  try {
    return build(dir);
  } catch (const UserError& e) {
    if (!ReportsNoSpace(e.what())) throw;
    const fs::path fallback = Fallback("");
    if (dir == fallback) throw;
    Warn("the kernel cache directory " + dir.string() + " is out of space; building into " + fallback.string() +
         " for this process instead");
    if (std::string why = EnsurePrivateDirectory(fallback.string()); !why.empty()) {
      throw UserError(UserErrorKind::kCompile, std::string(e.what()) + "\n(and the private directory " +
                                                   fallback.string() + " " + why + ")");
    }
    return build(fallback);
  }
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

std::shared_ptr<CpuModule> GetOrBuildCpuModule(const std::string& source, const Target& target) {
  ICHECK(target.is_cpu()) << "a " << target.str() << " module built by the system compiler";
  const CpuCompiler& compiler = CpuCompiler::Get();
  std::string flags;
  for (const std::string& flag : target.CompilerFlags()) flags += flag + " ";
  const std::string key = Sha256Hex(source + "\n// compiler: " + compiler.identity() + "\n// sparsetir " SPARSETIR_VERSION
                                    "\n// target: " + target.str() + " " + flags)
                              .substr(0, 32);
  // One builder at a time per process: keeps the table simple; the file lock
  // below serializes processes.
  std::lock_guard<std::mutex> guard(TableMutex());
  auto found = Table().find(key);
  if (found != Table().end()) {
    ++GetCacheStats().memory_hits;
    return found->second;
  }
  const fs::path dir = UsableDirectory();
  const fs::path object = dir / (key + ".so");
  const fs::path checksum = dir / (key + ".sha256");
  FileLock lock((dir / (key + ".lock")).string());
  std::shared_ptr<CpuModule> module = TryLoad(key, object, checksum);
  if (module) {
    ++GetCacheStats().disk_hits;
  } else {
    module = BuildWithSpaceFallback(dir, [&](const fs::path& where) {
      return Build(compiler, key, source, target, where);
    });
    ++GetCacheStats().compiles;
  }
  Table()[key] = module;
  return module;
}

std::string GetOrBuildCudaImage(const std::string& source, int arch, const std::vector<std::string>& options) {
  return GetOrBuildCudaImage(source, arch, options, "").image;
}

namespace {

// An instance's cached object: its lowered name on a first line, then the
// image (a plain kernel's object is the image alone).
constexpr const char* kLoweredNameLine = "sparsetir lowered name: ";

CudaImage ImageFrom(const std::string& object, bool named) {
  if (!named) return {object, ""};
  const size_t end = object.find('\n');
  const size_t prefix = std::strlen(kLoweredNameLine);
  if (end == std::string::npos || object.compare(0, prefix, kLoweredNameLine) != 0) return {"", ""};
  return {object.substr(end + 1), object.substr(prefix, end - prefix)};
}

}  // namespace

CudaImage GetOrBuildCudaImage(const std::string& source, int arch, const std::vector<std::string>& options,
                              const std::string& name_expression) {
  const bool named = !name_expression.empty();
  const Nvrtc& nvrtc = Nvrtc::Get();
  const auto version = nvrtc.version();
  std::string described = source + "\n// nvrtc " + std::to_string(version.first) + "." +
                          std::to_string(version.second) + "\n// arch: sm_" + std::to_string(arch) +
                          "\n// sparsetir " SPARSETIR_VERSION "\n// target: cuda";
  // One option a line (st.launch_cuda refuses an option with a newline).
  for (const std::string& option : options) described += "\n// option: " + option;
  if (named) described += "\n// name expression: " + name_expression;
  const std::string key = Sha256Hex(described).substr(0, 32);
  static std::mutex mutex;
  static std::map<std::string, CudaImage> table;
  std::lock_guard<std::mutex> guard(mutex);
  if (auto found = table.find(key); found != table.end()) {
    ++GetCacheStats().memory_hits;
    return found->second;
  }
  const fs::path dir = UsableDirectory();
  const fs::path image_path = dir / (key + ".cubin");
  const fs::path checksum = dir / (key + ".cubin.sha256");
  FileLock lock((dir / (key + ".lock")).string());
  CudaImage image = ImageFrom(TrustedObject(key, image_path, checksum), named);
  if (!image.image.empty()) {
    ++GetCacheStats().disk_hits;
  } else {
    image = ImageFrom(BuildWithSpaceFallback(dir, [&](const fs::path& where) {
      const fs::path source_path = where / (key + ".cu");
      WritePrivateFile(source_path.string(), source);
      NvrtcResult result;
      try {
        result = nvrtc.Compile(source, key + ".cu", arch, /*want_cubin=*/true, options,
                               named ? std::vector<std::string>{name_expression} : std::vector<std::string>{});
      } catch (const UserError& e) {
        throw UserError(UserErrorKind::kCompile, std::string(e.what()) + "\n(the CUDA source is " + source_path.string() + ")");
      }
      std::string built = result.cubin.empty() ? result.ptx : result.cubin;
      if (named) built = kLoweredNameLine + result.lowered_names.at(0) + "\n" + built;
      WritePrivateFile((where / (key + ".cubin.sha256")).string(), Checksum(key, built));
      WritePrivateFile((where / (key + ".cubin")).string(), built);
      return built;
    }), named);
    ++GetCacheStats().compiles;
  }
  table[key] = image;
  return image;
}

}  // namespace sparsetir
