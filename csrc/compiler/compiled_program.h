// The compile pipeline from a parsed PT2 program to an Executable, and what it produced.
//
// Needs: a Pt2Program, a Runtime, and a binding for every weight the archive does not carry.
// Guarantees: a CompiledProgram whose executable runs the program, or a luminal::Error.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/options.h"
#include "pt2/reader.h"
#include "runtime/runtime.h"
#include "translator/translate.h"

namespace luminal {

struct CompileStats {
  double read_ms = 0;
  double translate_ms = 0;
  double runtime_compile_ms = 0;
  size_t aten_node_count = 0;
  size_t ir_node_count = 0;
  size_t kernel_count = 0;
  std::vector<std::string> fallback_ops;
  size_t collectives = 0;  // Collective nodes: collectives each call issues
  std::string runtime_name;
};

struct CompiledProgram {
  translator::TranslatedProgram program;
  // Weights the archive carried (the AOT path); external weights are owned by the caller.
  std::map<std::string, pt2::StoredTensor> archive_weights;
  std::unique_ptr<runtime::Executable> executable;
  CompileStats stats;
};

// `external_weights` binds parameters/buffers/constants by FQN; the rest are taken from
// the archive's data/ folder. `read_ms` is the time already spent reading the archive.
std::unique_ptr<CompiledProgram> compile_program(pt2::Pt2Program program, const runtime::Runtime& runtime,
                                                 const std::map<std::string, runtime::BufferRef>& external_weights,
                                                 const CompileOptions& options, double read_ms);

}  // namespace luminal
