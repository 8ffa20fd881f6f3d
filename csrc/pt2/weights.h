// Loads the tensor payloads of a PT2 archive: data/weights/* and data/constants/*, described by
// <model>_weights_config.json and <model>_constants_config.json in the same folder.
//
// Needs: the archive and the folder ("<prefix>data/weights/"). Guarantees: every returned
// tensor's bytes cover every element its sizes/strides/storage_offset can reach; a missing
// entry, a short payload or one far larger than its tensor is a UserError naming the FQN and
// entry, raised before the entry is inflated; a pickled payload is an
// UnsupportedError. FQNs in `externally_bound` are skipped entirely (the caller supplies them).
#pragma once

#include <map>
#include <set>
#include <string>

#include "pt2/archive.h"
#include "pt2/schema.h"

namespace luminal::pt2 {

struct PayloadLimits {
  // An entry may declare at most this many times the bytes its tensor needs (plus 64 KiB):
  // a view is stored with its whole storage, but a far larger entry is a zip bomb. Checked
  // against the entry's header before anything is inflated.
  double size_ratio = 4;
  // false: check every entry's presence and declared size, inflate nothing (bytes stay empty).
  bool read_bytes = true;
};

// An absent config file means the archive stores no payloads of that kind: an empty map.
std::map<std::string, StoredTensor> load_stored_tensors(
    const ZipArchive& zip, const std::string& folder, const std::string& config_name,
    const std::set<std::string>& externally_bound, const PayloadLimits& limits);

// Bytes a strided view needs: (largest reachable element + 1) * element size; 0 if empty.
// Throws UserError (naming `owner`) on negative or overflowing geometry.
int64_t required_storage_bytes(const StoredTensor& tensor, const std::string& owner);

}  // namespace luminal::pt2
