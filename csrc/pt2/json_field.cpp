#include "pt2/json_field.h"

#include <cmath>
#include <limits>

#include "common/error.h"

namespace luminal::pt2 {
namespace {

// Nested graphs (as_graph) and string_to_argument recurse; a hostile archive must not be able
// to exhaust the stack. Real exports nest a handful of levels.
constexpr int kMaxDepth = 200;

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

}  // namespace

JsonField::JsonField(const nlohmann::json& value, std::string path, const std::string& where,
                     int depth)
    : value_(&value), path_(std::move(path)), where_(&where), depth_(depth) {
  if (depth_ > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
}

void JsonField::fail(const std::string& message) const {
  std::string field = path_.empty() ? "<document root>" : path_;
  throw_error(ErrorKind::User, *where_ + ": " + field + ": " + message);
}

void JsonField::expect(bool ok, const char* expected) const {
  if (!ok) fail(std::string("expected ") + expected + ", found " + value_->type_name());
}

JsonField JsonField::at(const std::string& key) const {
  expect(value_->is_object(), "an object");
  auto it = value_->find(key);
  if (it == value_->end()) fail("missing required field '" + key + "'");
  return JsonField(*it, join_path(path_, key), *where_, depth_ + 1);
}

std::optional<JsonField> JsonField::find(const std::string& key) const {
  expect(value_->is_object(), "an object");
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonField(*it, join_path(path_, key), *where_, depth_ + 1);
}

std::pair<std::string, JsonField> JsonField::union_member() const {
  expect(value_->is_object() && value_->size() == 1, "an object with exactly one key");
  auto it = value_->begin();
  return {it.key(), JsonField(*it, join_path(path_, it.key()), *where_, depth_ + 1)};
}

void JsonField::for_each_item(const std::function<void(const JsonField&)>& visit) const {
  expect(value_->is_array(), "an array");
  for (size_t i = 0; i < value_->size(); ++i) {
    visit(JsonField((*value_)[i], path_ + "[" + std::to_string(i) + "]", *where_, depth_ + 1));
  }
}

void JsonField::for_each_member(
    const std::function<void(const std::string&, const JsonField&)>& visit) const {
  expect(value_->is_object(), "an object");
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    visit(it.key(), JsonField(*it, join_path(path_, it.key()), *where_, depth_ + 1));
  }
}

int64_t JsonField::as_int() const {
  // nlohmann stores non-negative integers as uint64; int64 max (slice ends) must survive.
  if (value_->is_number_unsigned()) {
    uint64_t value = value_->get<uint64_t>();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("integer " + std::to_string(value) + " does not fit in int64");
    }
    return static_cast<int64_t>(value);
  }
  expect(value_->is_number_integer(), "an integer");
  return value_->get<int64_t>();
}

double JsonField::as_float() const {
  if (value_->is_number()) return value_->get<double>();
  // Python's json module writes non-finite floats as bare Infinity/NaN; torch's serializer
  // turns them into these strings instead.
  if (value_->is_string()) {
    const std::string& text = value_->get_ref<const std::string&>();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    fail("expected a number, found the string '" + text + "'");
  }
  expect(false, "a number");
  return 0;
}

bool JsonField::as_bool() const {
  expect(value_->is_boolean(), "a boolean");
  return value_->get<bool>();
}

std::string JsonField::as_string() const {
  expect(value_->is_string(), "a string");
  return value_->get<std::string>();
}

std::vector<int64_t> JsonField::as_int_list() const {
  std::vector<int64_t> values;
  for_each_item([&](const JsonField& item) { values.push_back(item.as_int()); });
  return values;
}

std::vector<double> JsonField::as_float_list() const {
  std::vector<double> values;
  for_each_item([&](const JsonField& item) { values.push_back(item.as_float()); });
  return values;
}

JsonDocument::JsonDocument(const std::string& text, std::string where) : where_(std::move(where)) {
  try {
    root_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    USER_ERROR() << where_ << ": invalid JSON: " << e.what();
  }
}

}  // namespace luminal::pt2
