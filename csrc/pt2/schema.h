// Typed C++ mirror of torch.export's serialisation schema (torch/_export/serde/schema.py),
// schema major version 8. Only the shapes of the data live here; parsing is in
// schema_json.cpp and the archive layout in archive.cpp.
//
// Enum values are the schema's integer codes, which are NOT c10's (FLOAT is 7 here, 6 in c10).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace luminal::pt2 {

inline constexpr int kSupportedSchemaMajor = 8;

enum class ScalarType : int {
  Unknown = 0,
  Byte = 1,   // uint8
  Char = 2,   // int8
  Short = 3,  // int16
  Int = 4,    // int32
  Long = 5,   // int64
  Half = 6,
  Float = 7,
  Double = 8,
  ComplexHalf = 9,
  ComplexFloat = 10,
  ComplexDouble = 11,
  Bool = 12,
  BFloat16 = 13,
  UInt16 = 28,
  Float8E4M3FN = 29,
  Float8E5M2 = 30,
  Float8E4M3FNUZ = 31,
  Float8E5M2FNUZ = 32,
  Float8E8M0FNU = 33,
  UInt32 = 34,
  UInt64 = 35,
};
// Name of a schema scalar type ("FLOAT"); "UNKNOWN(<code>)" for codes outside the enum.
std::string scalar_type_name(ScalarType t);
bool is_known_scalar_type(int code);
// Bytes per element (COMPLEXFLOAT is 8); 0 for UNKNOWN and codes outside the enum.
int64_t scalar_type_size(ScalarType t);

enum class Layout : int { Unknown = 0, SparseCoo, SparseCsr, SparseCsc, SparseBsr, SparseBsc, Mkldnn, Strided };
enum class MemoryFormat : int { Unknown = 0, Contiguous, ChannelsLast, ChannelsLast3d, Preserve };
enum class ArgumentKind : int { Unknown = 0, Positional = 1, Keyword = 2 };

struct Device {
  std::string type;  // "cpu", "cuda", "meta", ...
  std::optional<int64_t> index;
};

// A symbolic expression as torch wrote it (sympy's repr), with its example value.
struct SymExpr {
  std::string expr_str;
  std::optional<int64_t> hint;  // from {"hint": {"as_int": N}}; other hint kinds are dropped
};

// SymInt = {as_expr} | {as_int}: a concrete size or a symbolic one.
struct SymInt {
  std::optional<int64_t> value;  // set when concrete
  SymExpr expr;                  // meaningful when !value
  bool is_concrete() const { return value.has_value(); }
};
struct SymFloat {
  std::optional<double> value;
  SymExpr expr;
};
struct SymBool {
  std::optional<bool> value;
  SymExpr expr;
};

struct TensorMeta {
  ScalarType dtype = ScalarType::Unknown;
  std::vector<SymInt> sizes;
  std::vector<SymInt> strides;
  SymInt storage_offset;
  bool requires_grad = false;
  Device device;
  Layout layout = Layout::Strided;
};

// SymIntArgument / SymFloatArgument / SymBoolArgument: a named symbolic value or a constant.
struct SymArgument {
  std::optional<std::string> name;  // {"as_name": ...}
  double float_value = 0;           // {"as_int"|"as_float"|"as_bool"} when !name
  int64_t int_value = 0;
  bool bool_value = false;
};

struct CustomObjArgument {
  std::string name;
  std::string class_fqn;
};

struct GraphArgument;  // as_graph: a nested graph (higher-order ops)

// One tagged union entry of Node.inputs[i].arg / Node.outputs[i].
struct Argument {
  enum class Kind {
    None,
    Tensor,
    Tensors,
    OptionalTensor,   // as_optional_tensor: {"as_tensor": ..} | {"as_none": ..}
    OptionalTensors,  // as_optional_tensors: list of the above
    Int,
    Ints,
    Float,
    Floats,
    Bool,
    Bools,
    String,
    Strings,
    SymInt,
    SymInts,
    SymFloat,
    SymFloats,
    SymBool,
    SymBools,
    ScalarType,
    MemoryFormat,
    Layout,
    Device,
    Graph,
    CustomObj,
    Operator,
    Complex,
    IntLists,
    FloatLists,
    NestedTensors,
    StringToArgument,
  };
  Kind kind = Kind::None;

