#include "env_setting.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "support/error.h"

namespace sparsetir::ops {

int64_t EnvSetting(const char* name, int64_t fallback, int64_t most, const char* what) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || errno != 0 || value < 0 || value > most) {
    throw UserError(UserErrorKind::kArgument,
                    std::string(name) + " must be " + what + ", got '" + text + "'");
  }
  return value;
}

}  // namespace sparsetir::ops
