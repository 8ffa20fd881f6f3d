// Decoding of one node's arguments, in one place. Arguments are found by their schema name
// ("self", "dim"); an argument the archive omitted takes its schema default from defaults.cpp.
// Every accessor throws UserError naming the node and argument when the kind is wrong.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pt2/schema.h"
#include "translator/context.h"
#include "translator/tensor_ops.h"

namespace luminal::translator {

class NodeArgs {
 public:
  // `overload` is the registry key, "aten::add.Tensor".
  NodeArgs(TranslationContext& cx, const pt2::Node& node, std::string overload);

  TranslationContext& cx() { return cx_; }
  const pt2::Node& node() const { return node_; }
  const std::string& overload() const { return overload_; }

  bool has(const std::string& name) const;  // present in the archive or defaulted
  bool is_none(const std::string& name) const;
  const pt2::Argument& raw(const std::string& name) const;
  bool is_tensor(const std::string& name) const;  // as_tensor (a Python number is inlined instead)

  Tensor tensor(const std::string& name) const;
  std::optional<Tensor> optional_tensor(const std::string& name) const;
  std::vector<Tensor> tensors(const std::string& name) const;
  std::vector<std::optional<Tensor>> optional_tensors(const std::string& name) const;

  int64_t integer(const std::string& name) const;
  std::vector<int64_t> integers(const std::string& name) const;
  // An int or a SymInt (as_int / as_sym_int), as an expression.
  ir::Expr sym_int(const std::string& name) const;
  std::vector<ir::Expr> sym_ints(const std::string& name) const;
  std::optional<ir::Expr> optional_sym_int(const std::string& name) const;  // None -> nullopt
  double floating(const std::string& name) const;  // as_float or as_int
  bool boolean(const std::string& name) const;
  // A bool or a SymBool (a comparison of symbolic ints), as an expression that is 1 when it holds
  // and 0 when not.
  ir::Expr sym_bool(const std::string& name) const;
  // A Python number (int, float, bool, SymInt with a constant value) as a Scalar.
  ir::Scalar scalar(const std::string& name) const;
  ScalarKind scalar_kind(const std::string& name) const;  // bool, int or float, for promotion
  // A tensor or an inlined number (SymInt included), for elementwise ops.
  Operand operand(const std::string& name) const;
  std::optional<ir::DType> dtype(const std::string& name) const;  // None -> nullopt
  std::string string(const std::string& name) const;
  std::optional<pt2::Device> device(const std::string& name) const;  // None or absent -> nullopt
  // Factory and copy ops take a `layout` keyword; anything but strided (sparse, mkldnn) is a
  // UserError: such tensors cannot reach a compiled graph.
  void require_strided_layout() const;

  size_t output_count() const { return node_.outputs.size(); }
  // The program value name of output i: a tensor's, or a named SymInt/SymFloat/SymBool's ("" when
  // the output is None or unused).
  std::string output_name(size_t i) const;
  // The exported dtype and (possibly symbolic) shape of tensor output i, from the program's
  // tensor_values.
  ir::DType output_dtype(size_t i) const;
  ir::Shape output_shape(size_t i) const;
  // Binds output i. Checks the value against the program's TensorMeta: a dtype or static size
  // that differs is an InternalError (a translation bug); a symbolic size torch wrote in another
  // form (s0 vs min(s0, s0 + 1)) takes torch's form, so later broadcasts compare equal.
  void set_output(size_t i, const Tensor& value);
  // Binds the list output i (split_with_sizes: one as_tensors output).
  void set_outputs(size_t i, const std::vector<Tensor>& values);
  void set_sym_output(size_t i, const ir::Expr& value);
  void set_sym_bool_output(size_t i, const ir::Expr& holds);

 private:
  TranslationContext& cx_;
  const pt2::Node& node_;
  std::string overload_;
  std::string where(const std::string& arg) const;
  const pt2::TensorMeta& output_meta(size_t i) const;
};

// Schema dtype code -> IR dtype; UnsupportedError naming `where` for complex/fp8/unsigned>8.
ir::DType to_ir_dtype(pt2::ScalarType t, const std::string& where);

}  // namespace luminal::translator
