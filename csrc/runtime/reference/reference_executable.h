// The reference runtime's Executable: interprets the graph node by node, allocating each
// intermediate for the run and freeing it after its last reader.
#pragma once

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

  std::vector<std::vector<int64_t>> output_shapes(const std::vector<BufferRef>& inputs) const override;
  void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs) const override;
  void rebind_weight(const std::string& name, const BufferRef& buffer) override;

 private:
  struct RunState;

  void bind_sources(const std::vector<BufferRef>& inputs, RunState& state) const;
  void compute_node(ir::NodeId id, RunState& state) const;
  void write_outputs(const std::vector<BufferRef>& outputs, RunState& state) const;

  ir::Graph graph_;
  std::vector<Kernel> kernels_;  // by node id; empty for Input and Weight
  // released_after_[i]: nodes whose buffers no node after i reads (graph outputs never).
  std::vector<std::vector<ir::NodeId>> released_after_;
  std::map<std::string, BufferRef> weights_;
};

}  // namespace luminal::runtime::reference
