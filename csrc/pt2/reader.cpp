#include "pt2/reader.h"

#include <algorithm>

#include "common/error.h"
#include "pt2/archive.h"
#include "pt2/weights.h"

namespace luminal::pt2 {
namespace {

// Long archives (an LLM has hundreds of weight entries) would drown the message.
std::string list_for_message(const std::vector<std::string>& names, size_t limit = 20) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < limit; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > limit) text += ", ... (" + std::to_string(names.size() - limit) + " more)";
  return names.empty() ? "none" : text;
}

std::vector<std::string> model_names(const ZipArchive& zip, const std::string& prefix) {
  const std::string folder = prefix + "models/";
  std::vector<std::string> names;
  for (const std::string& entry : zip.entries()) {
    if (!entry.starts_with(folder) || !entry.ends_with(".json")) continue;
    std::string name = entry.substr(folder.size(), entry.size() - folder.size() - 5);
    if (!name.empty() && name.find('/') == std::string::npos) names.push_back(name);
  }
  return names;
}

// An explicit name must exist; otherwise the only model, or the one torch names "model".
std::string choose_model(const ZipArchive& zip, const std::string& prefix,
                         const ReadOptions& options) {
  std::vector<std::string> names = model_names(zip, prefix);
  auto has = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!options.model_name.empty()) {
    USER_CHECK(has(options.model_name)) << zip.label() << ": no model '" << options.model_name
                                        << "' (models found: " << list_for_message(names) << ")";
    return options.model_name;
  }
  if (names.size() == 1) return names[0];
  USER_CHECK(has("model")) << zip.label() << ": several models (" << list_for_message(names)
                           << "); choose one with ReadOptions::model_name";
  return "model";
}

Pt2Program read_archive(const ZipArchive& zip, const ReadOptions& options) {
  std::optional<std::string> prefix = find_pt2_prefix(zip.entries());
  USER_CHECK(prefix.has_value()) << "not a PT2 archive: " << zip.label()
                                 << " has no models/*.json entry (entries: "
                                 << list_for_message(zip.entries()) << ")";
  std::string model = choose_model(zip, *prefix, options);
  std::string model_entry = *prefix + "models/" + model + ".json";

  Pt2Program result;
  result.program = parse_exported_program(zip.read_text(model_entry), model_entry);
  result.weights = load_stored_tensors(zip, *prefix + "data/weights/", model + "_weights_config.json",
                                       options.externally_bound, options.payloads);
  result.constants = load_stored_tensors(zip, *prefix + "data/constants/", model + "_constants_config.json",
                                         options.externally_bound, options.payloads);
  return result;
}

}  // namespace

Pt2Program read_pt2_bytes(const uint8_t* data, size_t size, const ReadOptions& options) {
  return read_archive(ZipArchive::from_bytes(data, size, "<pt2 bytes>"), options);
}

Pt2Program read_pt2_file(const std::string& path, const ReadOptions& options) {
  return read_archive(ZipArchive::from_file(path), options);
}

void check_pt2_file(const std::string& path, ReadOptions options) {
  options.payloads.read_bytes = false;
  read_archive(ZipArchive::from_file(path), options);
}

}  // namespace luminal::pt2
