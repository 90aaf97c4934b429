// NVRTC's macro options: -DNAME, -DNAME=VALUE, -UNAME and their long forms
// (--define-macro=, --undefine-macro=). Read in one place for the two that
// need them: the emulator, which turns them into #define / #undef lines
// before the source, and the reader of a kernel's parameters, for which a
// macro may name a parameter's type.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sparsetir {

struct MacroOption {
  bool define = true;  // false for -U
  std::string name;
  std::string value;  // "1" for -DNAME, as NVRTC defines it; "" for -U
};

// The macro `option` defines or undefines; nullopt where it is no macro
// option (-I..., --use_fast_math). Throws a UserError quoting the option
// where it is one but malformed: no identifier after -D, a newline, or -U
// with a value.
std::optional<MacroOption> ParseMacroOption(const std::string& option);

// The macros `options` leave defined, each name to its value, options taken
// in order (-DX=1 -UX leaves X undefined; -DX=1 -DX=2 leaves 2); options
// that are no macro option are skipped.
std::vector<MacroOption> DefinedMacros(const std::vector<std::string>& options);

}  // namespace sparsetir
