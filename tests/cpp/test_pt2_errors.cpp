// Malformed archives must fail with a UserError (or UnsupportedError) whose message names what
// is wrong and where. The bad archives are built here: a fixture is unpacked, one entry is
// mutated, and the result is re-zipped in memory with libzip.
#include <gtest/gtest.h>
#include <zip.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/error.h"
#include "pt2/archive.h"
#include "pt2/reader.h"

namespace luminal::pt2 {
namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;

std::string fixture_path(const std::string& name) {
  return std::string(LUMINAL_TEST_DATA_DIR) + "/" + name;
}

Entries fixture_entries(const std::string& name) {
  ZipArchive zip = ZipArchive::from_file(fixture_path(name));
  Entries entries;
  for (const std::string& entry : zip.entries()) entries.emplace_back(entry, zip.read_text(entry));
  return entries;
}

std::vector<uint8_t> zip_bytes(const Entries& entries) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_source_keep(buffer);  // survives zip_close so the written bytes can be read back
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  if (archive == nullptr) throw std::runtime_error("zip_open_from_source failed");
  for (const auto& [name, data] : entries) {
    zip_source_t* file = zip_source_buffer(archive, data.data(), data.size(), 0);
    if (zip_file_add(archive, name.c_str(), file, ZIP_FL_OVERWRITE) < 0)
      throw std::runtime_error("zip_file_add");
  }
  if (zip_close(archive) != 0) throw std::runtime_error("zip_close failed");
  zip_source_open(buffer);
  zip_source_seek(buffer, 0, SEEK_END);
  std::vector<uint8_t> bytes(static_cast<size_t>(zip_source_tell(buffer)));
  zip_source_seek(buffer, 0, SEEK_SET);
  zip_source_read(buffer, bytes.data(), bytes.size());
  zip_source_close(buffer);
  zip_source_free(buffer);
  return bytes;
}

std::string& entry(Entries& entries, const std::string& name) {
  for (auto& [entry_name, data] : entries) {
    if (entry_name == name) return data;
  }
  throw std::runtime_error("fixture has no entry " + name);
}

// The MLP fixture with models/model.json rewritten by `mutate`.
std::vector<uint8_t> mlp_with_model_json(const std::function<void(nlohmann::json&)>& mutate) {
  Entries entries = fixture_entries("mlp.pt2");
  std::string& text = entry(entries, "mlp/models/model.json");
  nlohmann::json model = nlohmann::json::parse(text);
  mutate(model);
  text = model.dump();
  return zip_bytes(entries);
}

// Reads `bytes` expecting an error of type E whose message contains every substring.
template <typename E = UserError>
void expect_read_error(const std::vector<uint8_t>& bytes,
                       const std::vector<std::string>& substrings) {
  try {
    read_pt2_bytes(bytes.data(), bytes.size());
    FAIL() << "read succeeded; expected an error containing '" << substrings.at(0) << "'";
  } catch (const E& e) {
    for (const std::string& s : substrings)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
  }
}

std::vector<uint8_t> text_bytes(const std::string& text) { return {text.begin(), text.end()}; }

TEST(Pt2Errors, TruncatedArchive) {
  std::vector<uint8_t> bytes = zip_bytes(fixture_entries("mlp.pt2"));
  bytes.resize(bytes.size() / 2);
  expect_read_error(bytes, {"not a PT2 archive", "Not a zip archive"});
}

TEST(Pt2Errors, NonZipBytes) {
  expect_read_error(text_bytes("this is not a zip file at all, just some text"),
                    {"not a PT2 archive"});
  expect_read_error({}, {"not a PT2 archive"});
}

TEST(Pt2Errors, MissingFile) {
  EXPECT_THROW(read_pt2_file(fixture_path("no_such_file.pt2")), UserError);
}

TEST(Pt2Errors, ZipWithoutModelJson) {
  expect_read_error(
      zip_bytes({{"stuff/data/weights/weight_0", "1234"}, {"stuff/readme.txt", "hi"}}),
      {"no models/*.json", "stuff/readme.txt", "stuff/data/weights/weight_0"});
}

