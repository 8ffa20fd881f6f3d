// A collective over a process group (torch.distributed's functional collectives): what a
// Collective node computes, as plain data. The core stays free of torch: the runtime hands it to
// the executor luminal._C registers (runtime/collectives.h), which issues it on the process
// group torch's registry holds under `group_name`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace luminal::ir {

struct Collective {
  enum class Kind {
    AllReduce,      // out = reduce over ranks of input (same shape)
    AllGather,      // out = the ranks' inputs concatenated along dim 0
    ReduceScatter,  // out = this rank's dim-0 slice of the reduction over ranks
    AllToAll,       // out = the dim-0 pieces the ranks sent to this one (split sizes below)
    Broadcast,      // out = rank src's input
  };
  Kind kind = Kind::AllReduce;
  std::string reduce_op;   // AllReduce, ReduceScatter: "sum", "avg", "max", "min", "product"
  std::string group_name;  // the registry's name of the process group ("0" for WORLD)
  int64_t group_size = 0;  // AllGather, ReduceScatter: the size the program's shapes assume
  int64_t src = 0;         // Broadcast: the source rank
  std::vector<Expr> output_split_sizes, input_split_sizes;  // AllToAll (empty: equal pieces)
  std::string op;  // the functional collective it came from ("_c10d_functional::all_reduce")

  std::string describe() const { return op + " on group '" + group_name + "'"; }
};

}  // namespace luminal::ir
