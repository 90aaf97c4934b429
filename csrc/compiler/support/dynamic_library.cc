#include "support/dynamic_library.h"

#include <dlfcn.h>

namespace sparsetir {

std::unique_ptr<DynamicLibrary> DynamicLibrary::Open(const std::string& path_or_soname, std::string* error,
                                                     bool global) {
  void* handle = dlopen(path_or_soname.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!handle) {
    const char* message = dlerror();
    if (error) *error = message ? message : ("cannot open " + path_or_soname);
    return nullptr;
  }
  return std::unique_ptr<DynamicLibrary>(new DynamicLibrary(handle, path_or_soname));
}

void* DynamicLibrary::Symbol(const char* name) const { return dlsym(handle_, name); }

}  // namespace sparsetir
