// The ATen fallback's executor: calls an AtenCall's op through the c10 dispatcher. One of the
// two places outside csrc/bindings that include torch; compiled into luminal._C only.
#pragma once

namespace luminal::runtime::aten_fallback {

// Installs the c10-dispatcher executor process-wide (runtime/aten_fallback.h). Called once when
// luminal._C is imported.
void install_c10_dispatch_executor();

}  // namespace luminal::runtime::aten_fallback
