// Ops whose results are numbers or sizes read from tensor data: Tensor.item()
// (_local_scalar_dense), nonzero, masked_select, masked_scatter. Such a number is a one-element tensor in the
// IR; an integer one is also a symbol that sizes may mention, bound by the runtime once the tensor
// is computed (TranslationContext::bind_data_value).
#include "common/error.h"
#include "translator/handlers.h"
#include "translator/sym_expr.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;

void translate_local_scalar_dense(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Tensor self = args.tensor("self");
  const Expr count = ir::numel(self.shape());
  USER_CHECK(count.is_constant() && count.constant_value() == 1)
      << "item() of a tensor of shape " << ir::shape_to_string(self.shape()) << "; it needs exactly one element";
  const pt2::Argument& out = args.node().outputs.at(0);
  const std::string name = args.output_name(0);
  switch (out.kind) {
    case pt2::Argument::Kind::SymInt: {
      // export names the value's symbol in sym_int_values ("u0"); sizes built from it use that name.
      const auto& values = cx.program().graph.sym_int_values;
      auto it = values.find(name);
      const Expr symbol = it != values.end() ? to_ir_expr(it->second) : Expr::symbol(name);
      UNSUPPORTED_CHECK(symbol.is_symbol()) << "item() whose value the program writes as " << symbol.to_string()
                                            << ", not as a symbol of its own";
      cx.bind_data_value(symbol.symbol_name(), cast(cx, self, DType::I64));
      cx.bind_sym_int(name, symbol);
      return;
    }
    case pt2::Argument::Kind::SymFloat:
      // A Python float is a double: the value converts exactly, as item() does.
      cx.bind_float_value(name, cast(cx, self, DType::F64));
      return;
    default: break;
  }
  UNSUPPORTED_ERROR() << "item() of a " << ir::dtype_name(self.dtype)
                      << " tensor gives a bool, which only control flow reads; luminal compiles graphs without "
                         "data-dependent branches (dynamo splits the graph there unless told to capture it)";
}

// The row count is a data symbol; torch's name for it (u0) comes with the output's TensorMeta.
void translate_nonzero(NodeArgs& args) { args.set_output(0, nonzero(args.cx(), args.tensor("self"))); }

namespace {
// masked_select's and masked_scatter's operands: self flattened after broadcasting with the
// mask (both ops work on the broadcast shape), and the flat positions of the mask's true elements.
struct MaskedElements {
  ir::Shape shape;  // self and mask broadcast together
  Tensor flat;
  Tensor positions;
};

MaskedElements masked_elements(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Tensor self = args.tensor("self");
  const Tensor mask = args.tensor("mask");
  USER_CHECK(mask.dtype == DType::Bool) << "the mask is " << ir::dtype_name(mask.dtype) << ", not bool";
  const ir::Shape shape = broadcast_shapes(self.shape(), mask.shape());
  return {shape, reshape(cx, broadcast_to(self, shape), {ir::numel(shape)}),
          true_positions(cx, broadcast_to(mask, shape))};
}
}  // namespace

// The elements of self where the mask is true, in row-major order.
void translate_masked_select(NodeArgs& args) {
  const MaskedElements m = masked_elements(args);
  args.set_output(0, gather(args.cx(), m.flat, 0, m.positions));
}

// self with its masked elements replaced, in row-major order, by source's first elements: the
// positions of the mask's true elements scatter source's head into self.
void translate_masked_scatter(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const MaskedElements m = masked_elements(args);
  const Expr count = m.positions.shape()[0];
  const Tensor source = contiguous(cx, reshape(cx, cast(cx, args.tensor("source"), m.flat.dtype), {Expr(int64_t{-1})}));
  const Expr available = source.shape()[0];
  cx.require_data_symbols(count);
  cx.graph().add_assertion(ir::SymbolAssertion{
      at_least(available, count), "masked_scatter: the mask selects more elements than source has (" +
                                       available.to_string() + ")"});
  const Tensor head{ir::TensorRef{source.ref.node, ir::View({count}, {Expr(int64_t{1})}, Expr(int64_t{0}))},
                    m.flat.dtype};
  const Tensor out = scatter(cx, m.flat, 0, m.positions, head, /*accumulate=*/false);
  args.set_output(0, reshape(cx, out, m.shape));
}

}  // namespace luminal::translator
