// Matrix products. All lower to the one Matmul primitive (batch dims broadcast by views).
#include "common/error.h"
#include "translator/handlers.h"

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
// exact i32 widenings, summed in i32 as torch does. A runtime may read the int8 operands
// themselves (passes/quantized_weights.h).
void translate_int_mm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Tensor a = matrix_operand(args, "self", 2), b = matrix_operand(args, "mat2", 2);
  USER_CHECK(a.dtype == ir::DType::I8 && b.dtype == ir::DType::I8)
      << "_int_mm multiplies int8 matrices, got " << ir::dtype_name(a.dtype) << " and " << ir::dtype_name(b.dtype);
  args.set_output(0, matmul(cx, cast(cx, a, ir::DType::I32), cast(cx, b, ir::DType::I32)));
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
