#include "support/error.h"

#include <algorithm>

namespace sparsetir {

std::string FormatWithSpan(const std::string& message, const Span& span) {
  if (!span.defined()) return message;
  std::ostringstream out;
  out << message << "\n  --> " << span.file->name << ":" << span.line << ":" << span.column << "\n";
  std::string line_number = std::to_string(span.line);
  std::string gutter(line_number.size(), ' ');
  out << " " << line_number << " | " << span.file->Line(span.line) << "\n";
  out << " " << gutter << " | " << std::string(std::max(0, span.column - 1), ' ')
      << std::string(std::max(1, span.length), '^');
  return out.str();
}

std::string Printable(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

void ThrowScriptError(const std::string& message, const Span& span) {
  throw UserError(UserErrorKind::kScript, FormatWithSpan(message, span));
}

void ThrowArgumentError(const std::string& message) {
  throw UserError(UserErrorKind::kArgument, message);
}

void ThrowInternal(const char* file, int line, const std::string& message) {
  std::ostringstream out;
  out << "internal compiler error (" << file << ":" << line << "): " << message
      << "\nThis is a bug in sparsetir, not in your script.";
  throw InternalError(out.str());
}

}  // namespace sparsetir
