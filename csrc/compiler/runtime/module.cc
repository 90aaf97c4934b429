#include "runtime/module.h"

#include <dlfcn.h>

namespace sparsetir {

std::shared_ptr<Module> Module::Load(const std::string& path, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* message = dlerror();
    *error = message ? message : "dlopen failed";
    return nullptr;
  }
  void* symbol = dlsym(handle, kEntrySymbol);
  if (!symbol) {
    *error = std::string("no symbol ") + kEntrySymbol + " in " + path;
    dlclose(handle);
    return nullptr;
  }
  std::shared_ptr<Module> module(new Module());
  module->handle_ = handle;
  module->entry_ = reinterpret_cast<SparsetirEntry>(symbol);
  module->path_ = path;
  return module;
}

Module::~Module() {
  if (handle_) dlclose(handle_);
}

}  // namespace sparsetir
