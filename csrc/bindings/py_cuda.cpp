// The CUDA runtime's Python surface: its factory capsule, and checking generated kernels with
// NVRTC, no GPU needed (tests/cuda). `has_cuda` says whether this build has it (LUMINAL_CUDA).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>
#include <string>
#include <vector>

#ifdef LUMINAL_WITH_CUDA
#include "common/error.h"
#include "pt2/reader.h"
#include "runtime/cuda/check_kernels.h"
#include "runtime/cuda/cuda_runtime.h"
#include "runtime/cuda/strided_copy.h"
#include "translator/translate.h"
#endif

namespace py = pybind11;

namespace luminal::bindings {

#ifdef LUMINAL_WITH_CUDA
namespace {

using runtime::cuda::ImageKind;
using runtime::cuda::NvrtcCompiler;

// pip's CUDA wheels keep their libraries and headers under the `nvidia` namespace package:
// nvidia/cu13/{lib,include} (CUDA 13) or nvidia/cuda_nvrtc/lib, nvidia/cublas/lib,
// nvidia/cuda_runtime/include (12). Tells the runtime where NVRTC and cuBLASLt are.
void configure_from_pip_wheels() {
  runtime::cuda::NvrtcConfig config;
  std::vector<std::string> cublaslt;
  try {
    py::object spec = py::module_::import("importlib.util").attr("find_spec")("nvidia");
    py::object locations = py::none();
    if (!spec.is_none()) locations = spec.attr("submodule_search_locations");
    for (py::handle location : locations.is_none() ? py::list() : py::list(locations)) {
      const std::string root = py::str(location);
      config.library_candidates.push_back(root + "/cu13/lib/libnvrtc.so.13");
      config.library_candidates.push_back(root + "/cuda_nvrtc/lib/libnvrtc.so.12");
      config.include_dirs.push_back(root + "/cu13/include");
      config.include_dirs.push_back(root + "/cuda_runtime/include");
      cublaslt.push_back(root + "/cu13/lib/libcublasLt.so.13");
      cublaslt.push_back(root + "/cublas/lib/libcublasLt.so.12");
    }
  } catch (const py::error_already_set&) {
    // A broken `nvidia` package: search the loader's paths only.
  }
  runtime::cuda::configure_cuda_libraries(std::move(config), std::move(cublaslt));
}

NvrtcCompiler& compiler() { return runtime::cuda::process_nvrtc_compiler(); }

ImageKind image_kind(const std::string& name) {
  USER_CHECK(name == "cubin" || name == "ptx") << "image must be 'cubin' or 'ptx', got '" << name << "'";
  return name == "cubin" ? ImageKind::Cubin : ImageKind::Ptx;
}

py::dict report_dict(const runtime::cuda::KernelCheckReport& report) {
  py::list kernels;
  for (const runtime::cuda::KernelCheck& k : report.kernels) {
    py::dict images;
    for (const auto& [arch, image] : k.images) {
      py::dict d;
      d["ok"] = image->ok;
      d["warnings"] = image->has_warnings;
      d["log"] = image->log;
      d["bytes"] = image->image.size();
      images[py::str(arch)] = d;
    }
    py::dict d;
    d["name"] = k.name;
    d["what"] = k.what;
    d["launch"] = k.launch;
    d["source"] = k.source;
    d["symbols"] = k.symbols;
    d["launches"] = k.launches;
    d["images"] = images;
    kernels.append(d);
  }
  py::dict out;
  out["kernels"] = kernels;
  out["library_steps"] = report.library_steps;
  out["segments"] = report.segments;
  out["host_steps"] = report.host_steps;
  out["in_place_updates"] = report.in_place_updates;
  out["bias_epilogues"] = report.bias_epilogues;
  return out;
}

}  // namespace
#endif

void define_cuda(py::module_& m) {
#ifdef LUMINAL_WITH_CUDA
  configure_from_pip_wheels();
  m.attr("has_cuda") = true;
  m.def(
      "cuda_factory_capsule",
      [] {
        return py::capsule(const_cast<LuminalRuntimeFactory*>(runtime::cuda::cuda_runtime_factory()),
                           LUMINAL_RUNTIME_FACTORY_CAPSULE_NAME);
      },
      "The CUDA runtime factory, as a PyCapsule named 'luminal.runtime_factory'. Creating it needs no GPU; "
      "compiling a model needs the NVIDIA driver, NVRTC and cuBLASLt.");
  m.def(
      "cuda_nvrtc_version", [] { return compiler().version(); },
      "NVRTC's (major, minor); loads NVRTC, raising luminal.UserError when it is missing.");
  m.def(
      "cuda_check_pt2",
      [](const py::bytes& archive, const std::set<std::string>& externally_bound, const std::vector<std::string>& archs,
         const std::string& image) {
        std::string bytes = archive;
        const ImageKind kind = image_kind(image);
        NvrtcCompiler& nvrtc = compiler();
        runtime::cuda::KernelCheckReport report;
        {
          py::gil_scoped_release no_gil;
          pt2::ReadOptions options;
          options.externally_bound = externally_bound;
          const pt2::Pt2Program program =
              pt2::read_pt2_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), options);
          const translator::TranslatedProgram translated = translator::translate(program);
          report = runtime::cuda::check_kernels(translated.graph, archs, kind, nvrtc);
        }
        return report_dict(report);
      },
      py::arg("archive"), py::arg("externally_bound") = std::set<std::string>{},
      py::arg("archs") = std::vector<std::string>{"sm_80", "sm_90"}, py::arg("image") = "cubin",
      "Plans an in-memory PT2 archive's kernels as the CUDA runtime would and compiles each distinct one with "
      "NVRTC for every arch. Needs no GPU. Returns {'kernels': [{name, what, launch, source, symbols, launches, "
      "images: {arch: {ok, warnings, log, bytes}}}], 'library_steps': [...], 'segments': n, 'host_steps': [...], "
      "'in_place_updates': n, 'bias_epilogues': n}.");
  m.def(
      "cuda_check_runtime_kernels",
      [](const std::vector<std::string>& archs) {
        py::dict images;
        for (const std::string& arch : archs) {
          std::shared_ptr<const runtime::cuda::CompiledImage> image;
          {
            py::gil_scoped_release no_gil;
            image = compiler().compile(runtime::cuda::strided_copy_source(), "lm_strided_copy", arch,
                                       ImageKind::Cubin, false);
          }
          py::dict d;
          d["ok"] = image->ok;
          d["warnings"] = image->has_warnings;
          d["log"] = image->log;
          images[py::str(arch)] = d;
        }
        py::dict report;
        report["lm_strided_copy"] = images;
        return report;
      },
      py::arg("archs") = std::vector<std::string>{"sm_80", "sm_90"},
      "Compiles the CUDA runtime's own kernels (strided copies) with NVRTC for every arch: {name: {arch: {ok, "
      "warnings, log}}}. Needs no GPU.");
  m.def(
      "cuda_nvrtc_stats",
      [] {
        const runtime::cuda::NvrtcStats s = compiler().stats();
        py::dict d;
        d["compiled"] = s.compiled;
        d["cache_hits"] = s.cache_hits;
        return d;
      },
      "NVRTC invocations and in-memory cache hits of this process's CUDA kernel compiler.");
#else
  m.attr("has_cuda") = false;
#endif
}

}  // namespace luminal::bindings
