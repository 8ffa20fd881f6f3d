// Error reporting for the whole core.
//
// Three classes of failure, mapped one-to-one onto Python exceptions by the bindings:
//   UserError        -> luminal.UserError        (bad archive, bad input shapes, misuse)
//   UnsupportedError -> luminal.UnsupportedError (an op/dtype/feature we do not handle yet)
//   InternalError    -> luminal.InternalError    (a compiler bug: "please report")
//
// Use the streaming check macros:
//   USER_CHECK(n >= 0) << "entry " << name << ": negative size";
//   UNSUPPORTED_CHECK(ok) << "aten::foo.bar is not translated";
//   INTERNAL_CHECK(ok) << "view rank mismatch";
// The exception is thrown when the full statement ends, so the message is complete.
// Nothing reachable from user input may abort(); everything throws one of these.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace luminal {

enum class ErrorKind { User, Unsupported, Internal };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message)
      : std::runtime_error(message), kind_(kind), message_(std::move(message)) {}
  ErrorKind kind() const { return kind_; }
  const char* what() const noexcept override { return message_.c_str(); }
  // Prefixes the message with a context frame, e.g. "node 17 aten::index.Tensor: ".
  void add_context(const std::string& frame) { message_ = frame + ": " + message_; }

 private:
  ErrorKind kind_;
  std::string message_;
};

class UserError : public Error {
 public:
  explicit UserError(std::string m) : Error(ErrorKind::User, std::move(m)) {}
};
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(std::string m) : Error(ErrorKind::Unsupported, std::move(m)) {}
};
class InternalError : public Error {
 public:
  explicit InternalError(std::string m) : Error(ErrorKind::Internal, std::move(m)) {}
};

[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);

namespace detail {
// Collects a message and throws when the full expression ends (its destructor runs).
class ErrorReporter {
 public:
  ErrorReporter(ErrorKind kind, const char* file, int line, const char* condition);
  ErrorReporter(const ErrorReporter&) = delete;
  ErrorReporter& operator=(const ErrorReporter&) = delete;
  ~ErrorReporter() noexcept(false);
  std::ostream& stream() { return message_; }

 private:
  ErrorKind kind_;
  const char* file_;
  int line_;
  const char* condition_;
  std::ostringstream message_;
};
}  // namespace detail

}  // namespace luminal

#define LUMINAL_CHECK_IMPL(kind, condition) \
  if (condition) {                          \
  } else                                    \
    ::luminal::detail::ErrorReporter(kind, __FILE__, __LINE__, #condition).stream()

#define USER_CHECK(condition) LUMINAL_CHECK_IMPL(::luminal::ErrorKind::User, condition)
#define UNSUPPORTED_CHECK(condition) LUMINAL_CHECK_IMPL(::luminal::ErrorKind::Unsupported, condition)
#define INTERNAL_CHECK(condition) LUMINAL_CHECK_IMPL(::luminal::ErrorKind::Internal, condition)
#define USER_ERROR() USER_CHECK(false)
#define UNSUPPORTED_ERROR() UNSUPPORTED_CHECK(false)
#define INTERNAL_ERROR() INTERNAL_CHECK(false)
