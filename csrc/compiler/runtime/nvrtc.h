// NVRTC, opened at its first use and never linked (support/dynamic_library.h).
//
// Where it is found, in order:
//  1. $SPARSETIR_NVRTC, a full path;
//  2. a libnvrtc already mapped into the process (torch's CUDA build maps one
//     when it compiles its own kernels);
//  3. the folders in $SPARSETIR_NVRTC_DIRS (the Python package sets them to
//     the nvidia wheels' lib folders beside torch): there libnvrtc-builtins is
//     opened by full path first, as the wheel's libnvrtc has no RUNPATH;
//  4. the sonames libnvrtc.so.13, .12 and libnvrtc.so on the loader's path.
// NVRTC needs no GPU and no driver, so every machine can compile (and CI can
// check) every generated CUDA kernel.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/dynamic_library.h"

namespace sparsetir {

struct NvrtcResult {
  std::string ptx;    // PTX text (every target)
  std::string cubin;  // the CUBIN (sm_XY targets)
  std::string log;    // NVRTC's log (warnings on success)
  double compile_ms = 0;
  // The name each of Compile's name expressions ("k<float, 4>") has in the
  // output (its mangled name), in their order.
  std::vector<std::string> lowered_names;
};

class Nvrtc {
 public:
  // The process-wide instance; throws a compile UserError naming what to
  // install when NVRTC cannot be found.
  static const Nvrtc& Get();

  // NVRTC's (major, minor) version, e.g. {13, 0}.
  std::pair<int, int> version() const { return version_; }
  // The sm_XY numbers it compiles for, ascending, e.g. {75, 80, 86, 89, 90, 100, 120}.
  const std::vector<int>& supported_archs() const { return archs_; }
  // The library in use (as opened: a full path or a soname).
  const std::string& path() const { return path_; }

  // Compiles `source` for sm_<arch> to a CUBIN (want_cubin), or for
  // compute_<arch> to PTX. A CUBIN for an architecture NVRTC does not list
  // falls back to PTX for the newest listed one below it (the driver
  // compiles PTX for newer devices). Throws a compile UserError holding
  // NVRTC's log when the source does not compile. Each of
  // `name_expressions` (a template kernel's instance, "k<float, 4>") is
  // instantiated and its name in the output returned.
  NvrtcResult Compile(const std::string& source, const std::string& name, int arch, bool want_cubin,
                      const std::vector<std::string>& extra_options,
                      const std::vector<std::string>& name_expressions = {}) const;

 private:
  Nvrtc();
  struct Api;
  const Api* api_;
  std::unique_ptr<DynamicLibrary> library_;  // the functions of api_ come from it
  std::string path_;
  std::pair<int, int> version_;
  std::vector<int> archs_;
};

}  // namespace sparsetir
