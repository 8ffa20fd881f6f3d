// Which Scatter steps may write straight into the caller's buffer they update (StaticCache's
// index_copy_ of the new K/V rows), shared by the CPU and CUDA runtimes, whose programs have the
// same slots, steps (`scatter`: the Scatter node a step computes, or -1; `slots`: its params,
// out first) and outputs. Whether a step does so is decided per run, from the buffers passed.
#pragma once

#include <algorithm>
#include <vector>

#include "ir/graph.h"
#include "runtime/cpu/program.h"

namespace luminal::runtime::cpu {

struct InPlaceScatter {
  int output = -1;     // the graph output returning its result
  int data_slot = -1;  // the Input or Weight slot it updates
  int out_slot = -1;   // its result's slot
};

// The data operand is a whole Input or Weight read contiguously, the result is returned
// contiguously as a graph output, and no step after it, no other operand of it and no graph
// output reads the old value. Steps run in program order, so a reader of the old value
// scheduled before the Scatter is harmless however the graph numbers the two.
template <class Program>
std::vector<InPlaceScatter> find_in_place_scatters(const ir::Graph& graph, const Program& program) {
  std::vector<InPlaceScatter> found;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const auto& step = program.steps[s];
    if (step.scatter < 0) continue;
    const ir::Node& node = graph.node(step.scatter);
    const ir::NodeId data = node.inputs[0].node;
    const int data_slot = program.slot_of_node[data];
    if (!node.inputs[0].view.is_contiguous() || data_slot < 0 || program.slots[data_slot].kind == Slot::Kind::Arena)
      continue;
    bool old_value_read_later = step.slots[2] == data_slot || step.slots[3] == data_slot;
    for (size_t later = s + 1; later < program.steps.size() && !old_value_read_later; ++later) {
      const std::vector<int>& slots = program.steps[later].slots;
      old_value_read_later = std::find(slots.begin(), slots.end(), data_slot) != slots.end();
    }
    int output = -1;
    for (size_t k = 0; k < program.outputs.size(); ++k) {
      const ir::TensorRef& ref = program.outputs[k].ref;
      if (ref.node == data) old_value_read_later = true;
      if (output < 0 && ref.node == step.scatter && ref.view.is_contiguous()) output = static_cast<int>(k);
    }
    if (old_value_read_later || output < 0) continue;
    found.push_back({output, data_slot, step.slots[0]});
  }
  return found;
}

}  // namespace luminal::runtime::cpu
