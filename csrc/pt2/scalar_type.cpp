// Names of the schema's enums, for messages and for matching JSON keys.
#include "common/error.h"
#include "pt2/schema.h"

namespace luminal::pt2 {

std::string scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Unknown: return "UNKNOWN";
    case ScalarType::Byte: return "BYTE";
    case ScalarType::Char: return "CHAR";
    case ScalarType::Short: return "SHORT";
    case ScalarType::Int: return "INT";
    case ScalarType::Long: return "LONG";
    case ScalarType::Half: return "HALF";
    case ScalarType::Float: return "FLOAT";
    case ScalarType::Double: return "DOUBLE";
    case ScalarType::ComplexHalf: return "COMPLEXHALF";
    case ScalarType::ComplexFloat: return "COMPLEXFLOAT";
    case ScalarType::ComplexDouble: return "COMPLEXDOUBLE";
    case ScalarType::Bool: return "BOOL";
    case ScalarType::BFloat16: return "BFLOAT16";
    case ScalarType::UInt16: return "UINT16";
    case ScalarType::Float8E4M3FN: return "FLOAT8E4M3FN";
    case ScalarType::Float8E5M2: return "FLOAT8E5M2";
    case ScalarType::Float8E4M3FNUZ: return "FLOAT8E4M3FNUZ";
    case ScalarType::Float8E5M2FNUZ: return "FLOAT8E5M2FNUZ";
    case ScalarType::Float8E8M0FNU: return "FLOAT8E8M0FNU";
    case ScalarType::UInt32: return "UINT32";
    case ScalarType::UInt64: return "UINT64";
  }
  return "UNKNOWN(" + std::to_string(static_cast<int>(t)) + ")";
}

bool is_known_scalar_type(int code) {
  return scalar_type_name(static_cast<ScalarType>(code)).find('(') == std::string::npos;
}

int64_t scalar_type_size(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Bool:
    case ScalarType::Float8E4M3FN:
    case ScalarType::Float8E5M2:
    case ScalarType::Float8E4M3FNUZ:
    case ScalarType::Float8E5M2FNUZ:
    case ScalarType::Float8E8M0FNU: return 1;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16:
    case ScalarType::UInt16: return 2;
    case ScalarType::Int:
    case ScalarType::Float:
    case ScalarType::ComplexHalf:
    case ScalarType::UInt32: return 4;
    case ScalarType::Long:
    case ScalarType::Double:
    case ScalarType::ComplexFloat:
    case ScalarType::UInt64: return 8;
    case ScalarType::ComplexDouble: return 16;
    case ScalarType::Unknown: return 0;
  }
  return 0;
}

const char* argument_key(Argument::Kind kind) {
  using Kind = Argument::Kind;
  switch (kind) {
    case Kind::None: return "as_none";
    case Kind::Tensor: return "as_tensor";
    case Kind::Tensors: return "as_tensors";
    case Kind::OptionalTensor: return "as_optional_tensor";
    case Kind::OptionalTensors: return "as_optional_tensors";
    case Kind::Int: return "as_int";
    case Kind::Ints: return "as_ints";
    case Kind::Float: return "as_float";
    case Kind::Floats: return "as_floats";
    case Kind::Bool: return "as_bool";
    case Kind::Bools: return "as_bools";
    case Kind::String: return "as_string";
    case Kind::Strings: return "as_strings";
    case Kind::SymInt: return "as_sym_int";
    case Kind::SymInts: return "as_sym_ints";
    case Kind::SymFloat: return "as_sym_float";
    case Kind::SymFloats: return "as_sym_floats";
    case Kind::SymBool: return "as_sym_bool";
    case Kind::SymBools: return "as_sym_bools";
    case Kind::ScalarType: return "as_scalar_type";
    case Kind::MemoryFormat: return "as_memory_format";
    case Kind::Layout: return "as_layout";
    case Kind::Device: return "as_device";
    case Kind::Graph: return "as_graph";
    case Kind::CustomObj: return "as_custom_obj";
    case Kind::Operator: return "as_operator";
    case Kind::Complex: return "as_complex";
    case Kind::IntLists: return "as_int_lists";
    case Kind::FloatLists: return "as_float_lists";
    case Kind::NestedTensors: return "as_nested_tensors";
    case Kind::StringToArgument: return "as_string_to_argument";
  }
  INTERNAL_ERROR() << "Argument::Kind " << static_cast<int>(kind) << " has no JSON key";
  return "";
}

}  // namespace luminal::pt2
