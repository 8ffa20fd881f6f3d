#include "runtime/cuda/cuda_runtime.h"

#include <filesystem>
#include <fstream>
#include <mutex>

#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/cuda_executable.h"

namespace luminal::runtime::cuda {

namespace {

std::mutex config_mutex;
NvrtcConfig& nvrtc_config() {
  static NvrtcConfig config;
  return config;
}

void* create_cuda_runtime() noexcept {
  try {
    return static_cast<Runtime*>(new CudaRuntime());
  } catch (...) {
    return nullptr;
  }
}

void destroy_runtime(void* runtime) noexcept { delete static_cast<Runtime*>(runtime); }

const LuminalRuntimeFactory kCudaFactory{LUMINAL_RUNTIME_FACTORY_ABI_VERSION, "cuda", "cuda", create_cuda_runtime,
                                         destroy_runtime};

}  // namespace

void configure_cuda_libraries(NvrtcConfig nvrtc, std::vector<std::string> cublaslt) {
  {
    std::lock_guard<std::mutex> lock(config_mutex);
    nvrtc_config() = std::move(nvrtc);
  }
  set_cublaslt_candidates(std::move(cublaslt));
}

NvrtcCompiler& process_nvrtc_compiler() {
  static NvrtcCompiler* compiler = [] {
    std::lock_guard<std::mutex> lock(config_mutex);
    return new NvrtcCompiler(nvrtc_config());  // lives as long as the process: models share it
  }();
  return *compiler;
}

std::unique_ptr<Executable> CudaRuntime::compile(const ir::Graph& graph, const std::map<std::string, BufferRef>& weights,
                                                 const CompileOptions& options) const {
  ir::verify(graph);
  passes::PassContext cx;
  cx.debug_dir = options.debug_dir;
  CudaProgram program = build_cuda_program(graph, cx);
  if (!options.debug_dir.empty()) {
    std::ofstream stats(std::filesystem::path(options.debug_dir) / "cuda_stats.txt");
    stats << "steps " << program.steps.size() << "\ngenerated kernel launches " << program.kernel_count
          << "\nunique kernels " << program.unique_kernels << "\ngraph segments " << program.segments.size() << "\n";
    for (const ProgramStep& step : program.steps) {
      const CudaStep& planned = program.plan.steps[step.plan_step];
      stats << (step.host ? "host   " : "device ") << planned.cuda.name << "  " << planned.what << "\n";
      if (step.kind == ProgramStep::Kind::Kernel)
        std::ofstream(std::filesystem::path(options.debug_dir) / (planned.cuda.name + ".cu")) << planned.cuda.source;
    }
  }
  return std::make_unique<CudaExecutable>(std::move(program), weights, process_nvrtc_compiler());
}

const LuminalRuntimeFactory* cuda_runtime_factory() { return &kCudaFactory; }

}  // namespace luminal::runtime::cuda
