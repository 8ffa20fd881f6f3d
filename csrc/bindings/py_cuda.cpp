// The CUDA code generator's Python surface: checking generated kernels with NVRTC, no GPU
// needed (tests/cuda). `has_cuda_codegen` says whether this build has it (LUMINAL_CUDA).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>
#include <string>
#include <vector>

#ifdef LUMINAL_WITH_CUDA
#include "common/error.h"
#include "pt2/reader.h"
#include "runtime/cuda/check_kernels.h"
#include "translator/translate.h"
#endif

namespace py = pybind11;

namespace luminal::bindings {

#ifdef LUMINAL_WITH_CUDA
namespace {

using runtime::cuda::ImageKind;
using runtime::cuda::NvrtcCompiler;

// pip's CUDA wheels keep their libraries and headers under the `nvidia` namespace package:
// nvidia/cu13/{lib,include} (CUDA 13) or nvidia/cuda_nvrtc/lib, nvidia/cuda_runtime/include (12).
runtime::cuda::NvrtcConfig config_from_pip_wheels() {
  runtime::cuda::NvrtcConfig config;
  try {
    py::object spec = py::module_::import("importlib.util").attr("find_spec")("nvidia");
    if (spec.is_none() || spec.attr("submodule_search_locations").is_none()) return config;
    for (py::handle location : spec.attr("submodule_search_locations")) {
      const std::string root = py::str(location);
      config.library_candidates.push_back(root + "/cu13/lib/libnvrtc.so.13");
      config.library_candidates.push_back(root + "/cuda_nvrtc/lib/libnvrtc.so.12");
      config.include_dirs.push_back(root + "/cu13/include");
      config.include_dirs.push_back(root + "/cuda_runtime/include");
    }
  } catch (const py::error_already_set&) {
    // A broken `nvidia` package: search the loader's paths only.
  }
  return config;
}

// One compiler (and so one in-memory module cache) per process, created on first use.
NvrtcCompiler& compiler() {
  static NvrtcCompiler instance(config_from_pip_wheels());
  return instance;
}

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
  return out;
}

}  // namespace
#endif

void define_cuda(py::module_& m) {
#ifdef LUMINAL_WITH_CUDA
  m.attr("has_cuda_codegen") = true;
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
      "images: {arch: {ok, warnings, log, bytes}}}], 'library_steps': [...]}.");
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
  m.attr("has_cuda_codegen") = false;
#endif
}

}  // namespace luminal::bindings
