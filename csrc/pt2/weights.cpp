#include "pt2/weights.h"

#include "common/error.h"
#include "pt2/json_field.h"

namespace luminal::pt2 {
namespace {

std::vector<int64_t> concrete_values(const std::vector<SymInt>& syms, const JsonField& field,
                                     const std::string& owner, const char* what) {
  std::vector<int64_t> values;
  for (const SymInt& sym : syms) {
    if (!sym.is_concrete()) field.fail(owner + ": symbolic " + what + " in a stored tensor");
    values.push_back(*sym.value);
  }
  return values;
}

// PayloadMeta → StoredTensor without bytes: geometry from tensor_meta, which must be concrete.
StoredTensor parse_payload_meta(const std::string& fqn, const JsonField& field) {
  std::string owner = "'" + fqn + "'";
  StoredTensor tensor;
  tensor.fqn = fqn;
  tensor.path_name = field.at("path_name").as_string();
  if (auto is_param = field.find("is_param")) tensor.is_param = is_param->as_bool();
  auto use_pickle = field.find("use_pickle");
  UNSUPPORTED_CHECK(!(use_pickle && use_pickle->as_bool()))
      << field.where() << ": " << owner << " is stored pickled (use_pickle: true, entry '"
      << tensor.path_name << "'); only raw tensor payloads are supported";
  auto meta_field = field.find("tensor_meta");
  if (!meta_field) field.fail(owner + ": tensor_meta is null for a raw payload");
  TensorMeta meta = parse_tensor_meta(*meta_field, owner);
  tensor.dtype = meta.dtype;
  tensor.sizes = concrete_values(meta.sizes, *meta_field, owner, "sizes");
  tensor.strides = concrete_values(meta.strides, *meta_field, owner, "strides");
  if (!meta.storage_offset.is_concrete()) meta_field->fail(owner + ": symbolic storage_offset");
  tensor.storage_offset = *meta.storage_offset.value;
  return tensor;
}

std::string format_ints(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// Checks the entry's declared size against what the tensor needs before anything is inflated:
// a short entry is damaged, and one far larger than its tensor is a zip bomb (or a mistake).
void check_payload_entry(const ZipArchive& zip, const std::string& entry, const StoredTensor& tensor,
                         int64_t needed, double size_ratio) {
  const std::string owner = "'" + tensor.fqn + "' (entry '" + entry + "')";
  USER_CHECK(zip.contains(entry)) << zip.label() << ": '" << tensor.fqn << "' points at entry '" << entry
                                  << "', which is missing";
  const uint64_t declared = zip.declared_size(entry);
  USER_CHECK(declared >= static_cast<uint64_t>(needed))
      << zip.label() << ": " << owner << " holds " << declared << " bytes but its metadata needs " << needed << " ("
      << scalar_type_name(tensor.dtype) << ", sizes " << format_ints(tensor.sizes) << ", strides "
      << format_ints(tensor.strides) << ", storage_offset " << tensor.storage_offset << ")";
  // A view is stored with its whole storage, so an entry may be somewhat larger than its tensor.
  constexpr double kSlackBytes = 64 * 1024;
  USER_CHECK(static_cast<double>(declared) <= size_ratio * static_cast<double>(needed) + kSlackBytes)
      << zip.label() << ": " << owner << " declares " << declared << " bytes, more than payload_size_ratio ("
      << size_ratio << ") times the " << needed << " its tensor needs (" << scalar_type_name(tensor.dtype)
      << ", sizes " << format_ints(tensor.sizes)
      << "); the archive is damaged or hostile (if it is genuine, raise the payload_size_ratio option)";
}

}  // namespace

int64_t required_storage_bytes(const StoredTensor& tensor, const std::string& owner) {
  USER_CHECK(tensor.storage_offset >= 0)
      << owner << ": negative storage_offset " << tensor.storage_offset;
  int64_t last_element = tensor.storage_offset;
  for (size_t d = 0; d < tensor.sizes.size(); ++d) {
    int64_t size = tensor.sizes[d];
    int64_t stride = tensor.strides[d];
    USER_CHECK(size >= 0 && stride >= 0) << owner << ": negative size or stride in dimension " << d;
    if (size == 0) return 0;
    int64_t reach = 0;
    bool overflow = __builtin_mul_overflow(size - 1, stride, &reach) ||
                    __builtin_add_overflow(last_element, reach, &last_element);
    USER_CHECK(!overflow) << owner << ": sizes and strides overflow int64";
  }
  int64_t element_size = scalar_type_size(tensor.dtype);
  USER_CHECK(element_size > 0) << owner << ": dtype " << scalar_type_name(tensor.dtype)
                               << " has no element size";
  int64_t elements = 0, bytes = 0;
  USER_CHECK(!__builtin_add_overflow(last_element, 1, &elements) &&
             !__builtin_mul_overflow(elements, element_size, &bytes))
      << owner << ": storage size overflows int64";
  return bytes;
}

std::map<std::string, StoredTensor> load_stored_tensors(
    const ZipArchive& zip, const std::string& folder, const std::string& config_name,
    const std::set<std::string>& externally_bound, const PayloadLimits& limits) {
  std::map<std::string, StoredTensor> tensors;
  std::string config_entry = folder + config_name;
  if (!zip.contains(config_entry)) return tensors;
  JsonDocument document(zip.read_text(config_entry), config_entry);
  document.root().at("config").for_each_member([&](const std::string& fqn, const JsonField& meta) {
    if (externally_bound.count(fqn)) return;
    StoredTensor tensor = parse_payload_meta(fqn, meta);
    const std::string entry = folder + tensor.path_name;
    const int64_t needed = required_storage_bytes(tensor, zip.label() + ": '" + fqn + "' (entry '" + entry + "')");
    check_payload_entry(zip, entry, tensor, needed, limits.size_ratio);
    if (limits.read_bytes) tensor.bytes = zip.read(entry);
    tensors.emplace(fqn, std::move(tensor));
  });
  return tensors;
}

}  // namespace luminal::pt2
