#include "codegen/cuda_kernel_params.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
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

// A kernel's declaration: the text between the parentheses of the first
// `kernel(` whose declaration (back to the previous ';', '{' or '}') says
// __global__, and that declaration's text before the name.
struct KernelDeclaration {
  std::string parameters;
  std::string prefix;  // "template <typename T> __global__ void"
};

KernelDeclaration FindKernel(const std::string& code, const std::string& kernel) {
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
      if (depth == 0) return {code.substr(open + 1, k - open - 1), prefix};
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

// Where `word` stands alone in `text` (not inside a longer identifier).
std::vector<size_t> WordsAt(const std::string& text, const std::string& word) {
  std::vector<size_t> out;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !IsIdentifierChar(text[at - 1])) && (end >= text.size() || !IsIdentifierChar(text[end]))) {
      out.push_back(at);
    }
  }
  return out;
}

// Whether `text` holds a type's words and nothing else: identifiers, '::',
// '*' and blanks (not a struct's body, a function type, a template).
bool OnlyTypeWords(const std::string& text) {
  bool word = false;
  for (char c : text) {
    if (!IsIdentifierChar(c) && c != ':' && c != '*' && !std::isspace(static_cast<unsigned char>(c))) return false;
    word |= IsIdentifierChar(c);
  }
  return word;
}

// `#define NAME VALUE` (object-like: a blank after the name) on one line of
// the source: NAME and VALUE without a trailing comment.
std::optional<std::pair<std::string, std::string>> ObjectMacro(const std::string& line) {
  size_t i = 0;
  auto blanks = [&] {
    const size_t from = i;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    return i > from;
  };
  blanks();
  if (i >= line.size() || line[i] != '#') return std::nullopt;
  ++i;
  blanks();
  if (line.compare(i, 6, "define") != 0) return std::nullopt;
  i += 6;
  if (!blanks()) return std::nullopt;
  const size_t name = i;
  while (i < line.size() && IsIdentifierChar(line[i])) ++i;
  if (i == name) return std::nullopt;
  const std::string macro = line.substr(name, i - name);
  if (!blanks()) return std::nullopt;
  std::string value = line.substr(i);
  return std::make_pair(macro, value.substr(0, std::min(value.find("//"), value.find("/*"))));
}

