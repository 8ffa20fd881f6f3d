// A read-only view of a zip archive (libzip), opened from memory or from a path.
//
// Needs: zip bytes that outlive the ZipArchive (from_bytes does not copy them).
// Guarantees: malformed or truncated zips raise luminal::UserError naming libzip's error;
// entries are read fully and CRC-checked by libzip, STORED or DEFLATE alike.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct zip;

namespace luminal::pt2 {

class ZipArchive {
 public:
  // `label` names the archive in errors ("<bytes>", a path).
  static ZipArchive from_bytes(const uint8_t* data, size_t size, const std::string& label);
  static ZipArchive from_file(const std::string& path);

  const std::string& label() const { return label_; }
  // Entry names in central-directory order (directories included, as the zip lists them).
  const std::vector<std::string>& entries() const { return entries_; }
  bool contains(const std::string& name) const;
  // The uncompressed size the entry's header declares; read() never returns more than this.
  uint64_t declared_size(const std::string& name) const;
  std::vector<uint8_t> read(const std::string& name) const;
  std::string read_text(const std::string& name) const;

 private:
  struct Closer {
    void operator()(zip* archive) const;
  };
  ZipArchive(zip* archive, std::string label);

  std::unique_ptr<zip, Closer> archive_;
  std::string label_;
  std::vector<std::string> entries_;
};

// torch.export.save puts everything under one folder named after the file stem
// ("<stem>/models/model.json"); other writers may use none. Returns the prefix including its
// trailing '/', "" for an unprefixed archive, or nullopt when no models/*.json exists.
std::optional<std::string> find_pt2_prefix(const std::vector<std::string>& entries);

}  // namespace luminal::pt2
