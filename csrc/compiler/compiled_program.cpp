#include "compiler/compiled_program.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "runtime/aten_fallback.h"
#include "translator/args.h"

namespace luminal {

namespace {
double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

ir::DType stored_dtype(const pt2::StoredTensor& t) {
  return translator::to_ir_dtype(t.dtype, "weight '" + t.fqn + "'");
}

runtime::BufferRef stored_buffer(pt2::StoredTensor& t) {
  runtime::BufferRef ref;
  ref.dtype = stored_dtype(t);
  ref.data = t.bytes.data() + t.storage_offset * static_cast<int64_t>(ir::dtype_size(ref.dtype));
  ref.sizes = t.sizes;
  ref.strides = t.strides;
  return ref;
}

void write_debug_files(const CompiledProgram& compiled, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / "ir.txt") << ir::to_text(compiled.program.graph);
}
}  // namespace

std::unique_ptr<CompiledProgram> compile_program(pt2::Pt2Program program, const runtime::Runtime& runtime,
                                                 const std::map<std::string, runtime::BufferRef>& external_weights,
                                                 const CompileOptions& options, double read_ms) {
  auto compiled = std::make_unique<CompiledProgram>();
  compiled->stats.read_ms = read_ms;
  compiled->stats.aten_node_count = program.program.graph.nodes.size();
  compiled->stats.runtime_name = runtime.name();

  auto start = std::chrono::steady_clock::now();
  translator::TranslateOptions translate_options;
  translate_options.aten_fallback = options.fallback == "aten";
  translate_options.aten_op_exists = runtime::aten_op_exists;
  compiled->program = translator::translate(program, translate_options);
  compiled->stats.fallback_ops = compiled->program.aten_fallback_ops;
  compiled->stats.translate_ms = elapsed_ms(start);
  compiled->stats.ir_node_count = compiled->program.graph.size();
  for (const ir::Node& node : compiled->program.graph.nodes())
    compiled->stats.collectives += node.op == ir::Op::Collective ? 1 : 0;

  // Weights: the caller's tensors by pointer first, then whatever the archive carried.
  compiled->archive_weights = std::move(program.weights);
  compiled->archive_weights.merge(program.constants);
  std::map<std::string, runtime::BufferRef> bound;
  for (const translator::WeightSpec& w : compiled->program.weights) {
    if (auto it = external_weights.find(w.fqn); it != external_weights.end()) {
      bound[w.fqn] = it->second;
    } else if (auto stored = compiled->archive_weights.find(w.fqn); stored != compiled->archive_weights.end()) {
      bound[w.fqn] = stored_buffer(stored->second);
    } else {
      USER_ERROR() << "weight '" << w.fqn << "' is neither in the archive's data/ folder nor passed by the caller";
    }
  }

  start = std::chrono::steady_clock::now();
  runtime::CompileOptions runtime_options;
  runtime_options.num_threads = options.num_threads;
  runtime_options.search_iterations = options.search_iterations;
  runtime_options.cache_dir = options.cache_dir;
  runtime_options.debug_dir = options.debug_dir;
  runtime_options.cpu_isa = options.cpu_isa;
  runtime_options.time_steps = options.profile;
  runtime_options.pack_int4_weights = options.pack_int4_weights;
  compiled->executable = runtime.compile(compiled->program.graph, bound, runtime_options);
  compiled->stats.runtime_compile_ms = elapsed_ms(start);
  compiled->stats.kernel_count = compiled->program.graph.size();
  if (!options.debug_dir.empty()) write_debug_files(*compiled, options.debug_dir);
  return compiled;
}

}  // namespace luminal
