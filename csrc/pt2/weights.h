// Loads the tensor payloads of a PT2 archive: data/weights/* and data/constants/*, described by
// <model>_weights_config.json and <model>_constants_config.json in the same folder.
//
// Needs: the archive and the folder ("<prefix>data/weights/"). Guarantees: every returned
// tensor's bytes cover every element its sizes/strides/storage_offset can reach; a missing
// entry or short payload is a UserError naming the FQN and entry; a pickled payload is an
// UnsupportedError. FQNs in `externally_bound` are skipped entirely (the caller supplies them).
#pragma once

#include <map>
#include <set>
#include <string>

#include "pt2/archive.h"
#include "pt2/schema.h"

namespace luminal::pt2 {

// An absent config file means the archive stores no payloads of that kind: an empty map.
std::map<std::string, StoredTensor> load_stored_tensors(
    const ZipArchive& zip, const std::string& folder, const std::string& config_name,
    const std::set<std::string>& externally_bound);

// Bytes a strided view needs: (largest reachable element + 1) * element size; 0 if empty.
// Throws UserError (naming `owner`) on negative or overflowing geometry.
int64_t required_storage_bytes(const StoredTensor& tensor, const std::string& owner);

}  // namespace luminal::pt2
