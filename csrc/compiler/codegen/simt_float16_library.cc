#include "codegen/simt_float16_library.h"

#include <utility>
#include <vector>

namespace sparsetir {

namespace {

// kSimtFloat16Type with its placeholders replaced.
std::string Instantiate(const std::vector<std::pair<std::string, std::string>>& names) {
  std::string text = kSimtFloat16Type;
  for (const auto& [placeholder, name] : names) {
    for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + name.size())) {
      text.replace(at, placeholder.size(), name);
    }
  }
  return text;
}

}  // namespace

const std::string& SimtFloat16Library() {
  static const std::string library =
      kSimtFloat16Common +
      Instantiate({{"@T2@", "__half2"}, {"@T@", "__half"}, {"@N2@", "half2"}, {"@N@", "half"},
                   {"@F@", "sparsetir_half_format"}}) +
      Instantiate({{"@T2@", "__nv_bfloat162"}, {"@T@", "__nv_bfloat16"}, {"@N2@", "bfloat162"}, {"@N@", "bfloat16"},
                   {"@F@", "sparsetir_bf16_format"}}) +
      kSimtFloat16Names;
  return library;
}

}  // namespace sparsetir
