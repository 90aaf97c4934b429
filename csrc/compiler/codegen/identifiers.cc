#include "codegen/identifiers.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace sparsetir {
namespace {

// C++20 keywords and alternative tokens, GCC's spellings, and the words the
// generated code uses outside its own namespace (the entry's parameters).
const std::set<std::string>& Keywords() {
  static const std::set<std::string> words = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "final", "float",
      "for", "friend", "goto", "if", "import", "inline", "int", "long", "module", "mutable", "namespace", "new",
      "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "override", "private", "protected",
      "public", "register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed", "sizeof",
      "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
      "true", "try", "typedef", "typeid", "typename", "typeof", "union", "unsigned", "using", "virtual", "void",
      "volatile", "wchar_t", "while", "xor", "xor_eq", "std", "args", "launcher"};
  return words;
}

// Macros of the prelude's headers (<stdint.h>, <string.h>, <math.h>,
// <stdlib.h>) that the prefix rules below do not cover, the classic C macros
// a header may add, and the library functions generated code calls (a local
// of the same name would hide them). The GoogleTest Identifiers.* checks this
// list against the system compiler's own macro table.
const std::set<std::string>& LibraryNames() {
  static const std::set<std::string> names = {
      "BIG_ENDIAN", "BYTE_ORDER", "LITTLE_ENDIAN", "PDP_ENDIAN", "EXIT_FAILURE", "EXIT_SUCCESS", "INFINITY",
      "NAN", "NULL", "MAXFLOAT", "MB_CUR_MAX", "NFDBITS", "RAND_MAX", "EOF", "NDEBUG", "WCONTINUED", "WEXITED",
      "WEXITSTATUS", "WIFCONTINUED", "WIFEXITED", "WIFSIGNALED", "WIFSTOPPED", "WNOHANG", "WNOWAIT", "WSTOPPED",
      "WSTOPSIG", "WTERMSIG", "WUNTRACED", "alloca", "be16toh", "be32toh", "be64toh", "htobe16", "htobe32",
      "htobe64", "htole16", "htole32", "htole64", "le16toh", "le32toh", "le64toh", "issubnormal", "iscanonical",
      "issignaling", "iszero", "math_errhandling", "strdupa", "strndupa", "errno", "assert", "offsetof", "stdin",
      "stdout", "stderr", "isnan", "isinf", "isfinite", "isnormal", "signbit", "fpclassify", "isgreater",
      "isgreaterequal", "isless", "islessequal", "islessgreater", "isunordered", "calloc", "malloc", "free",
      "memcpy", "memset", "fabs", "fabsf", "log", "logf", "sqrt", "sqrtf", "pow", "powf", "exp", "expf", "min",
      "max", "abs"};
  return names;
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool HasLowercase(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// Families of macros named by prefix: math constants (M_PI, M_PIf32x), and the
// upper-case limit, classification and constant families of <stdint.h>,
// <math.h> and <stdlib.h> (INT32_MAX, UINT64_C, FP_NAN, HUGE_VALF, SNANF,
// FD_SET, WCHAR_MAX, ...).
bool IsMacroFamily(const std::string& s) {
  if (StartsWith(s, "M_")) return true;
  if (HasLowercase(s)) return false;
  for (const char* prefix : {"INT", "UINT", "FP_", "HUGE_VAL", "SNAN", "FD_", "WCHAR_", "WINT_", "PTRDIFF_",
                             "SIZE_", "SIG_ATOMIC_", "MATH_"}) {
    if (StartsWith(s, prefix)) return true;
  }
  return false;
}

}  // namespace

bool IsScriptName(const std::string& name) {
  if (name.empty() || name.size() > kMaxScriptNameLength || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsReservedIdentifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '_') return true;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return true;
  }
  std::string lower = name.substr(0, 9);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "sparsetir") return true;
  // POSIX reserves the _t suffix for types (int32_t, size_t, ...).
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_t") == 0) return true;
  return Keywords().count(name) > 0 || LibraryNames().count(name) > 0 || IsMacroFamily(name);
}

std::string CommentText(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e || c == '\\' || c == '?') c = '_';
  }
  return out;
}

}  // namespace sparsetir
