// A shared library opened at run time (dlopen), for the CUDA libraries the
// extension never links: NVRTC and the driver are looked up on first use, so
// the library loads and runs its CPU operators where neither exists.
#pragma once

#include <memory>
#include <string>

namespace sparsetir {

class DynamicLibrary {
 public:
  // Opens `path_or_soname` (RTLD_NOW | RTLD_LOCAL, or RTLD_GLOBAL when asked);
  // nullptr with `*error` set if it cannot be opened. The caller owns the
  // object; the library itself stays mapped after the object is gone.
  static std::unique_ptr<DynamicLibrary> Open(const std::string& path_or_soname, std::string* error,
                                              bool global = false);
  // The address of `name`, or nullptr.
  void* Symbol(const char* name) const;
  const std::string& path() const { return path_; }

 private:
  DynamicLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;  // never closed: the functions taken from it live as long as the process
  std::string path_;
};

}  // namespace sparsetir
