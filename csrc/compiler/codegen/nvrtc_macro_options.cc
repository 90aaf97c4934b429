#include "codegen/nvrtc_macro_options.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "support/error.h"

namespace sparsetir {
namespace {

bool IsIdentifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Whether `option` starts with one of `prefixes`; `*rest` is what follows it.
bool AfterPrefix(const std::string& option, std::initializer_list<const char*> prefixes, std::string* rest) {
  for (const std::string prefix : prefixes) {
    if (option.rfind(prefix, 0) == 0) {
      *rest = option.substr(prefix.size());
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<MacroOption> ParseMacroOption(const std::string& option) {
  std::string body;
  MacroOption macro;
  if (AfterPrefix(option, {"--define-macro=", "-D"}, &body)) {
    macro.define = true;
  } else if (AfterPrefix(option, {"--undefine-macro=", "-U"}, &body)) {
    macro.define = false;
  } else {
    return std::nullopt;
  }
  const size_t equals = body.find('=');
  macro.name = body.substr(0, equals);
  if (!IsIdentifier(macro.name) || option.find('\n') != std::string::npos) {
    throw UserError(UserErrorKind::kArgument, "the option '" + option + "' does not name a macro");
  }
  if (!macro.define) {
    if (equals != std::string::npos) {
      throw UserError(UserErrorKind::kArgument, "the option '" + option + "' gives -U a value");
    }
  } else {
    macro.value = equals == std::string::npos ? "1" : body.substr(equals + 1);
  }
  return macro;
}

std::vector<MacroOption> DefinedMacros(const std::vector<std::string>& options) {
  std::vector<MacroOption> defined;
  for (const std::string& option : options) {
    const std::optional<MacroOption> macro = ParseMacroOption(option);
    if (!macro) continue;
    defined.erase(std::remove_if(defined.begin(), defined.end(),
                                 [&macro](const MacroOption& m) { return m.name == macro->name; }),
                  defined.end());
    if (macro->define) defined.push_back(*macro);
  }
  return defined;
}

}  // namespace sparsetir
