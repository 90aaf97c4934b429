// libFuzzer target: bytes -> the path a kernel takes before the C++ compiler
// sees it: parse, verify, lower to stage III (lower_atomic, lower_sparse_iter,
// lower_sparse_buffer, simplify, hoist_invariants, verified after each pass)
// and generate both the CPU and the CUDA source (nothing is compiled). A
// UserError at any step is a refusal; anything else escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "codegen/codegen_cpu.h"
#include "codegen/codegen_cuda.h"
#include "ir/verifier.h"
#include "lower.h"
#include "parser/parser.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sparsetir::PrimFunc lowered;
  try {
    sparsetir::PrimFunc f = sparsetir::Parse(text, "<fuzz>");
    sparsetir::VerifyWellFormed(f);
    lowered = sparsetir::LowerToStageIII(f);
  } catch (const sparsetir::UserError&) {
    return 0;
  }
  // Each backend may refuse what the other accepts (the CUDA one has no
  // parallel loops), so a refusal by one does not skip the other.
  try {
    sparsetir::CodegenCpu(lowered);
  } catch (const sparsetir::UserError&) {
  }
  try {
    sparsetir::CodegenCuda(lowered);
  } catch (const sparsetir::UserError&) {
  }
  return 0;
}
