// Two error families, both always on (never compiled out):
//  - UserError: a bad script or a bad call; the message is for the user and names
//    the op / argument / iterator, with a source excerpt when the error has a span.
//  - InternalError: a compiler bug (ICHECK). The message says so.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

#include "support/source.h"

namespace sparsetir {

// Which family of user error; the Python layer maps each to an exception class.
enum class UserErrorKind {
  kScript,    // a script that does not parse or does not verify (ScriptError)
  kArgument,  // a kernel called with a bad argument (ValueError)
  kSchedule,  // a schedule primitive applied where it cannot be (ScheduleError)
  kCompile,   // the system compiler failed or is missing (CompileError)
};

// `message` with the control characters it may quote from user input written
// as \xNN: a NUL would end the message where C strings end (Python's and the
// terminal's), an escape sequence would act on the terminal. Line breaks and
// tabs stay.
std::string Printable(const std::string& message);

class UserError : public std::runtime_error {
 public:
  UserError(UserErrorKind kind, const std::string& message)
      : std::runtime_error(Printable(message)), kind_(kind) {}
  UserErrorKind kind() const { return kind_; }

 private:
  UserErrorKind kind_;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

// Builds "message\n  --> line:col\n   | source\n   |    ^^^" for a script error.
std::string FormatWithSpan(const std::string& message, const Span& span);

[[noreturn]] void ThrowScriptError(const std::string& message, const Span& span);
[[noreturn]] void ThrowArgumentError(const std::string& message);
[[noreturn]] void ThrowInternal(const char* file, int line, const std::string& message);

// Streams a message into a string: MakeMessage() << "x = " << x.
class MakeMessage {
 public:
  template <typename T>
  MakeMessage& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  operator std::string() const { return stream_.str(); }
  std::string str() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
};

}  // namespace sparsetir

// Internal invariant check: a failure is a compiler bug, never a user mistake.
#define ICHECK(cond)                                                              \
  if (!(cond))                                                                    \
  ::sparsetir::detail::InternalFailure(__FILE__, __LINE__, #cond)

namespace sparsetir::detail {
// Collects the streamed explanation and throws when destroyed.
class InternalFailure {
 public:
  InternalFailure(const char* file, int line, const char* cond) : file_(file), line_(line) {
    stream_ << "check failed: " << cond << ": ";
  }
  template <typename T>
  InternalFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  [[noreturn]] ~InternalFailure() noexcept(false) { ThrowInternal(file_, line_, stream_.str()); }

 private:
  const char* file_;
  int line_;
  std::ostringstream stream_;
};
}  // namespace sparsetir::detail
