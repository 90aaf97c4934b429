// libFuzzer target: arbitrary bytes -> the script parser (lexer, syntax,
// builder, stage-I verifier). Refusing the text with a UserError is the normal
// outcome for most inputs; a crash, a sanitizer report, a hang or an escaping
// InternalError (a compiler bug by definition) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parser/parser.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    sparsetir::Parse(text, "<fuzz>");
  } catch (const sparsetir::UserError&) {
  }
  return 0;
}
