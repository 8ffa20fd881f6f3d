#include "common/warning.h"

#include <cstdio>
#include <mutex>

namespace luminal {
namespace {

std::mutex& handler_mutex() {
  static std::mutex mutex;
  return mutex;
}

WarningHandler& current_handler() {
  static WarningHandler handler;
  return handler;
}

}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(handler_mutex());
  WarningHandler previous = std::move(current_handler());
  current_handler() = std::move(handler);
  return previous;
}

void warn(const std::string& message) {
  WarningHandler handler;
  {
    std::lock_guard<std::mutex> lock(handler_mutex());
    handler = current_handler();
  }
  if (handler) {
    handler(message);
  } else {
    std::fprintf(stderr, "luminal warning: %s\n", message.c_str());
  }
}

}  // namespace luminal
