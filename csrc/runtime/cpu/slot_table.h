// The buffers ("slots") of a compiled program, shared by the CPU and CUDA runtimes: one slot per
// Input node, then per Weight node, then one per stored node as steps are created; and each
// arena slot's lifetime, from the step writing it to the last step reading it.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "runtime/cpu/program.h"

namespace luminal::runtime::cpu {

class SlotTable {
 public:
  // Adds the Input slots (in Input-node order) and the Weight slots.
  SlotTable(const ir::Graph& graph, std::vector<Slot>& slots, std::vector<int>& slot_of_node)
      : graph_(graph), slots_(slots), slot_of_node_(slot_of_node) {
    slot_of_node_.assign(graph.size(), -1);
    const std::vector<ir::NodeId> inputs = graph.input_nodes();
    for (size_t i = 0; i < inputs.size(); ++i) add(Slot{Slot::Kind::Input, inputs[i], static_cast<int>(i), zero(), 0, 0});
    for (ir::NodeId id : graph.weight_nodes()) add(Slot{Slot::Kind::Weight, id, -1, zero(), 0, 0});
  }

  // The node's slot, created in the arena (sized from its shape) if it has none yet.
  int arena_slot(ir::NodeId id) {
    if (slot_of_node_[id] >= 0) return slot_of_node_[id];
    const ir::Node& node = graph_.node(id);
    return add(Slot{Slot::Kind::Arena, id, -1,
                    ir::numel(node.shape) * ir::Expr(static_cast<int64_t>(ir::dtype_size(node.dtype))), 0, 0});
  }

  // Sets each arena slot's [first_step, last_step] from the steps' `slots` (params, in order).
  template <class Steps>
  void assign_lifetimes(const Steps& steps) {
    std::vector<bool> written(slots_.size(), false);
    for (int s = 0; s < static_cast<int>(steps.size()); ++s) {
      for (int slot : steps[s].slots) {
        Slot& info = slots_[slot];
        if (info.kind != Slot::Kind::Arena) continue;
        if (!written[slot]) {
          written[slot] = true;
          info.first_step = s;
        }
        info.last_step = s;
      }
    }
  }

 private:
  static ir::Expr zero() { return ir::Expr(int64_t{0}); }
  int add(Slot slot) {
    slot_of_node_[slot.node] = static_cast<int>(slots_.size());
    slots_.push_back(std::move(slot));
    return slot_of_node_[slots_.back().node];
  }

  const ir::Graph& graph_;
  std::vector<Slot>& slots_;
  std::vector<int>& slot_of_node_;
};

}  // namespace luminal::runtime::cpu
