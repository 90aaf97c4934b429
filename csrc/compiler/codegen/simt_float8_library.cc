#include "codegen/simt_float8_library.h"

#include "codegen/simt_float16_library.h"

namespace sparsetir {

const std::string& SimtFloat8Library() {
  static const std::string library = std::string(kSimtFloat8Common) +
                                     InstantiateLibrary(kSimtFloat8Type, {{"@T@", "e4m3"}, {"@I@", "__NV_E4M3"}}) +
                                     InstantiateLibrary(kSimtFloat8Type, {{"@T@", "e5m2"}, {"@I@", "__NV_E5M2"}});
  return library;
}

}  // namespace sparsetir
