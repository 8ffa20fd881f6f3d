# PT2 archive reader: libzip + nlohmann_json, no torch.
target_sources(luminal_core PRIVATE
  csrc/pt2/archive.cpp
  csrc/pt2/json_field.cpp
  csrc/pt2/reader.cpp
  csrc/pt2/scalar_type.cpp
  csrc/pt2/schema_json.cpp
  csrc/pt2/weights.cpp
)