  // Tensor names. Tensor/OptionalTensor use tensors[0] (OptionalTensor with None: empty string).
  // Tensors use all; OptionalTensors use "" for None entries.
  std::vector<std::string> tensors;
  std::vector<std::vector<std::string>> nested_tensors;
  std::vector<int64_t> ints;  // Int (ints[0]), Ints, ScalarType/MemoryFormat/Layout codes (ints[0])
  std::vector<double> floats;  // Float, Floats, Complex (real, imag); "Infinity"/"NaN" decoded
  std::vector<bool> bools;
  std::vector<std::string> strings;  // String, Strings, Operator (its name)
  std::vector<SymArgument> syms;     // SymInt(s), SymFloat(s), SymBool(s)
  std::vector<std::vector<int64_t>> int_lists;
  std::vector<std::vector<double>> float_lists;
  Device device;
  CustomObjArgument custom_obj;
  std::shared_ptr<GraphArgument> graph;
  std::map<std::string, std::shared_ptr<Argument>> string_to_argument;

  bool is_none() const { return kind == Kind::None; }
};
// Name of an Argument kind as it appears in JSON ("as_tensor").
const char* argument_key(Argument::Kind kind);

struct NamedArgument {
  std::string name;  // the schema argument name ("self", "other", ...)
  Argument arg;
  ArgumentKind kind = ArgumentKind::Positional;
};

struct Node {
  std::string target;  // "torch.ops.aten.add.Tensor" as written in the archive
  std::string name;    // the FX node name, when present
  std::vector<NamedArgument> inputs;
  std::vector<Argument> outputs;
  std::map<std::string, std::string> metadata;  // stack_trace, nn_module_stack, ...
};

struct Graph {
  std::vector<Argument> inputs;
  std::vector<Argument> outputs;
  std::vector<Node> nodes;
  std::map<std::string, TensorMeta> tensor_values;
  std::map<std::string, SymInt> sym_int_values;
  std::map<std::string, SymBool> sym_bool_values;
  std::map<std::string, SymFloat> sym_float_values;
  std::map<std::string, CustomObjArgument> custom_obj_values;
  bool is_single_tensor_return = false;
};

struct GraphArgument {
  std::string name;
  Graph graph;
};

struct InputSpec {
  enum class Kind { UserInput, Parameter, Buffer, TensorConstant, CustomObj, Token, ConstantInput };
  Kind kind = Kind::UserInput;
  Argument arg;             // UserInput/ConstantInput: the full Argument; others: Tensor(name)
  std::string target;       // parameter_name / buffer_name / tensor_constant_name / custom_obj_name
  bool persistent = false;  // buffers only
};

struct OutputSpec {
  enum class Kind {
    UserOutput,
    LossOutput,
    BufferMutation,
    GradientToParameter,
    GradientToUserInput,
    UserInputMutation,
    Token,
    ParameterMutation,
  };
  Kind kind = Kind::UserOutput;
  Argument arg;        // UserOutput: the full Argument; others: Tensor(name)
  std::string target;  // buffer_name / user_input_name / parameter_name, when the kind has one
};

struct GraphSignature {
  std::vector<InputSpec> input_specs;
  std::vector<OutputSpec> output_specs;
};

struct RangeConstraint {
  std::optional<int64_t> min_val;  // null in JSON = unbounded
  std::optional<int64_t> max_val;
};

struct SchemaVersion {
  int major = 0;
  int minor = 0;
};

struct ExportedProgram {
  Graph graph;
  GraphSignature signature;
  std::map<std::string, RangeConstraint> range_constraints;
  std::map<std::string, int64_t> opset_version;
  SchemaVersion schema_version;
  std::vector<std::string> verifiers;
  std::string torch_version;
};

// A weight or constant payload from data/weights or data/constants, rebuilt from
// its *_weights_config.json / *_constants_config.json entry.
struct StoredTensor {
  std::string fqn;        // "model.layers.0.self_attn.q_proj.weight"
  std::string path_name;  // "weight_0"
  bool is_param = false;
  ScalarType dtype = ScalarType::Unknown;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;  // in elements
  std::vector<uint8_t> bytes;  // the whole stored storage, as written
};

}  // namespace luminal::pt2
