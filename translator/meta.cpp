// Nodes that compute no tensor: runtime assertions, size queries and the SymInt arithmetic
// (_operator.add/...) export emits for dynamic shapes.
#include "common/error.h"
#include "translator/handlers.h"
#include "translator/sym_expr.h"

namespace luminal::translator {

// torch checks dtype/device at run time; the translation already knows the dtype, so a
// mismatch can only be a translation bug.
void translate_assert_tensor_metadata(NodeArgs& args) {
  Tensor a = args.tensor("a");
  if (std::optional<ir::DType> dtype = args.dtype("dtype")) {
    INTERNAL_CHECK(*dtype == a.dtype) << "tensor translated as " << ir::dtype_name(a.dtype) << ", the program asserts "
                                      << ir::dtype_name(*dtype);
  }
}

void translate_sym_size_int(NodeArgs& args) {
  Tensor self = args.tensor("self");
  args.set_sym_output(0, self.shape()[wrap_dim(args.integer("dim"), self.rank())]);
}

void translate_sym_numel(NodeArgs& args) { args.set_sym_output(0, ir::numel(args.tensor("self").shape())); }

// Strides and storage offsets are the program's: IR values have no storage of their own, and a
// program that asks computes with the values eager would give, which its TensorMeta records.
namespace {
const pt2::TensorMeta& program_meta(NodeArgs& args, const std::string& name) {
  const pt2::Argument& a = args.raw(name);
  USER_CHECK(a.kind == pt2::Argument::Kind::Tensor) << "argument '" << name << "' is not a tensor";
  const auto& values = args.cx().program().graph.tensor_values;
  auto it = values.find(a.tensors.at(0));
  USER_CHECK(it != values.end()) << "tensor '" << a.tensors[0] << "' has no tensor_values entry";
  return it->second;
}
}  // namespace

void translate_sym_stride_int(NodeArgs& args) {
  const pt2::TensorMeta& meta = program_meta(args, "self");
  const int dim = wrap_dim(args.integer("dim"), static_cast<int>(meta.strides.size()));
  args.set_sym_output(0, to_ir_expr(meta.strides.at(static_cast<size_t>(dim))));
}

void translate_sym_storage_offset(NodeArgs& args) {
  args.set_sym_output(0, to_ir_expr(program_meta(args, "self").storage_offset));
}

void translate_sym_add(NodeArgs& args) { args.set_sym_output(0, args.sym_int("a") + args.sym_int("b")); }
void translate_sym_sub(NodeArgs& args) { args.set_sym_output(0, args.sym_int("a") - args.sym_int("b")); }
void translate_sym_mul(NodeArgs& args) { args.set_sym_output(0, args.sym_int("a") * args.sym_int("b")); }
void translate_sym_floordiv(NodeArgs& args) { args.set_sym_output(0, floordiv(args.sym_int("a"), args.sym_int("b"))); }
void translate_sym_mod(NodeArgs& args) { args.set_sym_output(0, mod(args.sym_int("a"), args.sym_int("b"))); }
// torch.sym_max / sym_min: Python's max()/min() on SymInts (Gemma-3's sliding-window cache
// computes its mask offset as max(cumulative_length - window + 1, 0) on a Python int that dynamo
// turns into a SymInt after its first change).
void translate_sym_max(NodeArgs& args) { args.set_sym_output(0, max(args.sym_int("a"), args.sym_int("b"))); }
void translate_sym_min(NodeArgs& args) { args.set_sym_output(0, min(args.sym_int("a"), args.sym_int("b"))); }

}  // namespace luminal::translator
