// libFuzzer target for the whole compile path: PT2 archive bytes through read_pt2_bytes, the
// translator and the reference runtime's compile (compile_program with the ATen fallback off),
// then one run on zero-filled inputs when every shape is concrete and the work is small.
//
// Outcomes: UserError and UnsupportedError are the contract for bad input. An InternalError
// means that user input reached a "compiler bug" check, which is a finding: the target aborts so
// that libFuzzer keeps the input; with LUMINAL_FUZZ_INTERNAL=log it prints the first error of
// each check (saving its input under LUMINAL_FUZZ_INTERNAL_DIR if set) and fuzzing goes on.
// Any other exception, crash, sanitizer report, hang or huge allocation is a finding too.
// LUMINAL_FUZZ_VERBOSE=1 prints each input's outcome (to check what the seeds reach).
//
// Byte mutations of a zip mostly die on libzip's CRC check (fuzz_pt2_reader covers those), so a
// custom mutator unpacks the archive, mutates one entry and re-zips it (STORED, fresh CRCs). The
// entry is usually the model JSON, mutated as a tree: op targets swapped for other registered
// overloads, boundary integers, tensor names rewired, list items deleted or duplicated.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/compiled_program.h"
#include "pt2/archive.h"
#include "pt2/reader.h"
#include "runtime/aligned_buffer.h"
#include "runtime/buffer_layout.h"
#include "runtime/reference/reference_runtime.h"
#include "translator/registry.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using luminal::runtime::AlignedBuffer;
using luminal::runtime::BufferRef;
using Json = nlohmann::json;

// ---- Running the compiled program --------------------------------------------------------------

// Element operations one zero-input run may cost, and bytes one buffer may take: enough for the
// fixtures (Llama's run fits), small enough that a mutated size of 1e9 is skipped, not run.
constexpr double kMaxRunWork = 4e6;
constexpr double kMaxNodeBytes = 64.0 * (1 << 20);

// The element count of a shape whose dims are all constants, or -1.
double concrete_numel(const luminal::ir::Shape& shape) {
  double numel = 1;
  for (const luminal::ir::Expr& dim : shape) {
    if (!dim.is_constant() || dim.constant_value() < 0) return -1;
    numel *= static_cast<double>(dim.constant_value());
  }
  return numel;
}

// Whether a buffer of `numel` elements (-1: not concrete) is small enough to allocate.
bool small_buffer(double numel, luminal::ir::DType dtype) {
  return numel >= 0 && numel * static_cast<double>(luminal::ir::dtype_size(dtype)) <= kMaxNodeBytes;
}

// Whether a run on zero-filled inputs is cheap and bounded: no symbols anywhere (so shapes are
// known without binding), no data symbols, every buffer and the total work small.
bool cheap_to_run(const luminal::ir::Graph& graph) {
  if (!graph.data_symbols().empty() || !graph.assertions().empty()) return false;
  double work = 0;
  std::vector<std::string> symbols;
  for (const luminal::ir::Node& node : graph.nodes()) {
    luminal::ir::collect_symbols(node, symbols);
    if (!symbols.empty()) return false;
    const double numel = concrete_numel(node.shape);
    if (!small_buffer(numel, node.dtype)) return false;
    work += numel;
    for (const luminal::ir::TensorRef& edge : node.inputs) {
      const double read = concrete_numel(edge.view.shape());
      if (read < 0) return false;
      work += read;
    }
    // A contraction does K multiply-adds per output element.
    if (luminal::ir::op_has(node.op, luminal::ir::kContraction) && !node.inputs.empty()) {
      const luminal::ir::Shape& lhs = node.inputs[0].view.shape();
      if (lhs.empty() || concrete_numel({lhs.back()}) < 0) return false;
      work += numel * static_cast<double>(lhs.back().constant_value());
    }
    if (work > kMaxRunWork) return false;
  }
  // An output may read its node through a broadcasting view: it is allocated at the view's size.
  for (const luminal::ir::TensorRef& output : graph.outputs()) {
    const double numel = concrete_numel(output.view.shape());
    if (!small_buffer(numel, graph.node(output.node).dtype)) return false;
    work += numel;
  }
  return work <= kMaxRunWork;
}

BufferRef zero_buffer(std::vector<AlignedBuffer>& storage, luminal::ir::DType dtype,
                      const std::vector<int64_t>& sizes) {
  const auto bytes = static_cast<size_t>(luminal::runtime::byte_count(sizes, dtype));
  storage.emplace_back(bytes);
  std::memset(storage.back().data(), 0, bytes);
  return BufferRef{storage.back().data(), dtype, sizes, luminal::runtime::contiguous_strides(sizes)};
}

