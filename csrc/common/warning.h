// Warnings from the core: things a user should hear about that are not errors (a damaged cache
// entry that was rebuilt, an unreadable tuning record that was ignored).
//
// The core never prints: the Python module routes warnings to the `luminal` logger, and a
// program without Python (tests, fuzzers) gets stderr. Safe to call from any thread.
#pragma once

#include <functional>
#include <string>

namespace luminal {

using WarningHandler = std::function<void(const std::string& message)>;

// Replaces the handler; an empty one restores stderr. Returns the previous handler.
WarningHandler set_warning_handler(WarningHandler handler);

void warn(const std::string& message);

}  // namespace luminal