TEST(Pt2Errors, ArchiveWithoutPrefixFolderIsRead) {
  Entries entries = fixture_entries("mlp.pt2");
  for (auto& [name, data] : entries) name = name.substr(name.find('/') + 1);
  std::vector<uint8_t> bytes = zip_bytes(entries);
  EXPECT_EQ(read_pt2_bytes(bytes.data(), bytes.size()).weights.size(), 4u);
}

TEST(Pt2Errors, InvalidJson) {
  Entries entries = fixture_entries("mlp.pt2");
  entry(entries, "mlp/models/model.json") = "{\"graph_module\": ";
  expect_read_error(zip_bytes(entries), {"mlp/models/model.json", "invalid JSON"});
}

TEST(Pt2Errors, WrongTypeNamesTheJsonPath) {
  expect_read_error(mlp_with_model_json([](nlohmann::json& m) {
                      m["graph_module"]["graph"]["nodes"][1]["inputs"][0]["arg"] = "p_fc1_bias";
                    }),
                    {"models/model.json", "graph_module.graph.nodes[1].inputs[0].arg",
                     "expected an object with exactly one key, found string"});
}

TEST(Pt2Errors, MissingFieldNamesTheJsonPath) {
  expect_read_error(
      mlp_with_model_json(
          [](nlohmann::json& m) { m["graph_module"]["graph"]["nodes"][2].erase("target"); }),
      {"models/model.json: graph_module.graph.nodes[2]", "missing required field 'target'"});
  expect_read_error(
      mlp_with_model_json([](nlohmann::json& m) { m["graph_module"].erase("signature"); }),
      {"graph_module", "missing required field 'signature'"});
}

TEST(Pt2Errors, IntegerOutOfRange) {
  expect_read_error(
      mlp_with_model_json([](nlohmann::json& m) {
        m["graph_module"]["graph"]["nodes"][0]["inputs"][1]["arg"]["as_ints"][0] =
            std::numeric_limits<uint64_t>::max();
      }),
      {"graph_module.graph.nodes[0].inputs[1].arg.as_ints[0]", "does not fit in int64"});
}

TEST(Pt2Errors, BadFloatString) {
  expect_read_error(
      mlp_with_model_json([](nlohmann::json& m) {
        m["graph_module"]["graph"]["nodes"][0]["inputs"][1]["arg"] = {{"as_float", "Inf"}};
      }),
      {"graph_module.graph.nodes[0].inputs[1].arg.as_float", "the string 'Inf'"});
}

TEST(Pt2Errors, UnsupportedSchemaMajor) {
  expect_read_error(
      mlp_with_model_json([](nlohmann::json& m) { m["schema_version"]["major"] = 7; }),
      {"models/model.json", "schema version 7.", "supported: 8"});
}

TEST(Pt2Errors, UnknownArgumentKindNamesTheNode) {
  expect_read_error(mlp_with_model_json([](nlohmann::json& m) {
                      m["graph_module"]["graph"]["nodes"][1]["inputs"][0]["arg"] = {{"as_foo", 1}};
                    }),
                    {"models/model.json: node 'addmm' (torch.ops.aten.addmm.default) input 'self': "
                     "unknown Argument kind 'as_foo'"});
}

TEST(Pt2Errors, UnknownDtypeNamesTheTensor) {
  expect_read_error(mlp_with_model_json([](nlohmann::json& m) {
                      m["graph_module"]["graph"]["tensor_values"]["x"]["dtype"] = 99;
                    }),
                    {"models/model.json", "tensor 'x'", "unknown dtype code 99"});
}

TEST(Pt2Errors, UnknownSpecKind) {
  expect_read_error(
      mlp_with_model_json([](nlohmann::json& m) {
        m["graph_module"]["signature"]["output_specs"][0] = {
            {"user_output_v2", nlohmann::json::object()}};
      }),
      {"graph_module.signature.output_specs[0]", "unknown output spec kind 'user_output_v2'"});
}