bool verbose() {
  static const bool on = std::getenv("LUMINAL_FUZZ_VERBOSE") != nullptr;
  return on;
}

void run_on_zeros(const luminal::CompiledProgram& compiled) {
  const luminal::ir::Graph& graph = compiled.program.graph;
  if (!cheap_to_run(graph)) {
    if (verbose()) std::fprintf(stderr, "fuzz_compile: compiled %zu IR nodes; not run\n", graph.size());
    return;
  }
  std::vector<AlignedBuffer> storage;
  std::vector<BufferRef> inputs;
  for (luminal::ir::NodeId id : graph.input_nodes()) {
    const luminal::ir::Node& node = graph.node(id);
    std::vector<int64_t> sizes;
    for (const luminal::ir::Expr& dim : node.shape) sizes.push_back(dim.constant_value());
    inputs.push_back(zero_buffer(storage, node.dtype, sizes));
  }
  const luminal::runtime::OutputShapes shapes = compiled.executable->output_shapes(inputs);
  std::vector<BufferRef> outputs;
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (!shapes[k]) return;  // cheap_to_run rules data symbols out, but stay bounded regardless
    outputs.push_back(zero_buffer(storage, graph.node(graph.outputs()[k].node).dtype, *shapes[k]));
  }
  compiled.executable->run(inputs, outputs, [&](size_t k, const std::vector<int64_t>& sizes) {
    return zero_buffer(storage, graph.node(graph.outputs()[k].node).dtype, sizes);
  });
  if (verbose()) std::fprintf(stderr, "fuzz_compile: compiled %zu IR nodes; ran\n", graph.size());
}

void compile_and_run(const uint8_t* data, size_t size) {
  static const luminal::runtime::reference::ReferenceRuntime runtime;
  luminal::pt2::Pt2Program program = luminal::pt2::read_pt2_bytes(data, size);
  luminal::CompileOptions options;
  options.fallback = "error";  // no torch in this build: an untranslated op must be an UnsupportedError
  options.num_threads = 1;     // OpenBLAS's threads would only add noise to a fuzzing process
  std::unique_ptr<luminal::CompiledProgram> compiled =
      luminal::compile_program(std::move(program), runtime, {}, options, 0.0);
  run_on_zeros(*compiled);
}

// An InternalError's message ends with "(internal check '<condition>' failed at <file>:<line>;
// please report ...)": one finding per check.
std::string internal_site(const std::string& message) {
  const size_t at = message.rfind("failed at ");
  if (at == std::string::npos) return message;
  return message.substr(at, message.find(';', at) - at);
}

