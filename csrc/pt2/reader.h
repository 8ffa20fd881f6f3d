// Reads a PT2 archive (the zip torch.export.save writes) into typed structs.
//
// Needs: archive bytes or a path. Guarantees: either a fully parsed Pt2Program or a
// luminal::UserError naming the archive entry and JSON field at fault; never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pt2/schema.h"
#include "pt2/weights.h"

namespace luminal::pt2 {

struct ReadOptions {
  // Which model inside the archive (models/<model_name>.json). Empty: the only one, or "model".
  std::string model_name;
  // Weight/constant FQNs whose payload is supplied by the caller (bound by pointer), so the
  // archive's (possibly stripped) payload for them is neither loaded nor size-checked.
  std::set<std::string> externally_bound;
  PayloadLimits payloads;
};

struct Pt2Program {
  ExportedProgram program;
  std::map<std::string, StoredTensor> weights;    // by FQN, from data/weights
  std::map<std::string, StoredTensor> constants;  // by FQN, from data/constants
};

Pt2Program read_pt2_bytes(const uint8_t* data, size_t size, const ReadOptions& options = {});
Pt2Program read_pt2_file(const std::string& path, const ReadOptions& options = {});

// Everything read_pt2_file checks (the zip, the model's JSON, every payload's entry and declared
// size), with no payload inflated: memory stays bounded by the JSON, whatever the archive claims.
void check_pt2_file(const std::string& path, ReadOptions options = {});

// Parses one models/*.json document; `where` names it in errors.
ExportedProgram parse_exported_program(const std::string& json_text, const std::string& where);

}  // namespace luminal::pt2
