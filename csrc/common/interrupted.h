// The user interrupted (Ctrl-C) a child process the core was waiting for, such as the kernel
// compiler. Not a failure of luminal's, so not a luminal::Error: the bindings raise Python's
// KeyboardInterrupt, as if the interrupt had reached Python directly.
#pragma once

#include <stdexcept>

namespace luminal {

class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace luminal
