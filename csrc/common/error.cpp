#include "common/error.h"

#include <exception>

namespace luminal {

void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::User:
      throw UserError(message);
    case ErrorKind::Unsupported:
      throw UnsupportedError(message);
    case ErrorKind::Internal:
      break;
  }
  throw InternalError(message);
}

namespace detail {

ErrorReporter::ErrorReporter(ErrorKind kind, const char* file, int line, const char* condition)
    : kind_(kind), file_(file), line_(line), condition_(condition) {}

ErrorReporter::~ErrorReporter() noexcept(false) {
  std::string message = message_.str();
  if (kind_ == ErrorKind::Internal) {
    // Internal errors carry their source location: they are ours to fix.
    message += " (internal check '" + std::string(condition_) + "' failed at " + file_ + ":" +
               std::to_string(line_) + "; please report this as a luminal bug)";
  }
  // Never throw while another exception is unwinding: that would terminate the process.
  if (std::uncaught_exceptions() > 0) return;
  throw_error(kind_, message);
}

}  // namespace detail
}  // namespace luminal
