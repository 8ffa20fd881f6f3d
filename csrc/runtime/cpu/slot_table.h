// The buffers ("slots") of a compiled program, shared by the CPU and CUDA runtimes: one slot per
// Input node, then per Weight node, then one per stored node as steps are created; each arena
// slot's lifetime, from the step writing it to the last step reading it; and, for graphs with
// data symbols (nonzero's row count), which slots are sized only during the run and where each
// symbol's value is read.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/graph.h"
#include "runtime/cpu/program.h"

namespace luminal::runtime::cpu {

inline bool mentions_any(const std::vector<std::string>& names, const std::set<std::string>& of) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return of.count(n) != 0; });
}

inline std::set<std::string> data_symbol_names(const ir::Graph& graph) {
  std::set<std::string> names;
  for (const ir::DataSymbol& s : graph.data_symbols()) names.insert(s.name);
  return names;
}

// Every symbol the graph's shapes mention, sorted: a program's call plans are keyed by their values.
inline std::vector<std::string> graph_symbols(const ir::Graph& graph) {
  std::vector<std::string> symbols;
  for (const ir::Node& node : graph.nodes())
    for (const ir::Expr& d : node.shape) d.collect_symbols(symbols);
  std::sort(symbols.begin(), symbols.end());
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  return symbols;
}

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

  // The Int4Pairs slot of Weight `id` (program.h), created on first use; the node's own slot
  // stays the Weight's.
  int int4_pairs_slot(ir::NodeId id) {
    INTERNAL_CHECK(graph_.node(id).op == ir::Op::Weight) << "int4 pairs of %" << id << ", which is not a weight";
    auto it = int4_pairs_.find(id);
    if (it != int4_pairs_.end()) return it->second;
    slots_.push_back(Slot{Slot::Kind::Int4Pairs, id, -1, zero(), 0, 0});
    return int4_pairs_[id] = static_cast<int>(slots_.size()) - 1;
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

  // Marks Late the arena slots whose size mentions a data symbol (allocated during the run, once
  // it is bound) and returns where each data symbol is read: after the step writing its value's
  // slot, or before the first step (-1) for an input or weight. After assign_lifetimes.
  std::vector<SymbolRead> plan_data_symbols() {
    const std::set<std::string> data_symbols = data_symbol_names(graph_);
    std::vector<SymbolRead> reads;
    if (data_symbols.empty()) return reads;
    std::vector<std::string> names;
    for (Slot& slot : slots_) {
      names.clear();
      slot.bytes.collect_symbols(names);
      if (slot.kind == Slot::Kind::Arena && mentions_any(names, data_symbols)) slot.kind = Slot::Kind::Late;
    }
    for (size_t i = 0; i < graph_.data_symbols().size(); ++i) {
      const ir::DataSymbol& symbol = graph_.data_symbols()[i];
      const int slot = slot_of_node_[symbol.value.node];
      INTERNAL_CHECK(slot >= 0) << "data symbol " << symbol.name << ": its value %" << symbol.value.node
                                << " has no buffer";
      const Slot& info = slots_[slot];
      const int after = info.kind == Slot::Kind::Input || info.kind == Slot::Kind::Weight ? -1 : info.first_step;
      reads.push_back(SymbolRead{i, after, slot, symbol.value.view.offset()});
    }
    return reads;
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
  std::map<ir::NodeId, int> int4_pairs_;  // int4_pairs_slot's, by weight
};

}  // namespace luminal::runtime::cpu