TEST(Pt2Errors, DeepNestingIsRejected) {
  expect_read_error(mlp_with_model_json([](nlohmann::json& m) {
                      nlohmann::json arg = {{"as_int", 1}};
                      for (int i = 0; i < 500; ++i) arg = {{"as_string_to_argument", {{"k", arg}}}};
                      m["graph_module"]["graph"]["nodes"][0]["inputs"][1]["arg"] = arg;
                    }),
                    {"nested more than"});
}

TEST(Pt2Errors, WeightShorterThanItsMetadata) {
  Entries entries = fixture_entries("mlp.pt2");
  entry(entries, "mlp/data/weights/weight_0").resize(100);
  expect_read_error(zip_bytes(entries),
                    {"'fc1.weight'", "mlp/data/weights/weight_0", "holds 100 bytes",
                     "needs 2048", "sizes [32, 16]"});
}

TEST(Pt2Errors, StridedWeightNeedsItsLastReachableElement) {
  Entries entries = fixture_entries("mlp.pt2");
  nlohmann::json config =
      nlohmann::json::parse(entry(entries, "mlp/data/weights/model_weights_config.json"));
  // fc2.bias is float[4] in 16 bytes; viewed with stride 2 from offset 1 it needs 8 elements.
  config["config"]["fc2.bias"]["tensor_meta"]["strides"][0]["as_int"] = 2;
  config["config"]["fc2.bias"]["tensor_meta"]["storage_offset"]["as_int"] = 1;
  entry(entries, "mlp/data/weights/model_weights_config.json") = config.dump();
  expect_read_error(zip_bytes(entries), {"'fc2.bias'", "holds 16 bytes", "needs 32"});
}

TEST(Pt2Errors, WeightEndingAtTheLastInt64IsAnErrorNotAnOverflow) {
  // The fuzzer's find: a storage_offset of INT64_MAX made the element count (offset + 1)
  // overflow before the byte count was checked.
  Entries entries = fixture_entries("mlp.pt2");
  nlohmann::json config =
      nlohmann::json::parse(entry(entries, "mlp/data/weights/model_weights_config.json"));
  config["config"]["fc2.bias"]["tensor_meta"]["sizes"][0]["as_int"] = 1;
  config["config"]["fc2.bias"]["tensor_meta"]["storage_offset"]["as_int"] = INT64_MAX;
  entry(entries, "mlp/data/weights/model_weights_config.json") = config.dump();
  expect_read_error(zip_bytes(entries), {"'fc2.bias'", "storage size overflows int64"});
}

TEST(Pt2Errors, WeightConfigPointsAtMissingEntry) {
  Entries entries = fixture_entries("mlp.pt2");
  std::erase_if(entries, [](const auto& e) { return e.first == "mlp/data/weights/weight_1"; });
  expect_read_error(zip_bytes(entries), {"'fc1.bias'", "mlp/data/weights/weight_1", "missing"});
}

TEST(Pt2Errors, ExternallyBoundWeightIsNotChecked) {
  Entries entries = fixture_entries("mlp.pt2");
  std::erase_if(entries, [](const auto& e) { return e.first == "mlp/data/weights/weight_1"; });
  std::vector<uint8_t> bytes = zip_bytes(entries);
  ReadOptions options;
  options.externally_bound = {"fc1.bias"};
  EXPECT_EQ(read_pt2_bytes(bytes.data(), bytes.size(), options).weights.size(), 3u);
}

TEST(Pt2Errors, PickledPayloadIsUnsupported) {
  Entries entries = fixture_entries("mlp.pt2");
  nlohmann::json config =
      nlohmann::json::parse(entry(entries, "mlp/data/weights/model_weights_config.json"));
  config["config"]["fc2.weight"]["use_pickle"] = true;
  entry(entries, "mlp/data/weights/model_weights_config.json") = config.dump();
  expect_read_error<UnsupportedError>(zip_bytes(entries), {"'fc2.weight'", "use_pickle"});
}

TEST(Pt2Errors, UnknownModelName) {
  std::vector<uint8_t> bytes = zip_bytes(fixture_entries("mlp.pt2"));
  ReadOptions options;
  options.model_name = "decoder";
  try {
    read_pt2_bytes(bytes.data(), bytes.size(), options);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no model 'decoder' (models found: model)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace luminal::pt2