// Read by hand rather than by std::regex, whose matcher recurses once per
// character it matches and overflows the stack on a long enough source.
Aliases AliasesOf(const std::string& source, const std::string& code, const std::vector<std::string>& options) {
  Aliases aliases;
  // typedef TYPE NAME;
  for (size_t at : WordsAt(code, "typedef")) {
    const size_t end = code.find(';', at);
    if (end == std::string::npos) break;
    const std::string text = code.substr(at + 7, end - at - 7);
    const std::vector<std::string> tokens = Tokens(text);
    if (!OnlyTypeWords(text) || tokens.size() < 2 || !IsIdentifierChar(tokens.back()[0])) continue;
    aliases[tokens.back()] = Join(tokens, 0, tokens.size() - 1);
  }
  // using NAME = TYPE;
  for (size_t at : WordsAt(code, "using")) {
    const size_t end = code.find(';', at);
    if (end == std::string::npos) break;
    const std::string text = code.substr(at + 5, end - at - 5);
    const size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    const std::vector<std::string> name = Tokens(text.substr(0, equals));
    const std::string value = text.substr(equals + 1);
    if (name.size() != 1 || !IsIdentifierChar(name[0][0]) || !OnlyTypeWords(value)) continue;
    aliases[name[0]] = value;
  }
  for (size_t begin = 0; begin < source.size();) {
    const size_t end = std::min(source.find('\n', begin), source.size());
    if (auto macro = ObjectMacro(source.substr(begin, end - begin))) aliases[macro->first] = macro->second;
    begin = end + 1;
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

// A struct or CUDA vector type passed by value, laid out as the device
// compiler lays it out (the C rules: each field at the next multiple of its
// alignment, the struct's alignment the largest of its fields' and of its
// alignas, its size a multiple of that).
class StructTypes {
 public:
  // CUDA's limit on a kernel's parameters, all together (since 12.1).
  static constexpr size_t kMaxParamBytes = 32764;

  StructTypes(const std::string& code, const Aliases& aliases) : code_(code), aliases_(aliases) {}

  // The type named `name`, or none where it is neither a vector type nor a
  // struct of the source; throws a UserError saying why a struct of the
  // source cannot be passed.
  std::optional<CudaKernelParam> Find(const std::string& name, int depth = 0) {
    if (auto vector = VectorType(name)) return vector;
    if (const auto it = done_.find(name); it != done_.end()) return it->second;
    const std::optional<Definition> definition = DefinitionOf(name);
    if (!definition) return std::nullopt;
    if (depth > 16) throw UserError(UserErrorKind::kArgument, "struct " + name + " nests too deep");
    if (!open_.insert(name).second) {
      throw UserError(UserErrorKind::kArgument, "struct " + name + " holds itself, which no struct can");
    }
    CudaKernelParam type = Layout(name, *definition, depth);
    open_.erase(name);
    done_[name] = type;
    return type;
  }

 private:
  struct Definition {
    std::string body;  // between the braces
    size_t align = 0;  // its alignas / __align__, 0 if none
  };

  // CUDA's vector types: x, y, z, w of one element; aligned to their size
  // with 2 or 4 elements (16 bytes at most), to their element's with 1 or 3.
  static std::optional<CudaKernelParam> VectorType(const std::string& name) {
    static const std::map<std::string, std::string> elements = {
        {"char", "signed char"},      {"uchar", "unsigned char"},
        {"short", "short"},           {"ushort", "unsigned short"},
        {"int", "int"},               {"uint", "unsigned int"},
        {"long", "long"},             {"ulong", "unsigned long"},
        {"longlong", "long long"},    {"ulonglong", "unsigned long long"},
        {"float", "float"},           {"double", "double"}};
    std::string element;
    size_t count = 0;
    if (name == "__half2" || name == "half2") {
      element = "__half", count = 2;
    } else if (name == "__nv_bfloat162" || name == "nv_bfloat162") {
      element = "__nv_bfloat16", count = 2;
    } else if (!name.empty() && name.back() >= '1' && name.back() <= '4') {
      const auto it = elements.find(name.substr(0, name.size() - 1));
      if (it == elements.end()) return std::nullopt;
      element = it->second, count = static_cast<size_t>(name.back() - '0');
    } else {
      return std::nullopt;
    }
    const Scalar scalar = Scalars().at(element);
    CudaKernelParam type;
    type.kind = CudaKernelParam::Kind::kStruct;
    type.type = name;
    type.bytes = scalar.bytes * count;
    type.align = count == 2 || count == 4 ? std::min<size_t>(type.bytes, 16) : scalar.bytes;
    for (size_t i = 0; i < count; ++i) {
      CudaStructField field;
      field.name = std::string(1, "xyzw"[i]);
      field.offset = i * scalar.bytes;
      field.type.kind = scalar.kind;
      field.type.type = element;
      field.type.bytes = field.type.align = scalar.bytes;
      type.fields.push_back(field);
    }
    return type;
  }

  // The alignment an `alignas(n)` or `__align__(n)` among `tokens` asks
  // for (removed from them), 0 if none.
  size_t TakeAlignment(std::vector<std::string>& tokens, const std::string& what) const {
    size_t align = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if ((tokens[i] != "alignas" && tokens[i] != "__align__") || i + 1 >= tokens.size() || tokens[i + 1] != "(") {
        continue;
      }
      size_t close = i + 2;
      while (close < tokens.size() && tokens[close] != ")") ++close;
      const std::vector<std::string> inside(tokens.begin() + i + 2, tokens.begin() + std::min(close, tokens.size()));
      const size_t n = Constant(inside, what + "'s " + tokens[i]);
      if (n == 0 || (n & (n - 1)) != 0 || n > kMaxParamBytes) {
        throw UserError(UserErrorKind::kArgument, what + " asks for an alignment of " + std::to_string(n) +
                                                      ", not a power of two up to " + std::to_string(kMaxParamBytes));
      }
      align = std::max(align, n);
      tokens.erase(tokens.begin() + i, tokens.begin() + std::min(close + 1, tokens.size()));
      --i;
    }
    return align;
  }

  // An integer constant: a literal (after the aliases), such as an array's
  // size or an alignment.
  size_t Constant(const std::vector<std::string>& tokens, const std::string& what) const {
    const std::vector<std::string> expanded = Expanded(tokens, aliases_);
    if (expanded.size() == 1) {
      // Decimal or hexadecimal digits, then any of C's integer suffixes.
      std::string digits = expanded[0];
      while (!digits.empty() && std::strchr("uUlL", digits.back())) digits.pop_back();
      const bool hex = digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
      const size_t first = hex ? 2 : 0;
      bool number = digits.size() > first;
      for (size_t i = first; i < digits.size(); ++i) {
        number &= hex ? std::isxdigit(static_cast<unsigned char>(digits[i])) != 0
                      : std::isdigit(static_cast<unsigned char>(digits[i])) != 0;
      }
      // Past nine digits no struct fits in a kernel's parameters anyway.
      if (number && digits.size() - first <= 9) return static_cast<size_t>(std::stoull(digits, nullptr, 0));
      if (number) {
        throw UserError(UserErrorKind::kArgument, what + " is " + expanded[0] + ", far more than a kernel's "
                                                      "parameters hold");
      }
    }
    throw UserError(UserErrorKind::kArgument, what + " is '" + Join(tokens, 0, tokens.size()) +
                                                  "', which is not an integer literal (or a macro of one)");
  }

  // `struct name {...}`, `class name {...}` or `typedef struct [tag] {...}
  // name;` in the source.
  std::optional<Definition> DefinitionOf(const std::string& name) const {
    std::vector<std::pair<size_t, std::string>> heads;  // where a key word is, which
    for (const char* key : {"struct", "class", "union"}) {
      for (size_t at : WordsAt(code_, key)) heads.emplace_back(at, key);
    }
    std::sort(heads.begin(), heads.end());
    for (const auto& [at, key] : heads) {
      const size_t open = BodyOpen(at + key.size());
      if (open == std::string::npos) continue;
      const size_t close = Matching(open);
      if (close >= code_.size()) continue;  // no closing brace: the compiler's to report
      std::vector<std::string> before = Tokens(code_.substr(at + key.size(), open - at - key.size()));
      std::string tag;
      bool base = false;
      size_t align = 0;
      std::vector<std::string> words;
      align = TakeAlignment(before, "struct " + name);
      for (size_t i = 0; i < before.size(); ++i) {
        if (before[i] == ":") base = true;
        if (before[i] == "final") continue;
        if (!base && IsIdentifierChar(before[i][0])) tag = before[i];
      }
      std::string declared = tag;
      if (PrecededByTypedef(at)) {  // typedef struct [tag] {...} name;
        const size_t semicolon = code_.find(';', close);
        const std::vector<std::string> after = Tokens(code_.substr(close + 1, semicolon - close - 1));
        if (tag == name || std::find(after.begin(), after.end(), name) != after.end()) declared = name;
      }
      if (declared != name) continue;
      if (key == "union") {
        throw UserError(UserErrorKind::kArgument, "'" + name + "' is a union, whose layout this reader does not "
                                                            "follow; pass it through a pointer");
      }
      if (base) {
        throw UserError(UserErrorKind::kArgument, "struct " + name + " derives from another, whose layout this "
                                                                     "reader does not follow; pass it through a "
                                                                     "pointer");
      }
      return Definition{code_.substr(open + 1, close - open - 1), align};
    }
    return std::nullopt;
  }

  // The '{' of a struct's body after its key word at `from`, past the
  // parentheses of an alignas, __align__ or __attribute__; npos where a ';'
  // or another '(' comes first (a declaration, a function).
  size_t BodyOpen(size_t from) const {
    for (size_t k = from; k < code_.size(); ++k) {
      if (code_[k] == '{') return k;
      if (code_[k] == ';') return std::string::npos;
      if (code_[k] != '(') continue;
      const std::string word = WordBefore(k);
      if (word != "alignas" && word != "__align__" && word != "__attribute__") return std::string::npos;
      for (int depth = 0; k < code_.size(); ++k) {
        depth += code_[k] == '(' ? 1 : code_[k] == ')' ? -1 : 0;
        if (depth == 0) break;
      }
    }
    return std::string::npos;
  }

  // The identifier that ends before `at`, blanks between; "" if none.
  std::string WordBefore(size_t at) const {
    size_t end = at;
    while (end > 0 && std::isspace(static_cast<unsigned char>(code_[end - 1]))) --end;
    size_t begin = end;
    while (begin > 0 && IsIdentifierChar(code_[begin - 1])) --begin;
    return code_.substr(begin, end - begin);
  }

  bool PrecededByTypedef(size_t at) const { return WordBefore(at) == "typedef"; }

  // The '}' that closes the '{' at `open`.
  size_t Matching(size_t open) const {
    int depth = 0;
    for (size_t k = open; k < code_.size(); ++k) {
      depth += code_[k] == '{' ? 1 : code_[k] == '}' ? -1 : 0;
      if (depth == 0) return k;
    }
    return code_.size();
  }

  // The members of a struct's body: its declarations, a function's body
  // ending one as a ';' does.
  static std::vector<std::string> Members(const std::string& body) {
    std::vector<std::string> out;
    std::string current;
    int depth = 0;
    for (char c : body) {
      current += c;
      if (c == '{') ++depth;
      if (c == '}') --depth;
      if (depth == 0 && (c == ';' || c == '}')) {
        out.push_back(current);
        current.clear();
      }
    }
    out.push_back(current);
    return out;
  }

  CudaKernelParam Layout(const std::string& name, const Definition& definition, int depth) {
    CudaKernelParam type;
    type.kind = CudaKernelParam::Kind::kStruct;
    type.type = name;
    size_t offset = 0, align = std::max<size_t>(definition.align, 1);
    for (const std::string& member : Members(definition.body)) {
      std::vector<std::string> tokens = Tokens(member);
      // Access labels, then what takes no room in an object.
      while (tokens.size() >= 2 && tokens[1] == ":" &&
             (tokens[0] == "public" || tokens[0] == "private" || tokens[0] == "protected")) {
        tokens.erase(tokens.begin(), tokens.begin() + 2);
      }
      if (tokens.empty() || tokens[0] == ";") continue;
      static const std::set<std::string> no_room = {"static", "using", "typedef", "friend", "template",
                                                    "enum", "constexpr", "static_assert"};
      if (no_room.count(tokens[0])) continue;
      const std::string what = "struct " + name;
      if (std::find(tokens.begin(), tokens.end(), "virtual") != tokens.end()) {
        throw UserError(UserErrorKind::kArgument, what + " has a virtual function; pass it through a pointer");
      }
      if (std::find(tokens.begin(), tokens.end(), "(") != tokens.end() &&
          std::find(tokens.begin(), tokens.end(), "alignas") == tokens.end() &&
          std::find(tokens.begin(), tokens.end(), "__align__") == tokens.end()) {
        continue;  // a member function (or a constructor): no room either
      }
      const bool nested = tokens[0] == "struct" || tokens[0] == "class" || tokens[0] == "union";
      if (nested && std::find(tokens.begin(), tokens.end(), "{") != tokens.end()) {
        throw UserError(UserErrorKind::kArgument, what + " defines a " + tokens[0] +
                                                      " inside it; define that one apart");
      }
      for (CudaStructField& field : Fields(what, tokens, depth)) {
        offset = (offset + field.type.align - 1) / field.type.align * field.type.align;
        field.offset = offset;
        offset += field.type.bytes * std::max<size_t>(field.count, 1);
        if (offset > kMaxParamBytes) {
          throw UserError(UserErrorKind::kArgument, "struct " + name + " is over " + std::to_string(kMaxParamBytes) +
                                                        " bytes, the most a kernel's parameters take");
        }
        align = std::max(align, field.type.align);
        type.fields.push_back(std::move(field));
      }
    }
    if (type.fields.empty()) throw UserError(UserErrorKind::kArgument, "struct " + name + " has no fields");
    type.align = align;
    type.bytes = (offset + align - 1) / align * align;
    return type;
  }

  // The fields one member declaration makes: `const float* a, b[4];`.
  std::vector<CudaStructField> Fields(const std::string& what, std::vector<std::string> tokens, int depth) {
    static const std::set<std::string> qualifiers = {"const", "volatile", "__restrict__", "__restrict", "mutable",
                                                     "struct", "class"};
    const size_t align = TakeAlignment(tokens, what);
    // Up to the first declarator's name: the type's words.
    std::vector<std::string> declaration;
    for (const std::string& t : tokens) {
      if (t == "=" || t == "{" || t == ";") break;  // a default member initializer changes no layout
      declaration.push_back(t);
    }
    const std::vector<std::string> expanded = Expanded(declaration, aliases_);
    std::vector<std::vector<std::string>> declarators(1);
    for (const std::string& t : expanded) {
      if (t == ",") {
        declarators.emplace_back();
      } else if (!qualifiers.count(t)) {
        declarators.back().push_back(t);
      }
    }
    // The type's words: those before the first declarator's '*', or all but
    // its name where it has none.
    std::vector<std::string> type_words;
    bool star = false;
    for (const std::string& t : declarators[0]) {
      if (t == ":") throw UserError(UserErrorKind::kArgument, what + " has a bit-field; pass it through a pointer");
      if (t == "*") star = true;
      if (t == "*" || t == "[") break;
      type_words.push_back(t);
    }
    if (!star && !type_words.empty()) type_words.pop_back();
    if (type_words.empty()) {
      throw UserError(UserErrorKind::kArgument, what + " has a member this reader does not understand ('" +
                                                    Join(tokens, 0, tokens.size()) + "')");
    }
    declarators[0].erase(declarators[0].begin(), declarators[0].begin() + static_cast<long>(type_words.size()));
    const std::string type_name = Join(type_words, 0, type_words.size());
    std::vector<CudaStructField> fields;
    for (const std::vector<std::string>& declarator : declarators) {
      CudaStructField field;
      int stars = 0;
      size_t count = 1;
      bool array = false;
      for (size_t i = 0; i < declarator.size(); ++i) {
        const std::string& t = declarator[i];
        if (t == "*") {
          ++stars;
        } else if (t == "[") {
          size_t close = i + 1;
          while (close < declarator.size() && declarator[close] != "]") ++close;
          count *= Constant({declarator.begin() + i + 1, declarator.begin() + std::min(close, declarator.size())},
                            what + "'s array size");
          if (count > kMaxParamBytes) {
            throw UserError(UserErrorKind::kArgument, what + "'s field '" + field.name + "' has over " +
                                                          std::to_string(kMaxParamBytes) + " elements");
          }
          array = true;
          i = close;
        } else if (t == ":") {
          throw UserError(UserErrorKind::kArgument, what + " has a bit-field; pass it through a pointer");
        } else if (IsIdentifierChar(t[0])) {
          field.name = t;
        }
      }
      if (stars > 0) {
        field.type.kind = CudaKernelParam::Kind::kPointer;
        field.type.type = type_name + std::string(stars, '*');
        field.type.bytes = field.type.align = 8;
        const auto element = Scalars().find(type_name);
        if (stars == 1 && element != Scalars().end()) {
          field.type.element_kind = element->second.kind;
          field.type.element_bytes = element->second.bytes;
        }
      } else if (const auto scalar = Scalars().find(type_name); scalar != Scalars().end()) {
        field.type.kind = scalar->second.kind;
        field.type.type = type_name;
        field.type.bytes = field.type.align = scalar->second.bytes;
      } else if (std::optional<CudaKernelParam> inner = Find(type_name, depth + 1)) {
        field.type = std::move(*inner);
      } else {
        throw UserError(UserErrorKind::kArgument, what + "'s field '" + field.name + "' has type '" + type_name +
                                                      "', which is no arithmetic type, __half, __nv_bfloat16, "
                                                      "vector type or struct of the source");
      }
      if (array && count == 0) throw UserError(UserErrorKind::kArgument, what + "'s field '" + field.name +
                                                                             "' is an array of no elements");
      field.count = array ? count : 0;
      field.type.align = std::max(field.type.align, align);
      fields.push_back(std::move(field));
    }
    return fields;
  }

  const std::string& code_;
  const Aliases& aliases_;
  std::map<std::string, CudaKernelParam> done_;
  std::set<std::string> open_;  // being laid out
};

CudaKernelParam ReadParameter(const std::string& kernel, size_t position, const std::string& text,
                              const Aliases& aliases, StructTypes& structs) {
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
    param.bytes = param.align = 8;
    return param;
  }
  const auto found = Scalars().find(param.type);
  if (found != Scalars().end()) {
    param.kind = found->second.kind;
    param.bytes = param.align = found->second.bytes;
    return param;
  }
  std::optional<CudaKernelParam> aggregate;
  try {
    aggregate = structs.Find(param.type);
  } catch (const UserError& e) {
    Fail(kernel, where + ": " + e.what());
  }
  if (!aggregate) {
    Fail(kernel, where + " has type '" + param.type +
                     "', which st.launch_cuda cannot pass: a parameter is a pointer, an arithmetic type, __half, "
                     "__nv_bfloat16, a CUDA vector type or a struct the source defines");
  }
  aggregate->declaration = param.declaration;
  aggregate->name = param.name;
  return *aggregate;
}

}  // namespace

