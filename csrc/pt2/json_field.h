// Path-tracking access to a parsed JSON document, shared by the model and payload-config
// parsers. Every accessor checks the JSON type first and, on a mismatch, raises
// luminal::UserError naming the archive entry and the field's path
// ("models/model.json: graph_module.graph.nodes[12].inputs[0].arg: expected an object, found
// string"), so no nlohmann exception and no unchecked access is reachable from archive bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pt2/schema.h"

namespace luminal::pt2 {

class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string path, const std::string& where, int depth);

  const std::string& path() const { return path_; }
  const std::string& where() const { return *where_; }
  [[noreturn]] void fail(const std::string& message) const;

  // Required object member; missing → error naming this path + key.
  JsonField at(const std::string& key) const;
  // Object member that may be absent or null.
  std::optional<JsonField> find(const std::string& key) const;
  // The single member of a tagged union ({"as_tensor": {...}}): its key and value.
  std::pair<std::string, JsonField> union_member() const;

  void for_each_item(const std::function<void(const JsonField&)>& visit) const;
  void for_each_member(
      const std::function<void(const std::string&, const JsonField&)>& visit) const;

  int64_t as_int() const;
  // Accepts numbers and the strings torch writes for non-finite values.
  double as_float() const;
  bool as_bool() const;
  std::string as_string() const;
  std::vector<int64_t> as_int_list() const;
  std::vector<double> as_float_list() const;
  bool is_null() const { return value_->is_null(); }

 private:
  void expect(bool ok, const char* expected) const;

  const nlohmann::json* value_;
  std::string path_;
  const std::string* where_;
  int depth_;
};

// Owns a parsed JSON document; `where` names the archive entry in errors.
class JsonDocument {
 public:
  JsonDocument(const std::string& text, std::string where);
  JsonField root() const { return JsonField(root_, "", where_, 0); }

 private:
  std::string where_;
  nlohmann::json root_;
};

// Parsers shared by model.json and *_config.json. `owner` names the value in messages
// ("tensor 'addmm'", "weight 'fc1.weight'").
TensorMeta parse_tensor_meta(const JsonField& field, const std::string& owner);
ScalarType parse_scalar_type(const JsonField& field, const std::string& owner);

}  // namespace luminal::pt2
