#include "runtime/call_stream.h"

namespace luminal::runtime {

namespace {
thread_local void* current = nullptr;
}  // namespace

void* call_stream() { return current; }

CallStreamScope::CallStreamScope(void* stream) : previous_(current) { current = stream; }

CallStreamScope::~CallStreamScope() { current = previous_; }

}  // namespace luminal::runtime