CudaKernelName ParseCudaKernelName(const std::string& kernel) {
  CudaKernelName out;
  const size_t open = kernel.find('<');
  out.name = Trimmed(kernel.substr(0, open));
  bool identifier = !out.name.empty() && !std::isdigit(static_cast<unsigned char>(out.name[0]));
  for (char c : out.name) identifier &= IsIdentifierChar(c);
  const std::string trimmed = Trimmed(kernel);
  if (!identifier || (open != std::string::npos && trimmed.back() != '>')) {
    throw UserError(UserErrorKind::kArgument,
                    "'" + kernel + "' names no kernel: a kernel is named by its name, or a template kernel's by an "
                                   "instance such as 'k<float, 4>'");
  }
  if (open == std::string::npos) return out;
  out.instance = true;
  const std::string inside = Trimmed(trimmed.substr(trimmed.find('<') + 1, trimmed.size() - trimmed.find('<') - 2));
  if (!inside.empty()) {
    for (const std::string& arg : SplitParameters(inside)) out.template_args.push_back(Trimmed(arg));
  }
  return out;
}

namespace {

// The template parameters of a declaration's `prefix` ("template <typename
// T, int N = 4> __global__ void"), each with its default ("" if none);
// empty for a plain function.
std::vector<std::pair<std::string, std::string>> TemplateParameters(const std::string& kernel,
                                                                    const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<size_t> at = WordsAt(prefix, "template");
  if (at.empty()) return out;
  const size_t open = prefix.find('<', at[0]);
  size_t close = open;
  for (int depth = 0; close != std::string::npos && close < prefix.size(); ++close) {
    depth += prefix[close] == '<' || prefix[close] == '(' ? 1 : prefix[close] == '>' || prefix[close] == ')' ? -1 : 0;
    if (depth == 0) break;
  }
  if (open == std::string::npos || close >= prefix.size()) Fail(kernel, "its template parameter list has no '>'");
  const std::string list = Trimmed(prefix.substr(open + 1, close - open - 1));
  if (list.empty()) return out;
  for (const std::string& piece : SplitParameters(list)) {
    if (piece.find("...") != std::string::npos) {
      Fail(kernel, "its template parameter '" + Trimmed(piece) + "' is a pack, which st.launch_cuda cannot name");
    }
    const size_t equals = piece.find('=');
    const std::vector<std::string> words = Tokens(piece.substr(0, equals));
    if (words.empty() || !IsIdentifierChar(words.back()[0]) || words.size() < 2) {
      Fail(kernel, "its template parameter '" + Trimmed(piece) + "' names nothing");
    }
    out.emplace_back(words.back(), equals == std::string::npos ? "" : Trimmed(piece.substr(equals + 1)));
  }
  return out;
}

// `aliases` with each template parameter of the declaration standing for
// the instance's argument (or its default).
Aliases WithTemplateArguments(Aliases aliases, const CudaKernelName& name, const std::string& prefix) {
  const auto parameters = TemplateParameters(name.name, prefix);
  if (parameters.empty() && name.instance) {
    Fail(name.name, "it is no template, so it is named without <...>");
  }
  if (!parameters.empty() && !name.instance) {
    Fail(name.name, "it is a template kernel: name an instance of it, such as '" + name.name + "<" +
                        (parameters[0].second.empty() ? "float" : parameters[0].second) + ">'");
  }
  if (name.template_args.size() > parameters.size()) {
    Fail(name.name, "it has " + std::to_string(parameters.size()) + " template parameters, got " +
                        std::to_string(name.template_args.size()) + " arguments");
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& [parameter, fallback] = parameters[i];
    if (i >= name.template_args.size() && fallback.empty()) {
      Fail(name.name, "its template parameter '" + parameter + "' has no default, and the instance gives it no "
                                                               "argument");
    }
    aliases[parameter] = i < name.template_args.size() ? name.template_args[i] : fallback;
  }
  return aliases;
}

}  // namespace

std::vector<CudaKernelParam> CudaKernelParams(const std::string& source, const std::string& kernel,
                                              const std::vector<std::string>& options) {
  const CudaKernelName name = ParseCudaKernelName(kernel);
  const std::string code = CodeOnly(source);
  const KernelDeclaration declaration = FindKernel(code, name.name);
  const std::string& list = declaration.parameters;
  const Aliases aliases = WithTemplateArguments(AliasesOf(source, code, options), name, declaration.prefix);
  StructTypes structs(code, aliases);
  std::vector<CudaKernelParam> params;
  const std::string trimmed = Trimmed(list);
  if (trimmed.empty() || trimmed == "void") return params;
  const std::vector<std::string> pieces = SplitParameters(list);
  for (size_t i = 0; i < pieces.size(); ++i) {
    params.push_back(ReadParameter(kernel, i, pieces[i], aliases, structs));
  }
  return params;
}

}  // namespace sparsetir
