// Ops whose results are numbers or sizes read from tensor data: Tensor.item()
// (_local_scalar_dense). Such a number is a one-element tensor in the IR; an integer one is also
// a symbol that sizes may mention, bound by the runtime once the tensor is computed
// (TranslationContext::bind_data_value).
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

}  // namespace luminal::translator
