// luminal._C.compile_pt2 / compile_pt2_file and the CompiledProgram they return.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>

#include "bindings/py_runtime_factory.h"
#include "bindings/tensor_buffer.h"
#include "common/error.h"
#include "compiler/compiled_program.h"
#include "runtime/call_stream.h"

namespace py = pybind11;

namespace luminal::bindings {

namespace {

using translator::ProgramOutput;

CompileOptions parse_options(const py::dict& options) {
  CompileOptions parsed;
  for (auto item : options) {
    const std::string key = py::str(item.first);
    const py::handle value = item.second;
    if (key == "num_threads") {
      parsed.num_threads = value.cast<int>();
    } else if (key == "search_iterations") {
      parsed.search_iterations = value.cast<int>();
    } else if (key == "fallback") {
      parsed.fallback = value.cast<std::string>();
    } else if (key == "debug_dir") {
      parsed.debug_dir = value.cast<std::string>();
    } else if (key == "cache_dir") {
      parsed.cache_dir = value.cast<std::string>();
    } else if (key == "cpu_isa") {
      parsed.cpu_isa = value.cast<std::string>();
    } else if (key == "profile") {
      parsed.profile = value.cast<bool>();
    } else if (key == "pack_int4_weights") {
      parsed.pack_int4_weights = value.cast<bool>();
    } else {
      // luminal/options.py validates names first; reaching here means the two lists diverged.
      INTERNAL_ERROR() << "option '" << key << "' passed validation but is unknown to the C++ core";
    }
  }
  return parsed;
}

class PyCompiledProgram {
 public:
  PyCompiledProgram(RuntimeHandle runtime, std::map<std::string, at::Tensor> weights)
      : runtime_(std::move(runtime)), weights_(std::move(weights)), device_(runtime_.factory->device) {}

  void compile(pt2::Pt2Program program, const CompileOptions& options, double read_ms) {
    std::map<std::string, runtime::BufferRef> bound;
    for (const auto& [name, tensor] : weights_) bound[name] = buffer_of(tensor, "weight '" + name + "'", device_);
    compiled_ = compile_program(std::move(program), *runtime_.runtime, bound, options, read_ms);
    const auto& graph = compiled_->program.graph;
    for (ir::NodeId id : graph.input_nodes()) input_dtypes_.push_back(graph.node(id).dtype);
    for (const std::string& name : compiled_->executable->copied_weights())
      copied_versions_[name] = version_of(name, weights_.at(name));
  }

