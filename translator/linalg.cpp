// Matrix products. All lower to the one Matmul primitive (batch dims broadcast by views).
#include "common/error.h"
#include "translator/handlers.h"
#include "translator/registry.h"

namespace luminal::translator {

namespace {
Tensor matrix_operand(NodeArgs& args, const std::string& name, int rank) {
  Tensor t = args.tensor(name);
  USER_CHECK(t.rank() == rank) << "argument '" << name << "' must be " << rank << "-d, got shape "
                               << shape_to_string(t.shape());
  return t;
}
}  // namespace

void translate_mm(NodeArgs& args) {
  args.set_output(0, matmul(args.cx(), matrix_operand(args, "self", 2), matrix_operand(args, "mat2", 2)));
}

void translate_bmm(NodeArgs& args) {
  Tensor a = matrix_operand(args, "self", 3), b = matrix_operand(args, "mat2", 3);
  USER_CHECK(a.shape()[0] == b.shape()[0] || !(a.shape()[0].is_constant() && b.shape()[0].is_constant()))
      << "bmm batch sizes differ: " << shape_to_string(a.shape()) << " and " << shape_to_string(b.shape());
  args.set_output(0, matmul(args.cx(), a, b));
}

// int8 x int8 -> i32 (torchao's dynamic activation quantization): the product of the operands'
// exact i32 widenings, summed in i32 as torch does. A runtime may read the 8-bit operands
// themselves (passes/quantized_weights.h). On a CPU with AVX512-VNNI and no AMX, torchao makes
// the activations unsigned (a + 128 as uint8) and subtracts 128 times the weight's column sums
// after: uint8 x int8, which torch's CPU _int_mm also takes.
void translate_int_mm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Tensor a = matrix_operand(args, "self", 2), b = matrix_operand(args, "mat2", 2);
  USER_CHECK((a.dtype == ir::DType::I8 || a.dtype == ir::DType::U8) && b.dtype == ir::DType::I8)
      << "_int_mm multiplies int8 or uint8 by int8 matrices, got " << ir::dtype_name(a.dtype) << " and "
      << ir::dtype_name(b.dtype);
  args.set_output(0, matmul(cx, cast(cx, a, ir::DType::I32), cast(cx, b, ir::DType::I32)));
}

// torch.ops.higher_order.out_dtype(op, dtype, *operands): torchao's int8 x int8 -> i32 product on
// CUDA (torchao.kernel.safe_int_mm). Its semantics are torch's fallback: every operand cast to the
// promotion of the operands' dtypes and the output dtype, the op, then a cast to the output dtype.
// For int8 operands and an i32 output that is translate_int_mm's product, which the quantized
// weight passes recognise. Operands of a higher-order op are positional, without schema names.
void translate_out_dtype(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const std::vector<pt2::NamedArgument>& inputs = args.node().inputs;
  USER_CHECK(inputs.size() >= 2 && inputs[0].arg.kind == pt2::Argument::Kind::Operator &&
             inputs[1].arg.kind == pt2::Argument::Kind::ScalarType)
      << "out_dtype takes (op, dtype, *operands); the archive lists " << inputs.size() << " inputs";
  const std::string op = overload_key(inputs[0].arg.strings.at(0));
  UNSUPPORTED_CHECK(op == "aten::mm.default" && inputs.size() == 4)
      << "out_dtype over " << op << ": luminal translates out_dtype over aten.mm only";
  const ir::DType out = to_ir_dtype(static_cast<pt2::ScalarType>(inputs[1].arg.ints.at(0)), "out_dtype's dtype");
  std::vector<Tensor> operands;
  for (size_t i = 2; i < inputs.size(); ++i) {
    USER_CHECK(inputs[i].arg.kind == pt2::Argument::Kind::Tensor)
        << "out_dtype operand " << i - 2 << " is " << pt2::argument_key(inputs[i].arg.kind) << ", expected a tensor";
    const Tensor t = cx.tensor(inputs[i].arg.tensors.at(0));
    USER_CHECK(t.rank() == 2) << "out_dtype over mm: operand " << i - 2 << " must be 2-d, got shape "
                              << shape_to_string(t.shape());
    operands.push_back(t);
  }
  const ir::DType compute = promote_dtypes(promote_dtypes(operands[0].dtype, operands[1].dtype), out);
  args.set_output(0, cast(cx, matmul(cx, cast(cx, operands[0], compute), cast(cx, operands[1], compute)), out));
}

// nn.Linear with a bias: beta * self + alpha * (mat1 @ mat2). beta == 0 ignores self entirely
// (NaNs included), as torch does.
void translate_addmm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor product = matmul(cx, matrix_operand(args, "mat1", 2), matrix_operand(args, "mat2", 2));
  const ir::Scalar alpha = args.scalar("alpha"), beta = args.scalar("beta");
  if (alpha.as_double() != 1.0) product = binary(cx, ir::Op::Mul, product, constant(cx, alpha, product.dtype));
  if (beta.as_double() == 0.0) return args.set_output(0, product);
  Tensor bias = cast(cx, args.tensor("self"), product.dtype);
  if (beta.as_double() != 1.0) bias = binary(cx, ir::Op::Mul, bias, constant(cx, beta, bias.dtype));
  Tensor out = binary(cx, ir::Op::Add, product, bias);
  USER_CHECK(out.shape() == product.shape()) << "addmm bias of shape " << shape_to_string(bias.shape())
                                             << " does not broadcast to " << shape_to_string(product.shape());
  args.set_output(0, out);
}

}  // namespace luminal::translator