void report_internal_error(const luminal::InternalError& error, const uint8_t* data, size_t size) {
  const char* mode = std::getenv("LUMINAL_FUZZ_INTERNAL");
  if (mode == nullptr || std::string(mode) != "log") {
    std::fprintf(stderr, "fuzz_compile: InternalError on fuzzed input (user input reached a compiler-bug check):\n%s\n",
                 error.what());
    std::abort();
  }
  static std::set<std::string> seen;
  if (!seen.insert(internal_site(error.what())).second) return;
  std::fprintf(stderr, "fuzz_compile: InternalError #%zu: %s\n", seen.size(), error.what());
  if (const char* dir = std::getenv("LUMINAL_FUZZ_INTERNAL_DIR")) {
    std::ofstream(std::string(dir) + "/internal-" + std::to_string(seen.size()) + ".pt2", std::ios::binary)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
}

// ---- The mutator: unzip, mutate one entry, re-zip ----------------------------------------------

struct Entry {
  std::string name;
  std::vector<uint8_t> bytes;
};

uint32_t crc32(const std::vector<uint8_t>& bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put16(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}

// A plain zip (no zip64, no compression): local headers and data, central directory, end record.
std::vector<uint8_t> write_stored_zip(const std::vector<Entry>& entries) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> central;
  for (const Entry& e : entries) {
    const uint32_t crc = crc32(e.bytes);
    const auto size = static_cast<uint32_t>(e.bytes.size());
    const auto offset = static_cast<uint32_t>(out.size());
    put32(out, 0x04034b50);
    for (uint32_t v : {20u, 0u, 0u, 0u, 0x21u}) put16(out, v);  // version, flags, STORED, time, date
    put32(out, crc);
    put32(out, size);
    put32(out, size);
    put16(out, static_cast<uint32_t>(e.name.size()));
    put16(out, 0);
    out.insert(out.end(), e.name.begin(), e.name.end());
    out.insert(out.end(), e.bytes.begin(), e.bytes.end());

    put32(central, 0x02014b50);
    for (uint32_t v : {20u, 20u, 0u, 0u, 0u, 0x21u}) put16(central, v);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    for (uint32_t v : {static_cast<uint32_t>(e.name.size()), 0u, 0u, 0u, 0u}) put16(central, v);
    put32(central, 0);
    put32(central, offset);
    central.insert(central.end(), e.name.begin(), e.name.end());
  }
  const auto central_offset = static_cast<uint32_t>(out.size());
  out.insert(out.end(), central.begin(), central.end());
  put32(out, 0x06054b50);
  for (uint32_t v : {0u, 0u, static_cast<uint32_t>(entries.size()), static_cast<uint32_t>(entries.size())})
    put16(out, v);
  put32(out, static_cast<uint32_t>(central.size()));
  put32(out, central_offset);
  put16(out, 0);
  return out;
}

std::vector<Entry> read_entries(const uint8_t* data, size_t size) {
  luminal::pt2::ZipArchive zip = luminal::pt2::ZipArchive::from_bytes(data, size, "<mutator>");
  std::vector<Entry> entries;
  for (const std::string& name : zip.entries()) entries.push_back(Entry{name, zip.read(name)});
  return entries;
}

// "aten::add.Tensor" -> "torch.ops.aten.add.Tensor"; "_operator::mul" -> "_operator.mul".
const std::vector<std::string>& op_targets() {
  static const std::vector<std::string> targets = [] {
    std::vector<std::string> out;
    for (const std::string& overload : luminal::translator::registered_overloads()) {
      const size_t colons = overload.find("::");
      if (colons == std::string::npos) continue;
      const std::string ns = overload.substr(0, colons);
      const std::string rest = overload.substr(colons + 2);
      out.push_back(ns == "_operator" ? "_operator." + rest : "torch.ops." + ns + "." + rest);
    }
    return out;
  }();
  return targets;
}

class JsonMutator {
 public:
  JsonMutator(Json& root, std::minstd_rand& rng) : rng_(rng) { collect(root); }

  void mutate_once() {
    if (nodes_.empty()) return;
    Json& j = *nodes_[pick(nodes_.size())];
    if (pick(8) == 0) {  // type confusion: any other subtree in its place
      j = Json(*nodes_[pick(nodes_.size())]);
      return;
    }
    switch (j.type()) {
      case Json::value_t::number_integer:
      case Json::value_t::number_unsigned:
        j = interesting_int(j.get<int64_t>());
        break;
      case Json::value_t::number_float: {
        static constexpr double kFloats[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e30, -1e308, 1e308, 3.0};
        j = kFloats[pick(std::size(kFloats))];
        break;
      }
      case Json::value_t::string:
        if (pick(3) == 0 || strings_.empty())
          j = op_targets()[pick(op_targets().size())];
        else
          j = strings_[pick(strings_.size())];
        break;
      case Json::value_t::boolean:
        j = !j.get<bool>();
        break;
      case Json::value_t::array:
        mutate_array(j);
        break;
      case Json::value_t::object:
        if (!j.empty()) {
          auto it = j.begin();
          std::advance(it, static_cast<std::ptrdiff_t>(pick(j.size())));
          j.erase(it);
        }
        break;
      default:  // null
        j = pick(2) == 0 ? Json(0) : Json::array();
        break;
    }
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  void collect(Json& j) {
    nodes_.push_back(&j);
    if (j.is_string()) strings_.push_back(j.get<std::string>());
    if (j.is_number_integer()) ints_.push_back(j.get<int64_t>());
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it)
        if (it.key() != "metadata") collect(it.value());  // stack traces: noise for the translator
    } else if (j.is_array()) {
      for (Json& item : j) collect(item);
    }
  }

  int64_t interesting_int(int64_t old) {
    static constexpr int64_t kInts[] = {0, 1, -1, 2, -2, 3, 7, 64, 255, 1 << 16, 1ll << 31, (1ll << 31) - 1,
                                        1ll << 32, 1ll << 40, std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::min()};
    switch (pick(4)) {
      case 0:  // wrapping, as INT64_MIN - 1 is a fine thing to try
        return static_cast<int64_t>(static_cast<uint64_t>(old) + (pick(2) ? 1u : ~uint64_t{0}));
      case 1:
        return ints_.empty() ? old : ints_[pick(ints_.size())];
      default:
        return kInts[pick(std::size(kInts))];
    }
  }

  // Nodes inside `j` stay valid until its elements move, so every array edit ends the round.
  void mutate_array(Json& j) {
    if (j.empty()) {
      j.push_back(pick(2) == 0 ? Json(interesting_int(1)) : Json(*nodes_[pick(nodes_.size())]));
      return;
    }
    const size_t i = pick(j.size());
    switch (pick(4)) {
      case 0:
        j.erase(j.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      case 1:
        j.insert(j.begin() + static_cast<std::ptrdiff_t>(i), Json(j[i]));
        break;
      case 2:
        std::swap(j[i], j[pick(j.size())]);
        break;
      default:
        j.clear();
        break;
    }
  }

  std::minstd_rand& rng_;
  std::vector<Json*> nodes_;
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
};

// Structural JSON mutation of one entry; false when it does not parse.
// The deepest bracket nesting in JSON text: collect() and dump() recurse, so a deep document
// (bytes mutated over generations) is left to byte mutations.
int nesting_depth(const std::vector<uint8_t>& text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

bool mutate_json(Entry& entry, std::minstd_rand& rng) {
  if (nesting_depth(entry.bytes) > 256) return false;
  Json root = Json::parse(entry.bytes.begin(), entry.bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return false;
  const int rounds = 1 + static_cast<int>(rng() % 3);
  for (int r = 0; r < rounds; ++r) JsonMutator(root, rng).mutate_once();  // re-collected: edits move nodes
  const std::string text = root.dump(-1, ' ', false, Json::error_handler_t::replace);
  entry.bytes.assign(text.begin(), text.end());
  return true;
}

void mutate_bytes(Entry& entry) {
  const size_t size = entry.bytes.size();
  entry.bytes.resize(size + 64 + size / 8);
  entry.bytes.resize(LLVMFuzzerMutate(entry.bytes.data(), size, entry.bytes.size()));
}

// Mutates one entry of the archive; false when the input is not a readable zip.
bool mutate_archive(std::vector<Entry>& entries, std::minstd_rand& rng) {
  if (entries.empty()) return false;
  std::vector<size_t> model_json;
  std::vector<size_t> other_json;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].name;
    if (!name.ends_with(".json")) continue;
    (name.find("models/") != std::string::npos ? model_json : other_json).push_back(i);
  }
  const unsigned choice = rng() % 16;
  if (choice < 10 && !model_json.empty()) {  // the model JSON as a tree: what reaches the translator
    Entry& entry = entries[model_json[rng() % model_json.size()]];
    if (!mutate_json(entry, rng)) mutate_bytes(entry);
  } else if (choice < 12 && !other_json.empty()) {  // weight/constant configs
    Entry& entry = entries[other_json[rng() % other_json.size()]];
    if (!mutate_json(entry, rng)) mutate_bytes(entry);
  } else if (choice < 15) {  // another entry's bytes: weight payloads, config text (fuzz_pt2_json
                             // covers the model JSON's bytes)
    const size_t i = rng() % entries.size();
    const bool is_model_json = std::find(model_json.begin(), model_json.end(), i) != model_json.end();
    mutate_bytes(entries[is_model_json && entries.size() > 1 ? (i + 1) % entries.size() : i]);
  } else if (rng() % 2 == 0) {
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(rng() % entries.size()));
  } else {
    entries.push_back(entries[rng() % entries.size()]);
  }
  return true;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  // Now and then the raw bytes too, so that inputs near a zip's edges stay in the corpus.
  if (rng() % 16 != 0) {
    try {
      std::vector<Entry> entries = read_entries(data, size);
      if (mutate_archive(entries, rng)) {
        std::vector<uint8_t> zipped = write_stored_zip(entries);
        if (zipped.size() <= max_size) {
          std::memcpy(data, zipped.data(), zipped.size());
          return zipped.size();
        }
      }
    } catch (const luminal::Error&) {  // not a readable zip: mutate its bytes instead
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    compile_and_run(data, size);
  } catch (const luminal::InternalError& e) {
    report_internal_error(e, data, size);
  } catch (const luminal::Error& e) {
    if (verbose()) std::fprintf(stderr, "fuzz_compile: %s\n", e.what());
  }
  return 0;
}