  // Runs on the user inputs; mutations land in the caller's tensors; returns user outputs.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) {
    rebind_written_copies();
    const auto& names = compiled_->program.input_names;
    USER_CHECK(inputs.size() == names.size())
        << "the compiled model takes " << names.size() << " tensor inputs, got " << inputs.size();
    std::vector<runtime::BufferRef> input_buffers;
    for (size_t i = 0; i < inputs.size(); ++i) {
      runtime::BufferRef ref = buffer_of(inputs[i], "input '" + names[i] + "'", device_);
      USER_CHECK(ref.dtype == input_dtypes_[i])
          << "input '" << names[i] << "' has dtype " << ir::dtype_name(ref.dtype) << " but the model was compiled for "
          << ir::dtype_name(input_dtypes_[i]) << "; recompile or cast the input";
      input_buffers.push_back(std::move(ref));
    }
    const c10::Device device = run_device(inputs);
    const runtime::OutputShapes shapes = compiled_->executable->output_shapes(input_buffers);
    const auto& outputs = compiled_->program.outputs;
    const auto& graph = compiled_->program.graph;
    std::vector<at::Tensor> results(outputs.size());
    std::vector<std::pair<at::Tensor, at::Tensor>> copy_backs;  // (destination, computed)
    std::vector<runtime::BufferRef> output_buffers(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!shapes[i]) continue;  // sized by tensor data: allocated during the run
      const ir::DType dtype = graph.node(graph.outputs()[i].node).dtype;
      at::Tensor target = mutation_target(outputs[i], inputs);
      at::Tensor out;
      // Write straight into the caller's tensor when its layout is the one we produce.
      if (target.defined() && target.is_contiguous() && target.sizes().vec() == *shapes[i] &&
          target.scalar_type() == to_torch_dtype(dtype)) {
        out = target;
      } else {
        out = empty_tensor(*shapes[i], dtype, device);
        if (target.defined()) copy_backs.emplace_back(target, out);
      }
      output_buffers[i] = buffer_of(out, "output " + std::to_string(i), device_);
      results[i] = out;
    }
    // Called without the GIL: allocating a CPU tensor does not need it.
    const runtime::LateOutputAllocator allocate_late = [&](size_t i, const std::vector<int64_t>& shape) {
      INTERNAL_CHECK(outputs[i].kind == ProgramOutput::Kind::UserOutput)
          << "output " << i << " mutates an input but its shape depends on tensor data";
      results[i] = empty_tensor(shape, graph.node(graph.outputs()[i].node).dtype, device);
      return buffer_of(results[i], "output " + std::to_string(i), device_);
    };
    {
      const runtime::CallStreamScope stream(device.is_cuda() ? current_cuda_stream(device) : nullptr);
      py::gil_scoped_release no_gil;
      compiled_->executable->run(input_buffers, output_buffers, allocate_late);
    }
    std::vector<at::Tensor> user_outputs;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].kind == ProgramOutput::Kind::UserOutput) user_outputs.push_back(results[i]);
    int64_t copied_back = 0;
    for (auto& [destination, computed] : copy_backs) {
      destination.copy_(computed);
      copied_back += static_cast<int64_t>(computed.nbytes());
    }
    last_copy_back_bytes_.store(copied_back);
    // Running totals, so a caller can tell what one step of several graphs copied in all.
    bytes_copied_total_ += compiled_->executable->last_run_stats().bytes_copied + copied_back;
    ++run_count_;
    return user_outputs;
  }

  void rebind_weight(const std::string& name, const at::Tensor& tensor) {
    USER_CHECK(weights_.count(name)) << "no weight named '" << name << "' is bound to this compiled model";
    auto copied = copied_versions_.find(name);
    const int64_t version = copied == copied_versions_.end() ? 0 : version_of(name, tensor);
    compiled_->executable->rebind_weight(name, buffer_of(tensor, "weight '" + name + "'", device_));
    weights_[name] = tensor;
    if (copied != copied_versions_.end()) copied->second = version;
  }

  std::vector<std::string> input_names() const { return compiled_->program.input_names; }

  // Where outputs are allocated: the CPU, or the GPU the inputs (or, without any, the weights) are on.
  c10::Device run_device(const std::vector<at::Tensor>& inputs) const {
    if (device_ != "cuda") return c10::kCPU;
    for (const at::Tensor& t : inputs)
      if (t.defined() && t.is_cuda()) return t.device();
    for (const auto& [name, tensor] : weights_)
      if (tensor.is_cuda()) return tensor.device();
    return c10::Device(c10::kCUDA, 0);
  }

  // torch's current stream on `device` (the caller's work is ordered on it): its cudaStream_t.
  static void* current_cuda_stream(const c10::Device& device) {
    const py::object stream = py::module_::import("torch").attr("cuda").attr("current_stream")(device.index());
    return reinterpret_cast<void*>(stream.attr("cuda_stream").cast<uintptr_t>());
  }

  py::list output_specs() const {
    py::list specs;
    for (const ProgramOutput& o : compiled_->program.outputs) {
      const char* kind = o.kind == ProgramOutput::Kind::UserOutput       ? "user_output"
                         : o.kind == ProgramOutput::Kind::WeightMutation ? "weight_mutation"
                                                                         : "user_input_mutation";
      specs.append(py::make_tuple(kind, o.target, o.user_input_index));
    }
    return specs;
  }

  py::dict stats() const {
    const CompileStats& s = compiled_->stats;
    py::dict d;
    d["read_ms"] = s.read_ms;
    d["translate_ms"] = s.translate_ms;
    d["runtime_compile_ms"] = s.runtime_compile_ms;
    d["aten_node_count"] = s.aten_node_count;
    d["ir_node_count"] = s.ir_node_count;
    d["kernel_count"] = s.kernel_count;
    d["fallback_ops"] = s.fallback_ops;
    d["collectives"] = s.collectives;
    d["runtime"] = s.runtime_name;
    // The runtime's copies plus ours into a caller tensor whose layout the runtime cannot write.
    const runtime::RunStats last = compiled_->executable->last_run_stats();
    d["bytes_copied_last_run"] = last.bytes_copied + last_copy_back_bytes_.load();
    d["bytes_copied_total"] = bytes_copied_total_.load();
    d["collective_wait_ms_last_run"] = static_cast<double>(last.collective_wait_ns) / 1e6;
    d["aten_matmuls_last_run"] = last.aten_matmuls;
    py::list steps;
    for (const runtime::StepTime& step : last.steps) steps.append(py::make_tuple(step.what, step.ms));
    d["step_ms_last_run"] = steps;
    d["run_count"] = run_count_.load();
    d["packed_weight_bytes"] = compiled_->executable->copied_weight_bytes();
    return d;
  }

  std::string ir_text() const { return ir::to_text(compiled_->program.graph); }

 private:
  // The version counter of a weight the executable copied (Executable::copied_weights): torch
  // counts every in-place write to the tensor and its views there. An inference tensor has none.
  static int64_t version_of(const std::string& name, const at::Tensor& tensor) {
    USER_CHECK(!tensor.is_inference())
        << "luminal option 'pack_int4_weights': weight '" << name
        << "' is an inference tensor (made under torch.inference_mode()), whose in-place writes torch does not "
           "count, so its packed copy could go stale unseen; create the model's weights outside inference_mode, or "
           "compile without the option";
    return tensor._version();
  }

  // Rebinds (so recopies) each copied weight written in place since it was last copied. Writes
  // that bypass the version counter (through `.data`, or another tensor over the same memory) are
  // not seen: docs/options.md says so where the option is described.
  void rebind_written_copies() {
    for (auto& [name, version] : copied_versions_) {
      const at::Tensor& tensor = weights_.at(name);
      if (tensor._version() == version) continue;
      compiled_->executable->rebind_weight(name, buffer_of(tensor, "weight '" + name + "'", device_));
      version = tensor._version();
    }
  }

  // The caller's tensor that output `o` mutates, or an undefined tensor for a user output.
  at::Tensor mutation_target(const ProgramOutput& o, const std::vector<at::Tensor>& inputs) const {
    switch (o.kind) {
      case ProgramOutput::Kind::UserOutput:
        return {};
      case ProgramOutput::Kind::UserInputMutation:
        return inputs.at(static_cast<size_t>(o.user_input_index));
      case ProgramOutput::Kind::WeightMutation: {
        auto it = weights_.find(o.target);
        // A weight the archive carried (AOT path) has no caller tensor: its new value is kept
        // nowhere, as torch.export's own unlifted module would keep it in the module.
        return it == weights_.end() ? at::Tensor() : it->second;
      }
    }
    return {};
  }

  RuntimeHandle runtime_;
  std::map<std::string, at::Tensor> weights_;
  std::string device_;
  std::unique_ptr<CompiledProgram> compiled_;
  std::vector<ir::DType> input_dtypes_;
  // Each copied weight's version counter when it was last copied (rebind_written_copies).
  std::map<std::string, int64_t> copied_versions_;
  std::atomic<int64_t> last_copy_back_bytes_{0};
  std::atomic<int64_t> bytes_copied_total_{0};
  std::atomic<int64_t> run_count_{0};
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

