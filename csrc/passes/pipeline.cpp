#include "passes/pipeline.h"

#include <filesystem>
#include <fstream>

#include "passes/dead_code.h"
#include "passes/fusion/fuse.h"
#include "passes/gather_before_pointwise.h"
#include "passes/legalize_matmul.h"
#include "passes/quantized_weights.h"

namespace luminal::passes {

namespace {
void dump(const PassContext& cx, int step, const std::string& name, const std::string& text) {
  if (cx.debug_dir.empty()) return;
  std::filesystem::create_directories(cx.debug_dir);
  std::ofstream(std::filesystem::path(cx.debug_dir) / (std::to_string(step) + "_" + name + ".txt")) << text;
}
}  // namespace

KernelPlan plan_kernels(ir::Graph g, PassContext& cx) {
  int step = 0;
  dump(cx, step++, "input", ir::to_text(g));
  if (cx.quantized_gemv_weights) {
    g = read_quantized_weights_in_gemvs(std::move(g), cx.gemv_rows);
    ir::verify(g);
    dump(cx, step++, "quantized_weights", ir::to_text(g));
  }
  g = move_gathers_before_pointwise(std::move(g));
  ir::verify(g);
  dump(cx, step++, "gathers_before_pointwise", ir::to_text(g));
  g = eliminate_dead_code(std::move(g));
  ir::verify(g);
  dump(cx, step++, "dead_code", ir::to_text(g));
  g = legalize_matmul(std::move(g), cx.native_half_matmuls, cx.gemv_rows);
  ir::verify(g);
  dump(cx, step++, "legalize_matmul", ir::to_text(g));
  Partition partition = fuse(g, cx);
  dump(cx, step++, "fuse", partition_to_text(g, partition));
  if (!cx.debug_dir.empty()) {
    std::string log;
    for (const std::string& line : cx.log) log += line + "\n";
    dump(cx, step++, "fusion_log", log);
  }
  return KernelPlan{std::move(g), std::move(partition)};
}

}  // namespace luminal::passes
