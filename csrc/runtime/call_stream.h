// The device stream a call's work is ordered on, set by the Python bindings around each run to
// torch's current stream for the inputs' device; nullptr (the legacy default stream) when
// unset. A thread-local, so that Executable::run keeps its device-free signature.
#pragma once

namespace luminal::runtime {

void* call_stream();

// Sets call_stream() on this thread for its lifetime.
class CallStreamScope {
 public:
  explicit CallStreamScope(void* stream);
  ~CallStreamScope();
  CallStreamScope(const CallStreamScope&) = delete;
  CallStreamScope& operator=(const CallStreamScope&) = delete;

 private:
  void* previous_;
};

}  // namespace luminal::runtime
