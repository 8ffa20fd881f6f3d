// The reference runtime's Executable: interprets the graph node by node, allocating each
// intermediate for the run and freeing it after its last reader.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/reference/kernel.h"
#include "runtime/runtime.h"

namespace luminal::runtime::reference {

class ReferenceExecutable final : public Executable {
 public:
  // Validates the graph, selects every node's kernel and checks the weight bindings (UserError
  // for a missing or mismatched weight, UnsupportedError for an op/dtype pair with no kernel).
  ReferenceExecutable(ir::Graph graph, std::map<std::string, BufferRef> weights);

  OutputShapes output_shapes(const std::vector<BufferRef>& inputs) const override;
  void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
           const LateOutputAllocator& allocate_late) const override;
  void rebind_weight(const std::string& name, const BufferRef& buffer) override;
  RunStats last_run_stats() const override { return RunStats{last_bytes_copied_.load()}; }

 private:
  struct RunState;

  void bind_sources(const std::vector<BufferRef>& inputs, RunState& state) const;
  void choose_in_place(const std::vector<BufferRef>& outputs, RunState& state) const;
  void compute_node(ir::NodeId id, RunState& state) const;
  // Reads the symbol's value from its producer's buffer and binds it.
  void bind_data_symbol(const ir::DataSymbol& symbol, RunState& state) const;
  // `known`: the output shapes known before the run; the others are allocated here.
  void write_outputs(const std::vector<BufferRef>& outputs, const OutputShapes& known,
                     const LateOutputAllocator& allocate_late, RunState& state) const;

  ir::Graph graph_;
  std::vector<Kernel> kernels_;  // by node id; empty for Input and Weight
  // released_after_[i]: nodes whose buffers no node after i reads (graph outputs never).
  std::vector<std::vector<ir::NodeId>> released_after_;
  std::map<std::string, BufferRef> weights_;
  // in_place_output_[id]: for a Scatter that may write straight into the caller's buffer it
  // updates (a KV-cache write whose result is returned as the mutated input), the index of that
  // output; -1 otherwise. Whether it does is decided per run, from the buffers passed.
  std::vector<int> in_place_output_;
  // symbols_bound_after_[id]: the data symbols whose value node `id` computes.
  std::vector<std::vector<const ir::DataSymbol*>> symbols_bound_after_;
  mutable std::atomic<int64_t> last_bytes_copied_{0};
};

}  // namespace luminal::runtime::reference
