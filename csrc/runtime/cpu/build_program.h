// Graph -> Program: runs the pass pipeline (passes/pipeline.h), lowers every group to kernel IR
// (codegen/lower.h), emits C++ (codegen/cpp/emit.h), builds it (jit.h), and lays out buffers.
#pragma once

#include "ir/graph.h"
#include "runtime/cpu/program.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cpu {

Program build_program(const ir::Graph& graph, const CompileOptions& options);

}  // namespace luminal::runtime::cpu
