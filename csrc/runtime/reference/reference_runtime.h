// The reference runtime: interprets the primitive IR node by node. Slow, obvious and correct;
// the oracle that generated kernels and torch eager are compared against (STYLE.md).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "runtime/runtime.h"

namespace luminal::runtime::reference {

class ReferenceRuntime final : public Runtime {
 public:
  std::string name() const override { return "reference"; }
  // CompileOptions::num_threads > 0 sets OpenBLAS's thread count, which is process-wide:
  // the last compile wins for every executable in the process.
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const std::map<std::string, BufferRef>& weights,
                                      const CompileOptions& options) const override;
};

}  // namespace luminal::runtime::reference
