// libFuzzer target: arbitrary bytes -> what reads a hand-written CUDA source
// (the parameters of its kernel 'k' or of its instance 'k<int, 2>', structs
// and their layout included; the emulator's rewrite of its lines and its
// look for barriers and spin points). Refusing the source with a UserError is the normal outcome for
// most inputs; a crash, a sanitizer report, a hang or an escaping
// InternalError is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "codegen/cuda_kernel_params.h"
#include "codegen/simt_emulator.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  // The kernel 'k', and 'k' as a template's instance.
  for (const char* kernel : {"k", "k<int, 2>"}) {
    try {
      for (const sparsetir::CudaKernelParam& param : sparsetir::CudaKernelParams(source, kernel, {"-DLANES=4"})) {
        // A struct's layout keeps its fields inside it.
        for (const sparsetir::CudaStructField& field : param.fields) {
          const size_t elements = field.count == 0 ? 1 : field.count;
          if (field.offset + field.type.bytes * elements > param.bytes) __builtin_trap();
        }
      }
    } catch (const sparsetir::UserError&) {
    }
  }
  (void)sparsetir::EmulatorSourceFromCuda(source);
  (void)sparsetir::KernelSynchronizes(source);
  return 0;
}
