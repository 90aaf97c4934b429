#include "codegen/cuda_kernel_params.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "codegen/nvrtc_macro_options.h"
#include "support/error.h"

namespace sparsetir {
namespace {

[[noreturn]] void Fail(const std::string& kernel, const std::string& what) {
  throw UserError(UserErrorKind::kArgument, "CUDA kernel '" + kernel + "': " + what);
}

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `source` with comments, string and character literals and preprocessor
// lines (with their continuations) blanked out, newlines kept: what is left
// is declarations and code.
std::string CodeOnly(const std::string& source) {
  std::string out = source;
  size_t i = 0;
  bool line_start = true;
  auto blank = [&out](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  while (i < out.size()) {
    const char c = source[i];
    if (line_start && c == '#') {
      size_t end = i;
      while (end < source.size() && !(source[end] == '\n' && source[end - 1] != '\\')) ++end;
      blank(i, end);
      i = end;
      continue;
    }
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) line_start = false;
    if (source.compare(i, 2, "//") == 0) {
      const size_t end = source.find('\n', i);
      blank(i, end == std::string::npos ? source.size() : end);
      i = end == std::string::npos ? source.size() : end;
    } else if (source.compare(i, 2, "/*") == 0) {
      const size_t close = source.find("*/", i + 2);
      const size_t end = close == std::string::npos ? source.size() : close + 2;
      blank(i, end);
      i = end;
    } else if (c == '"' || c == '\'') {
      size_t end = i + 1;
      while (end < source.size() && source[end] != c && source[end] != '\n') end += source[end] == '\\' ? 2 : 1;
      blank(i, end + 1);
      i = end + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// The text between the parentheses of the first `kernel(` whose declaration
// (back to the previous ';', '{' or '}') says __global__.
std::string ParameterList(const std::string& code, const std::string& kernel) {
  for (size_t at = code.find(kernel); at != std::string::npos; at = code.find(kernel, at + 1)) {
    const size_t end = at + kernel.size();
    if ((at > 0 && IsIdentifierChar(code[at - 1])) || (end < code.size() && IsIdentifierChar(code[end]))) continue;
    size_t open = end;
    while (open < code.size() && std::isspace(static_cast<unsigned char>(code[open]))) ++open;
    if (open >= code.size() || code[open] != '(') continue;
    const size_t start = code.find_last_of(";{}", at);
    const std::string prefix = code.substr(start == std::string::npos ? 0 : start + 1, at - (start + 1));
    if (prefix.find("__global__") == std::string::npos) continue;
    int depth = 0;
    for (size_t k = open; k < code.size(); ++k) {
      depth += code[k] == '(' ? 1 : code[k] == ')' ? -1 : 0;
      if (depth == 0) return code.substr(open + 1, k - open - 1);
    }
    Fail(kernel, "its parameter list has no closing ')'");
  }
  Fail(kernel, "the source declares no __global__ function of that name (a kernel run by name is an extern \"C\" "
               "__global__ function)");
}

// The list split at the commas outside (), [] and <>.
std::vector<std::string> SplitParameters(const std::string& list) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : list) {
    if (c == '(' || c == '[' || c == '<') ++depth;
    if (c == ')' || c == ']' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  out.push_back(current);
  return out;
}

// Identifiers (with '::' joined into them) and the punctuation between them.
std::vector<std::string> Tokens(const std::string& text) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (IsIdentifierChar(text[i]) || text.compare(i, 2, "::") == 0) {
      size_t end = i;
      while (end < text.size() && (IsIdentifierChar(text[end]) || text.compare(end, 2, "::") == 0)) {
        end += text.compare(end, 2, "::") == 0 ? 2 : 1;
      }
      tokens.push_back(text.substr(i, end - i));
      i = end;
    } else {
      tokens.push_back(std::string(1, text[i]));
      ++i;
    }
  }
  return tokens;
}

struct Scalar {
  CudaKernelParam::Kind kind;
  size_t bytes;
};

// The arithmetic types a parameter may have, by their words joined with
// single spaces; `long` is 64-bit (LP64), as on the host the GPU code is
// compiled for.
const std::map<std::string, Scalar>& Scalars() {
  using K = CudaKernelParam::Kind;
  static const std::map<std::string, Scalar> table = [] {
    std::map<std::string, Scalar> t;
    auto both = [&t](const std::vector<std::string>& signed_names, const std::vector<std::string>& unsigned_names,
                     size_t bytes) {
      for (const std::string& n : signed_names) t[n] = {K::kSigned, bytes};
      for (const std::string& n : unsigned_names) t[n] = {K::kUnsigned, bytes};
    };
    both({"char", "signed char", "int8_t", "std::int8_t"}, {"unsigned char", "uint8_t", "std::uint8_t"}, 1);
    both({"short", "short int", "signed short", "signed short int", "int16_t", "std::int16_t"},
         {"unsigned short", "unsigned short int", "uint16_t", "std::uint16_t"}, 2);
    both({"int", "signed", "signed int", "int32_t", "std::int32_t"},
         {"unsigned", "unsigned int", "uint32_t", "std::uint32_t"}, 4);
    both({"long", "long int", "signed long", "signed long int", "long long", "long long int", "signed long long",
          "signed long long int", "int64_t", "std::int64_t", "ptrdiff_t", "std::ptrdiff_t", "intptr_t", "ssize_t"},
         {"unsigned long", "unsigned long int", "unsigned long long", "unsigned long long int", "uint64_t",
          "std::uint64_t", "size_t", "std::size_t", "uintptr_t"},
         8);
    t["bool"] = {K::kBool, 1};
    t["float"] = {K::kFloat, 4};
    t["double"] = {K::kFloat, 8};
    for (const char* n : {"__half", "half"}) t[n] = {K::kHalf, 2};
    for (const char* n : {"__nv_bfloat16", "nv_bfloat16"}) t[n] = {K::kBFloat16, 2};
    return t;
  }();
  return table;
}

bool IsTypeWord(const std::string& token) {
  static const std::set<std::string> words = {"char", "short", "int", "long", "signed", "unsigned",
                                              "bool", "float", "double"};
  return words.count(token) > 0;
}

std::string Join(const std::vector<std::string>& tokens, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) out += (out.empty() ? "" : " ") + tokens[i];
  return out;
}

// `text` with its runs of whitespace made one space, and none at either end.
std::string Trimmed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += c;
    } else if (!out.empty() && out.back() != ' ') {
      out += ' ';
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Names that stand for types: object-like macros (`#define real float`, and
// -DNAME=VALUE among `options`, which win), typedefs and using-declarations
// (`typedef unsigned int index_t;`, `using real = float;`), each to its text.
// Conditional compilation is not followed, so -U only undoes a -D before it.
using Aliases = std::map<std::string, std::string>;

Aliases AliasesOf(const std::string& source, const std::string& code, const std::vector<std::string>& options) {
  static const std::regex define(R"(^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]*))", std::regex::multiline);
  static const std::regex typedef_(R"(\btypedef\s+([\w\s:*]+?)\s*\b(\w+)\s*;)");
  static const std::regex using_(R"(\busing\s+(\w+)\s*=\s*([\w\s:*]+?)\s*;)");
  Aliases aliases;
  for (std::sregex_iterator it(code.begin(), code.end(), typedef_), end; it != end; ++it) {
    aliases[(*it)[2]] = (*it)[1];
  }
  for (std::sregex_iterator it(code.begin(), code.end(), using_), end; it != end; ++it) {
    aliases[(*it)[1]] = (*it)[2];
  }
  for (std::sregex_iterator it(source.begin(), source.end(), define), end; it != end; ++it) {
    std::string value = (*it)[2];
    value = value.substr(0, std::min(value.find("//"), value.find("/*")));
    aliases[(*it)[1]] = value;
  }
  // After the source's: a -D option is defined before the source, where a
  // default under #ifndef would not replace it.
  for (const MacroOption& macro : DefinedMacros(options)) aliases[macro.name] = macro.value;
  return aliases;
}

// `tokens` with every alias replaced by its own tokens, again and again (a
// few levels: `#define real scalar_t` of a typedef).
std::vector<std::string> Expanded(const std::vector<std::string>& tokens, const Aliases& aliases, int depth = 0) {
  std::vector<std::string> out;
  for (const std::string& token : tokens) {
    const auto alias = aliases.find(token);
    if (alias == aliases.end() || depth >= 8) {
      out.push_back(token);
      continue;
    }
    for (const std::string& t : Expanded(Tokens(alias->second), aliases, depth + 1)) out.push_back(t);
  }
  return out;
}

CudaKernelParam ReadParameter(const std::string& kernel, size_t position, const std::string& text,
                              const Aliases& aliases) {
  static const std::set<std::string> qualifiers = {"const", "volatile", "__restrict__", "__restrict", "restrict",
                                                   "__grid_constant__", "register"};
  CudaKernelParam param;
  param.declaration = Trimmed(text);
  const std::string where = "parameter " + std::to_string(position) + " ('" + param.declaration + "')";
  std::vector<std::string> words;
  int stars = 0;
  bool array = false;
  for (const std::string& token : Expanded(Tokens(text), aliases)) {
    if (qualifiers.count(token)) continue;
    if (token == "*") {
      ++stars;
    } else if (token == "[") {
      array = true;
    } else if (token == "&") {
      Fail(kernel, where + " is a reference; a kernel's parameters are values (pass a pointer)");
    } else if (IsIdentifierChar(token[0]) || token[0] == ':') {
      if (!array) words.push_back(token);
    } else if (token != "]") {
      Fail(kernel, where + " is not a declaration this reader understands ('" + token + "')");
    }
  }
  if (words.empty()) Fail(kernel, where + " names no type");
  // The last word is the name unless it is part of an arithmetic type
  // (`unsigned n` against `unsigned long`) or the declaration is a lone type.
  const std::string all = Join(words, 0, words.size());
  const bool unnamed = words.size() == 1 || (IsTypeWord(words.back()) && Scalars().count(all));
  const size_t type_words = unnamed ? words.size() : words.size() - 1;
  param.name = unnamed ? "" : words.back();
  param.type = Join(words, 0, type_words);
  if (stars > 0 || array) {
    const auto element = Scalars().find(param.type);
    if (stars + (array ? 1 : 0) == 1 && element != Scalars().end()) {
      param.element_kind = element->second.kind;
      param.element_bytes = element->second.bytes;
    }
    param.type += std::string(stars + (array ? 1 : 0), '*');
    param.kind = CudaKernelParam::Kind::kPointer;
    param.bytes = 8;
    return param;
  }
  const auto found = Scalars().find(param.type);
  if (found == Scalars().end()) {
    Fail(kernel, where + " has type '" + param.type +
                     "', which st.launch_cuda cannot pass: a parameter is a pointer, an arithmetic type, __half or "
                     "__nv_bfloat16 (pass a struct or a vector type through a pointer)");
  }
  param.kind = found->second.kind;
  param.bytes = found->second.bytes;
  return param;
}

}  // namespace

std::vector<CudaKernelParam> CudaKernelParams(const std::string& source, const std::string& kernel,
                                              const std::vector<std::string>& options) {
  const std::string code = CodeOnly(source);
  const std::string list = ParameterList(code, kernel);
  const Aliases aliases = AliasesOf(source, code, options);
  std::vector<CudaKernelParam> params;
  const std::string trimmed = Trimmed(list);
  if (trimmed.empty() || trimmed == "void") return params;
  const std::vector<std::string> pieces = SplitParameters(list);
  for (size_t i = 0; i < pieces.size(); ++i) params.push_back(ReadParameter(kernel, i, pieces[i], aliases));
  return params;
}

}  // namespace sparsetir
