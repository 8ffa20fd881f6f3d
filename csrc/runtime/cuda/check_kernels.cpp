#include "runtime/cuda/check_kernels.h"

#include "runtime/cuda/cuda_program.h"

namespace luminal::runtime::cuda {

KernelCheckReport check_kernels(const ir::Graph& graph, const std::vector<std::string>& archs, ImageKind kind,
                                NvrtcCompiler& compiler) {
  passes::PassContext cx;
  const CudaProgram program = build_cuda_program(graph, cx);
  const CudaKernelPlan& plan = program.plan;
  KernelCheckReport report;
  report.segments = program.segments.size();
  report.in_place_updates = program.in_place.size();
  report.bias_epilogues = program.bias_epilogues;
  for (const ProgramStep& step : program.steps)
    if (step.host) report.host_steps.push_back(plan.steps[step.plan_step].what);
  std::map<std::string, size_t> index_of;
  for (const CudaStep& step : plan.steps) {
    if (step.kind == CudaStep::Kind::Library) {
      report.library_steps.push_back(step.what);
      continue;
    }
    auto [it, inserted] = index_of.emplace(step.cuda.name, report.kernels.size());
    if (!inserted) {
      ++report.kernels[it->second].launches;
      continue;
    }
    KernelCheck check;
    check.name = step.cuda.name;
    check.what = step.what;
    check.launch = codegen::cuda::launch_kind_name(step.cuda.launch.kind);
    check.source = step.cuda.source;
    check.symbols = step.cuda.symbols;
    check.launches = 1;
    for (const std::string& arch : archs)
      check.images[arch] = compiler.compile(step.cuda.source, step.cuda.name, arch, kind, step.cuda.uses_halves);
    report.kernels.push_back(std::move(check));
  }
  return report;
}

}  // namespace luminal::runtime::cuda
