// What a script's names may become in generated code, and how text from a
// script reaches a generated comment.
//
// Every name a user can choose (functions, parameters, iterators, iterations,
// blocks, buffers, rule names) reaches generated C++ only through
// CodegenC::Name, which keeps a name as written when it is safe and otherwise
// prefixes it with "v_". Safe means: an ASCII identifier that is no C/C++
// keyword or alternative token, no macro, type or function that the prelude's
// headers declare and generated code uses, and not in the two namespaces that
// belong to the generated code itself:
//  - names starting with "sparsetir" in any case (the prelude's helpers and
//    every local the code generator invents: loop ends, task bounds, ...);
//  - names starting with '_' (reserved to the C++ implementation).
// So no user name can capture a generated one, and no generated one a user's.
//
// Comments: text from a script (a block name, a printed bound) is emitted
// through CommentText, which keeps printable ASCII other than the backslash
// and '?', so that no newline can end the comment and no trailing backslash
// (nor the trigraph ??/ where a compiler still reads trigraphs) can turn the
// next generated line into a comment.
#pragma once

#include <string>

namespace sparsetir {

// The longest name a script may give an iteration, a block or a format rule.
inline constexpr size_t kMaxScriptNameLength = 256;

// True if `name` may name an iteration, a block or a format rule: ASCII
// letters, digits and '_', not starting with a digit, at most
// kMaxScriptNameLength characters. The parser refuses any other such name.
bool IsScriptName(const std::string& name);

// True if `name` cannot be used verbatim as a C++ identifier in generated code.
bool IsReservedIdentifier(const std::string& name);

// `text` with every character outside printable ASCII, every backslash and
// every '?' replaced by '_': safe inside a // comment.
std::string CommentText(const std::string& text);

}  // namespace sparsetir
