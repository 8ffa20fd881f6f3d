#include "pt2/archive.h"

#include <zip.h>

#include <algorithm>

#include "common/error.h"

namespace luminal::pt2 {
namespace {

std::string libzip_error_text(zip_error_t* error) {
  std::string text = zip_error_strerror(error);
  zip_error_fini(error);
  return text;
}

std::string libzip_error_text(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  return libzip_error_text(&error);
}

// Reads at most this much ahead of the declared size: a corrupt header may claim gigabytes,
// and growing the buffer as data actually arrives keeps memory bounded by the real payload.
constexpr zip_uint64_t kMaxUpfrontReserve = 64ull << 20;

}  // namespace

void ZipArchive::Closer::operator()(zip* archive) const { zip_discard(archive); }

ZipArchive::ZipArchive(zip* archive, std::string label)
    : archive_(archive), label_(std::move(label)) {
  zip_int64_t count = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const char* name = zip_get_name(archive, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    USER_CHECK(name != nullptr) << "not a PT2 archive: " << label_ << ": entry " << i
                                << " has no readable name (" << zip_strerror(archive) << ")";
    entries_.emplace_back(name);
  }
}

ZipArchive ZipArchive::from_bytes(const uint8_t* data, size_t size, const std::string& label) {
  zip_error_t error;
  zip_error_init(&error);
  // libzip rejects a NULL buffer even when empty; an empty zip is still "not a zip" below.
  static const uint8_t kEmpty = 0;
  zip_source_t* source = zip_source_buffer_create(size ? data : &kEmpty, size, 0, &error);
  USER_CHECK(source != nullptr) << "not a PT2 archive: " << label << ": "
                                << libzip_error_text(&error);
  zip_t* archive = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (archive == nullptr) {
    zip_source_free(source);
    USER_ERROR() << "not a PT2 archive: " << label << ": " << libzip_error_text(&error);
  }
  zip_error_fini(&error);
  return ZipArchive(archive, label);
}

ZipArchive ZipArchive::from_file(const std::string& path) {
  int code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  USER_CHECK(archive != nullptr) << "not a PT2 archive: " << path << ": "
                                 << libzip_error_text(code);
  return ZipArchive(archive, path);
}

bool ZipArchive::contains(const std::string& name) const {
  return std::find(entries_.begin(), entries_.end(), name) != entries_.end();
}

namespace {

zip_stat_t stat_entry(zip_t* archive, const std::string& label, const std::string& name, zip_int64_t& index) {
  index = zip_name_locate(archive, name.c_str(), ZIP_FL_ENC_RAW);
  USER_CHECK(index >= 0) << label << ": no entry '" << name << "'";
  zip_stat_t stat;
  zip_stat_init(&stat);
  USER_CHECK(zip_stat_index(archive, static_cast<zip_uint64_t>(index), 0, &stat) == 0)
      << label << ": entry '" << name << "': " << zip_strerror(archive);
  USER_CHECK(stat.valid & ZIP_STAT_SIZE) << label << ": entry '" << name << "' has no size";
  return stat;
}

}  // namespace

uint64_t ZipArchive::declared_size(const std::string& name) const {
  zip_int64_t index = 0;
  return stat_entry(archive_.get(), label_, name, index).size;
}

std::vector<uint8_t> ZipArchive::read(const std::string& name) const {
  zip_t* archive = archive_.get();
  zip_int64_t index = 0;
  const zip_stat_t stat = stat_entry(archive, label_, name, index);

  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(
      zip_fopen_index(archive, static_cast<zip_uint64_t>(index), 0), &zip_fclose);
  USER_CHECK(file != nullptr) << label_ << ": entry '" << name << "': " << zip_strerror(archive);

  std::vector<uint8_t> bytes;
  bytes.reserve(std::min(stat.size, kMaxUpfrontReserve));
  uint8_t chunk[1 << 16];
  for (;;) {
    zip_int64_t got = zip_fread(file.get(), chunk, sizeof chunk);
    USER_CHECK(got >= 0) << label_ << ": entry '" << name
                         << "' is corrupt: " << zip_file_strerror(file.get());
    if (got == 0) break;
    // A header that understates the entry must not let it grow without bound.
    USER_CHECK(bytes.size() + static_cast<uint64_t>(got) <= stat.size)
        << label_ << ": entry '" << name << "' inflates past the " << stat.size << " bytes its header declares";
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  USER_CHECK(bytes.size() == stat.size) << label_ << ": entry '" << name << "' is truncated: read "
                                        << bytes.size() << " of " << stat.size << " bytes";
  return bytes;
}

std::string ZipArchive::read_text(const std::string& name) const {
  std::vector<uint8_t> bytes = read(name);
  return std::string(bytes.begin(), bytes.end());
}

std::optional<std::string> find_pt2_prefix(const std::vector<std::string>& entries) {
  constexpr std::string_view kModels = "models/";
  constexpr std::string_view kJson = ".json";
  for (const std::string& entry : entries) {
    size_t models_at = entry.find(kModels);
    if (models_at == std::string::npos) continue;
    std::string_view prefix = std::string_view(entry).substr(0, models_at);
    std::string_view file = std::string_view(entry).substr(models_at + kModels.size());
    bool prefix_is_one_folder =
        prefix.empty() || (prefix.back() == '/' && prefix.find('/') == prefix.size() - 1);
    bool file_is_json = file.size() > kJson.size() && file.ends_with(kJson) &&
                        file.find('/') == std::string_view::npos;
    if (prefix_is_one_folder && file_is_json) return std::string(prefix);
  }
  return std::nullopt;
}

}  // namespace luminal::pt2
