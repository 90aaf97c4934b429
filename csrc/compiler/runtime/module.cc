#include "runtime/module.h"

#include <dlfcn.h>

#include "support/error.h"

namespace sparsetir {

std::shared_ptr<CpuModule> CpuModule::Load(const std::string& path, std::string* error) {
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
  std::shared_ptr<CpuModule> module(new CpuModule());
  module->handle_ = handle;
  module->entry_ = reinterpret_cast<SparsetirEntry>(symbol);
  module->path_ = path;
  return module;
}

CpuModule::~CpuModule() {
  if (handle_) dlclose(handle_);
}

void CpuModule::Launch(const SparsetirArg* args, const SparsetirLauncher* launcher) const {
  const int32_t status = entry_(args, launcher);
  if (status == kStatusDivisionByZero) {
    throw KernelStatusError("an integer division or remainder by zero: a divisor in the script is 0 for these "
                            "arguments, where the result is undefined");
  }
  ICHECK(status == 0) << "kernel " << path_ << " returned " << status;
}

}  // namespace sparsetir
