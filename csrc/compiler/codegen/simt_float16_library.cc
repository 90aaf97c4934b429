#include "codegen/simt_float16_library.h"

#include <utility>
#include <vector>

namespace sparsetir {

std::string InstantiateLibrary(const char* text_template,
                               const std::vector<std::pair<std::string, std::string>>& names) {
  std::string text = text_template;
  for (const auto& [placeholder, name] : names) {
    for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + name.size())) {
      text.replace(at, placeholder.size(), name);
    }
  }
  return text;
}

const std::string& SimtFloat16Library() {
  static const std::string library =
      kSimtFloat16Common +
      InstantiateLibrary(kSimtFloat16Type, {{"@T2@", "__half2"}, {"@T@", "__half"}, {"@N2@", "half2"},
                                            {"@N@", "half"}, {"@F@", "sparsetir_half_format"}}) +
      InstantiateLibrary(kSimtFloat16Type, {{"@T2@", "__nv_bfloat162"}, {"@T@", "__nv_bfloat16"},
                                            {"@N2@", "bfloat162"}, {"@N@", "bfloat16"},
                                            {"@F@", "sparsetir_bf16_format"}}) +
      kSimtFloat16Names;
  return library;
}

}  // namespace sparsetir