pt2::ReadOptions read_options_for(const std::map<std::string, at::Tensor>& weights) {
  pt2::ReadOptions options;
  for (const auto& [name, tensor] : weights) options.externally_bound.insert(name);
  return options;
}

std::unique_ptr<PyCompiledProgram> compile_from(std::function<pt2::Pt2Program(const pt2::ReadOptions&)> read,
                                                const py::object& factory, const py::dict& options,
                                                std::map<std::string, at::Tensor> weights) {
  RuntimeHandle runtime = runtime_from_capsule(factory);
  const CompileOptions parsed = parse_options(options);
  auto program = std::make_unique<PyCompiledProgram>(std::move(runtime), weights);
  py::gil_scoped_release no_gil;
  const auto start = std::chrono::steady_clock::now();
  pt2::Pt2Program pt2_program = read(read_options_for(weights));
  program->compile(std::move(pt2_program), parsed, ms_since(start));
  return program;
}

}  // namespace

void define_compiled_program(py::module_& m) {
  py::class_<PyCompiledProgram>(m, "CompiledProgram")
      .def("run", &PyCompiledProgram::run, py::arg("inputs"),
           "Runs on the user inputs; writes mutations into the caller's tensors; returns the user outputs.")
      .def("rebind_weight", &PyCompiledProgram::rebind_weight, py::arg("name"), py::arg("tensor"))
      .def_property_readonly("input_names", &PyCompiledProgram::input_names)
      .def_property_readonly("output_specs", &PyCompiledProgram::output_specs)
      .def_property_readonly("stats", &PyCompiledProgram::stats)
      .def("ir_text", &PyCompiledProgram::ir_text);

  m.def(
      "compile_pt2",
      [](const py::bytes& archive, const py::object& factory, const py::dict& options,
         std::map<std::string, at::Tensor> weights) {
        std::string bytes = archive;  // one copy of the (weight-stripped, small) archive
        return compile_from(
            [&bytes](const pt2::ReadOptions& o) {
              return pt2::read_pt2_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), o);
            },
            factory, options, std::move(weights));
      },
      py::arg("archive"), py::arg("factory"), py::arg("options") = py::dict(),
      py::arg("weights") = std::map<std::string, at::Tensor>{},
      "Compiles an in-memory PT2 archive; `weights` binds parameters/buffers by FQN without copying.");
  m.def(
      "compile_pt2_file",
      [](const std::string& path, const py::object& factory, const py::dict& options,
         std::map<std::string, at::Tensor> weights) {
        return compile_from([&path](const pt2::ReadOptions& o) { return pt2::read_pt2_file(path, o); }, factory,
                            options, std::move(weights));
      },
      py::arg("path"), py::arg("factory"), py::arg("options") = py::dict(),
      py::arg("weights") = std::map<std::string, at::Tensor>{}, "Compiles a .pt2 file (weights from the archive).");
  m.def(
      "check_pt2_file",
      [](const std::string& path, double payload_size_ratio) {
        USER_CHECK(payload_size_ratio >= 1) << "payload_size_ratio must be at least 1, got " << payload_size_ratio;
        pt2::ReadOptions options;
        options.payloads.size_ratio = payload_size_ratio;
        py::gil_scoped_release no_gil;
        pt2::check_pt2_file(path, options);
      },
      py::arg("path"), py::arg("payload_size_ratio") = 4.0,
      "Checks a .pt2 file as compile_pt2_file reads it (zip, model JSON, every payload entry's declared size "
      "against its tensor's), inflating no payload; raises UserError naming the entry and field at fault.");
}

}  // namespace luminal::bindings
