// A loaded kernel module: a shared object opened with dlopen (RTLD_LOCAL, so
// every module's `sparsetir_main` stays private) and its entry point.
#pragma once

#include <memory>
#include <string>

#include "codegen/abi.h"

namespace sparsetir {

class Module {
 public:
  // nullptr (with *error set) when the file cannot be loaded or lacks the entry.
  static std::shared_ptr<Module> Load(const std::string& path, std::string* error);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  SparsetirEntry entry() const { return entry_; }
  const std::string& path() const { return path_; }

 private:
  Module() = default;
  void* handle_ = nullptr;
  SparsetirEntry entry_ = nullptr;
  std::string path_;
};

}  // namespace sparsetir
