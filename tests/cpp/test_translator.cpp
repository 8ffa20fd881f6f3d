// The translator: tensor_ops building blocks (promotion, broadcasting, views), symbolic size
// parsing, the registry, error messages, and whole fixture programs translated, verified and
// run on the reference runtime against values computed here from the archive's weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common/error.h"
#include "cpu_test_util.h"
#include "ir_test_builder.h"
#include "pt2/reader.h"
#include "translator/registry.h"
#include "translator/sym_expr.h"
#include "translator/tensor_ops.h"
#include "translator/translate.h"

namespace luminal::translator {
namespace {

using ir::DType;
using ir::Expr;
using ir::Op;

// A context over an empty program, for building IR with tensor_ops directly.
struct OpsFixture : ::testing::Test {
  pt2::ExportedProgram program;
  TranslationContext cx{program};

  Tensor input(DType dtype, ir::Shape shape) {
    ir::Node n;
    n.op = Op::Input;
    n.dtype = dtype;
    n.shape = std::move(shape);
    n.name = "x" + std::to_string(cx.graph().size());
    return cx.add(std::move(n));
  }
  size_t node_count() { return cx.graph().size(); }
  Op op_of(const Tensor& t) { return cx.graph().node(t.ref.node).op; }
};

std::string shape_of(const Tensor& t) { return ir::shape_to_string(t.shape()); }

// ---------------------------------------------------------------- promotion

TEST_F(OpsFixture, PromotionTensorTensor) {
  EXPECT_EQ(promote_types(input(DType::F32, {2}), input(DType::I64, {2})), DType::F32);
  EXPECT_EQ(promote_types(input(DType::BF16, {2}), input(DType::F16, {2})), DType::F32);
  EXPECT_EQ(promote_types(input(DType::U8, {2}), input(DType::I8, {2})), DType::I16);
  EXPECT_EQ(promote_types(input(DType::Bool, {2}), input(DType::I32, {2})), DType::I32);
  EXPECT_EQ(promote_types(input(DType::I32, {2}), input(DType::I64, {2})), DType::I64);
}

// 0-d tensors count as scalars: they only win when of a higher category.
TEST_F(OpsFixture, PromotionZeroDimTensors) {
  EXPECT_EQ(promote_types(input(DType::F32, {2}), input(DType::F64, {})), DType::F32);
  EXPECT_EQ(promote_types(input(DType::BF16, {2}), input(DType::F32, {})), DType::BF16);
  EXPECT_EQ(promote_types(input(DType::I32, {2}), input(DType::I64, {})), DType::I32);
  EXPECT_EQ(promote_types(input(DType::I32, {2}), input(DType::F64, {})), DType::F64);
  EXPECT_EQ(promote_types(input(DType::Bool, {2}), input(DType::I64, {})), DType::I64);
  EXPECT_EQ(promote_types(input(DType::I64, {}), input(DType::F32, {})), DType::F32);
}

TEST_F(OpsFixture, PromotionPythonScalars) {
  const ir::Scalar two = ir::Scalar::of_int(2), half = ir::Scalar::of_float(0.5);
  EXPECT_EQ(promote_with_scalar(input(DType::F16, {2}), two), DType::F16);
  EXPECT_EQ(promote_with_scalar(input(DType::BF16, {2}), half), DType::BF16);
  EXPECT_EQ(promote_with_scalar(input(DType::I64, {2}), half), DType::F32);
  EXPECT_EQ(promote_with_scalar(input(DType::I32, {2}), two), DType::I32);
  EXPECT_EQ(promote_with_scalar(input(DType::Bool, {2}), two), DType::I64);
  EXPECT_EQ(promote_with_scalar(input(DType::Bool, {2}), half), DType::F32);
  EXPECT_EQ(result_type({input(DType::Bool, {2})}, {ScalarKind::Bool}), DType::Bool);
  EXPECT_EQ(result_type({input(DType::I32, {}), input(DType::I32, {3})}, {ScalarKind::Float}), DType::F32);
}

// ---------------------------------------------------------------- broadcasting and views

TEST_F(OpsFixture, BroadcastShapes) {
  EXPECT_EQ(ir::shape_to_string(broadcast_shapes({2, 1, 3}, {4, 1})), "[2, 4, 3]");
  EXPECT_EQ(ir::shape_to_string(broadcast_shapes({}, {5})), "[5]");
  const Expr s = Expr::symbol("s0");
  EXPECT_EQ(ir::shape_to_string(broadcast_shapes({1, s}, {s, 1})), "[s0, s0]");
  EXPECT_THROW(broadcast_shapes({2, 3}, {4, 3}), UserError);
}

TEST_F(OpsFixture, BinaryBroadcastsWithStrideZeroViews) {
  Tensor a = input(DType::F32, {2, 3});
  Tensor b = input(DType::F32, {3});
  Tensor c = binary(cx, Op::Add, a, b);
  const ir::Node& n = cx.graph().node(c.ref.node);
  EXPECT_EQ(n.op, Op::Add);
  EXPECT_EQ(n.inputs[1].view.to_string(), "[2, 3] strides [0, 1]");
  EXPECT_NO_THROW(ir::verify(cx.graph()));
}

TEST_F(OpsFixture, ReshapeIsAViewWhenStridesAllow) {
  Tensor x = input(DType::F32, {2, 3, 4});
  const size_t before = node_count();
  Tensor y = reshape(cx, x, {6, -1});
  EXPECT_EQ(node_count(), before);
  EXPECT_EQ(y.ref.view.to_string(), "[6, 4] strides [4, 1]");
  // A transposed tensor cannot be flattened by strides: torch.reshape copies, and so do we.
  Tensor t = transpose(x, 0, 2);
  Tensor z = reshape(cx, t, {-1});
  EXPECT_EQ(node_count(), before + 1);
  EXPECT_EQ(op_of(z), Op::Copy);
  EXPECT_EQ(shape_of(z), "[24]");
  EXPECT_THROW(reshape(cx, x, {5, -1}), UserError);
}

// view(x [1, s, 64], [1, s, -1, 16]): the -1 is 4, not (64*s) // (16*s).
TEST_F(OpsFixture, ReshapeInfersSymbolicDims) {
  const Expr s = Expr::symbol("s0");
  Tensor x = input(DType::F32, {1, s, 64});
  Tensor y = reshape(cx, x, {1, s, -1, 16});
  EXPECT_EQ(shape_of(y), "[1, s0, 4, 16]");
  Tensor z = reshape(cx, x, {-1, 64});
  EXPECT_EQ(shape_of(z), "[s0, 64]");
}

TEST_F(OpsFixture, SliceClampsLikeTorch) {
  Tensor x = input(DType::F32, {4, 10});
  Tensor a = slice(x, 1, Expr(2), Expr(std::numeric_limits<int64_t>::max()), 1);
  EXPECT_EQ(a.ref.view.to_string(), "[4, 8] strides [10, 1] offset 2");
  Tensor b = slice(x, -1, Expr(-3), std::nullopt, 1);
  EXPECT_EQ(b.ref.view.to_string(), "[4, 3] strides [10, 1] offset 7");
  Tensor c = slice(x, 1, Expr(std::numeric_limits<int64_t>::min()), Expr(-8), 2);
  EXPECT_EQ(shape_of(c), "[4, 1]");
  Tensor d = slice(x, 0, Expr(3), Expr(1), 1);
  EXPECT_EQ(shape_of(d), "[0, 10]");
  const Expr s = Expr::symbol("s0");
  Tensor e = slice(input(DType::F32, {s}), 0, std::nullopt, Expr(std::numeric_limits<int64_t>::max()), 1);
  EXPECT_EQ(shape_of(e), "[s0]");
}

TEST_F(OpsFixture, NegativeDimsWrap) {
  Tensor x = input(DType::F32, {2, 3, 4});
  EXPECT_EQ(shape_of(permute(x, {-1, 0, -2})), "[4, 2, 3]");
  EXPECT_EQ(shape_of(unsqueeze(x, 3)), "[2, 3, 4, 1]");
  EXPECT_EQ(shape_of(select(x, -2, Expr(-1))), "[2, 4]");
  EXPECT_EQ(select(x, -2, Expr(-1)).ref.view.offset().to_string(), "8");
  EXPECT_EQ(wrap_dim(-1, 0), 0);
  EXPECT_THROW(wrap_dim(3, 3), UserError);
  EXPECT_THROW(permute(x, {0, 0, 1}), UserError);
}

TEST_F(OpsFixture, ExpandKeepsMinusOneDims) {
  Tensor x = input(DType::F32, {3, 1});
  Tensor y = expand(x, {2, -1, 5});
  EXPECT_EQ(y.ref.view.to_string(), "[2, 3, 5] strides [0, 1, 0]");
  EXPECT_THROW(expand(x, {4, 5}), UserError);
}

TEST_F(OpsFixture, ReduceDropsAxesUnlessKeepdim) {
  Tensor x = input(DType::F32, {2, 3, 4});
  Tensor kept = reduce(cx, Op::SumReduce, x, {-1, 0}, true);
  EXPECT_EQ(shape_of(kept), "[1, 3, 1]");
  Tensor dropped = reduce(cx, Op::MaxReduce, x, {1}, false);
  EXPECT_EQ(shape_of(dropped), "[2, 4]");
  EXPECT_NO_THROW(ir::verify(cx.graph()));
}

TEST_F(OpsFixture, MatmulBroadcastsBatchDims) {
  Tensor a = input(DType::F32, {2, 1, 3, 4});
  Tensor b = input(DType::F32, {5, 4, 6});
  Tensor c = matmul(cx, a, b);
  EXPECT_EQ(shape_of(c), "[2, 5, 3, 6]");
  const ir::Node& n = cx.graph().node(c.ref.node);
  EXPECT_EQ(ir::shape_to_string(n.inputs[0].view.shape()), "[2, 5, 3, 4]");
  EXPECT_EQ(ir::shape_to_string(n.inputs[1].view.shape()), "[2, 5, 4, 6]");
  EXPECT_EQ(shape_of(matmul(cx, input(DType::F32, {4}), input(DType::F32, {4, 6}))), "[6]");
  EXPECT_NO_THROW(ir::verify(cx.graph()));
}

pt2::Argument argument_of(pt2::Argument::Kind kind) {
  pt2::Argument a;
  a.kind = kind;
  return a;
}
pt2::Argument tensor_argument(const std::string& name) {
  pt2::Argument a = argument_of(pt2::Argument::Kind::Tensor);
  a.tensors = {name};
  return a;
}
pt2::Argument int_argument(int64_t value) {
  pt2::Argument a = argument_of(pt2::Argument::Kind::Int);
  a.ints = {value};
  return a;
}

// Runs the handler of `overload` on a node of `inputs` over the tensor `x` (bound as "x"), as the
// translator would; returns the node's one output.
Tensor translate_node_of(TranslationContext& cx, const Tensor& x, const std::string& overload,
                         std::vector<pt2::NamedArgument> inputs) {
  cx.bind_tensor("x", x);
  pt2::Node node;
  node.name = overload;
  node.inputs = std::move(inputs);
  node.outputs = {tensor_argument("out")};
  NodeArgs args(cx, node, overload);
  find_handler(overload)(args);
  return cx.tensor("out");
}

// aten::cumsum.default(x, dim, dtype=).
Tensor translate_cumsum_of(TranslationContext& cx, const Tensor& x, int64_t dim, std::optional<pt2::ScalarType> dtype) {
  pt2::Argument dtype_arg;
  if (dtype) {
    dtype_arg = argument_of(pt2::Argument::Kind::ScalarType);
    dtype_arg.ints = {static_cast<int64_t>(*dtype)};
  }
  return translate_node_of(cx, x, "aten::cumsum.default",
                           {{"self", tensor_argument("x"), pt2::ArgumentKind::Positional},
                            {"dim", int_argument(dim), pt2::ArgumentKind::Positional},
                            {"dtype", dtype_arg, pt2::ArgumentKind::Keyword}});
}

// One CumSum along the wrapped dim in the result dtype: integers and bools give i64 unless
// dtype= is given (the input is cast, the scan widens its own sum); a 0-d input is only a cast;
// dtype=torch.bool is rejected, as torch rejects it.
TEST_F(OpsFixture, CumsumIsOneScanInTheResultDtype) {
  const Tensor f16 = translate_cumsum_of(cx, input(DType::F16, {2, 5}), -1, std::nullopt);
  EXPECT_EQ(op_of(f16), Op::CumSum);
  EXPECT_EQ(f16.dtype, DType::F16);
  EXPECT_EQ(cx.graph().node(f16.ref.node).axis, 1);

  const Tensor mask = input(DType::Bool, {3, 4});
  const Tensor positions = translate_cumsum_of(cx, mask, 0, std::nullopt);
  EXPECT_EQ(positions.dtype, DType::I64);
  const ir::Node& scan = cx.graph().node(positions.ref.node);
  EXPECT_EQ(scan.op, Op::CumSum);
  EXPECT_EQ(scan.axis, 0);
  EXPECT_EQ(cx.graph().node(scan.inputs[0].node).op, Op::Cast);

  const Tensor narrow = translate_cumsum_of(cx, input(DType::I32, {6}), 0, pt2::ScalarType::Char);
  EXPECT_EQ(op_of(narrow), Op::CumSum);
  EXPECT_EQ(narrow.dtype, DType::I8);

  const size_t before = node_count();
  const Tensor scalar = translate_cumsum_of(cx, input(DType::I32, {}), 0, std::nullopt);
  EXPECT_EQ(op_of(scalar), Op::Cast);
  EXPECT_EQ(node_count(), before + 2);  // the input and its cast
  EXPECT_NO_THROW(ir::verify(cx.graph()));

  EXPECT_THROW(translate_cumsum_of(cx, input(DType::I32, {3}), 0, pt2::ScalarType::Bool), UserError);
}

// aten::histc.default(x, bins, min, max).
Tensor translate_histc_of(TranslationContext& cx, const Tensor& x, int64_t bins, double min, double max) {
  pt2::Argument min_arg = argument_of(pt2::Argument::Kind::Float), max_arg = min_arg;
  min_arg.floats = {min};
  max_arg.floats = {max};
  return translate_node_of(cx, x, "aten::histc.default",
                           {{"self", tensor_argument("x"), pt2::ArgumentKind::Positional},
                            {"bins", int_argument(bins), pt2::ArgumentKind::Positional},
                            {"min", min_arg, pt2::ArgumentKind::Positional},
                            {"max", max_arg, pt2::ArgumentKind::Positional}});
}

// torch's CUDA histc of integers (_histc_cuda_template, getBin): min and max truncate to
// integers, min == max means the data's range (widened by 1 when that is one value too), and an
// element in [min, max] lands in (x - min) * bins / (max - min), divided in int64, the last bin
// taking x == max. CPU torch rejects integer histc, so this is the expectation.
std::vector<int64_t> cuda_integer_histc(const std::vector<int64_t>& values, int64_t bins, double min, double max) {
  int64_t lo = static_cast<int64_t>(min), hi = static_cast<int64_t>(max);
  if (lo == hi && !values.empty()) {
    lo = *std::min_element(values.begin(), values.end());
    hi = *std::max_element(values.begin(), values.end());
  }
  if (lo == hi) lo -= 1, hi += 1;
  std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
  for (int64_t x : values)
    if (lo <= x && x <= hi) ++counts[static_cast<size_t>(std::min((x - lo) * bins / (hi - lo), bins - 1))];
  return counts;
}

// transformers counts tokens per expert with histc on int32 ids on CUDA: integer histc is
// translated with CUDA's binning, exact on both CPU runtimes, for every integer width, read
// through a transposed view, with fixed, fractional and data-derived ranges.
TEST(TranslateHistc, IntegerInputsBinAsTorchsCudaKernel) {
  struct Case {
    int64_t bins;
    double min, max;
  };
  // Stored [5, 2], read as its transpose [2, 5]: 10 values, some outside every range below.
  const std::vector<int64_t> stored = {0, 3, 1, 3, 1, 0, 2, 2, 7, -1};
  std::vector<int64_t> logical;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 5; ++c) logical.push_back(stored[static_cast<size_t>(c * 2 + r)]);
  for (DType dtype : {DType::I32, DType::I64, DType::I16}) {
    for (const Case& k : {Case{4, 0, 3}, Case{3, -1.5, 2.9}, Case{5, 0, 0}, Case{2, 4, 4}, Case{6, -1, 7}}) {
      const std::string what = std::string(ir::dtype_name(dtype)) + " bins " + std::to_string(k.bins) + " [" +
                                std::to_string(k.min) + ", " + std::to_string(k.max) + "]";
      pt2::ExportedProgram program;
      TranslationContext cx{program};
      ir::Node x;
      x.op = Op::Input;
      x.dtype = dtype;
      x.shape = {2, 5};
      x.name = "x";
      const Tensor counts = translate_histc_of(cx, cx.add(std::move(x)), k.bins, k.min, k.max);
      ASSERT_EQ(counts.dtype, dtype) << what;
      cx.graph().outputs().push_back(counts.ref);
      ir::verify(cx.graph());

      testing::HostTensor input;
      if (dtype == DType::I32) input = testing::HostTensor::of<int32_t>(dtype, {2, 5}, {stored.begin(), stored.end()}, {1, 2});
      if (dtype == DType::I64) input = testing::HostTensor::of<int64_t>(dtype, {2, 5}, stored, {1, 2});
      if (dtype == DType::I16) input = testing::HostTensor::of<int16_t>(dtype, {2, 5}, {stored.begin(), stored.end()}, {1, 2});
      const std::vector<int64_t> expected = cuda_integer_histc(logical, k.bins, k.min, k.max);
      for (bool reference : {true, false}) {
        std::vector<testing::HostTensor> inputs = {input};
        auto executable = reference ? testing::compile_reference(cx.graph()) : testing::compile_cpu(cx.graph());
        const testing::HostTensor out = testing::run_executable(*executable, cx.graph(), inputs)[0];
        std::vector<int64_t> got;
        for (size_t i = 0; i < expected.size(); ++i) got.push_back(static_cast<int64_t>(testing::element_as_double(out, i)));
        EXPECT_EQ(got, expected) << what << (reference ? " (reference)" : " (cpu)");
      }
    }
  }
}

TEST(TranslateHistc, BoolInputsAreRejectedAsTorchRejectsThem) {
  pt2::ExportedProgram program;
  TranslationContext cx{program};
  ir::Node x;
  x.op = Op::Input;
  x.dtype = DType::Bool;
  x.shape = {4};
  x.name = "x";
  const Tensor mask = cx.add(std::move(x));
  EXPECT_EQ(testing::user_error_of([&] { translate_histc_of(cx, mask, 2, 0, 1); }),
            "histc of a bool tensor: torch counts numbers only");
}

// ---------------------------------------------------------------- symbolic sizes

TEST(SymExpr, ParsesWhatTorchWrites) {
  EXPECT_EQ(parse_sym_expr("Symbol('s77', positive=True, integer=True)").to_string(), "s77");
  EXPECT_EQ(parse_sym_expr("Integer(3)").to_string(), "3");
  EXPECT_EQ(parse_sym_expr("Add(Symbol('s70', positive=True, integer=True), Integer(1))").to_string(), "(s70 + 1)");
  EXPECT_EQ(parse_sym_expr("Mul(Integer(64), Symbol('s70', positive=True, integer=True))").to_string(), "64*s70");
  EXPECT_EQ(parse_sym_expr("Mul(Integer(4), Pow(Symbol('s0', integer=True), Integer(2)))").to_string(), "4*s0*s0");
  ir::SymbolBindings b{{"s0", 7}, {"s1", 3}};
  EXPECT_EQ(parse_sym_expr("FloorDiv(Symbol('s0'), Integer(2))").evaluate(b), 3);
  EXPECT_EQ(parse_sym_expr("Mod(Symbol('s0'), Symbol('s1'))").evaluate(b), 1);
  EXPECT_EQ(parse_sym_expr("Max(Symbol('s0'), Symbol('s1'), Integer(9))").evaluate(b), 9);
  EXPECT_EQ(parse_sym_expr("Min(Symbol('s0'), Symbol('s1'))").evaluate(b), 3);
  EXPECT_EQ(parse_sym_expr("Add(Integer(-1), Symbol('s0'))").evaluate(b), 6);
}

TEST(SymExpr, RejectsUnknownFunctionsAndGarbage) {
  try {
    parse_sym_expr("CeilToInt(Symbol('s0'))");
    FAIL() << "no exception";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("CeilToInt(Symbol('s0'))"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_sym_expr("Integer(3"), UserError);
  EXPECT_THROW(parse_sym_expr("s0 + 1"), UserError);
}

// ---------------------------------------------------------------- registry

TEST(Registry, SortedAndKeyedByOverload) {
  const std::vector<std::string> names = registered_overloads();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const std::string& name : names) EXPECT_NE(find_handler(name), nullptr) << name;
  EXPECT_EQ(find_handler("aten::no_such_op.default"), nullptr);
  EXPECT_EQ(overload_key("torch.ops.aten.add.Tensor"), "aten::add.Tensor");
  EXPECT_EQ(overload_key("torch.ops.transformers.grouped_mm_fallback.default"),
            "transformers::grouped_mm_fallback.default");
  EXPECT_EQ(overload_key("_operator.add"), "_operator::add");
  EXPECT_EQ(overload_key("operator.mul"), "_operator::mul");
}

// ---------------------------------------------------------------- error messages

pt2::Argument tensor_arg(const std::string& name) {
  pt2::Argument a;
  a.kind = pt2::Argument::Kind::Tensor;
  a.tensors = {name};
  return a;
}

// x [2] f32 -> one node `target` named `name` with the given inputs -> output `name`.
pt2::Pt2Program one_node_program(const std::string& target, const std::string& name,
                                 std::vector<pt2::NamedArgument> inputs) {
  pt2::Pt2Program p;
  pt2::TensorMeta meta;
  meta.dtype = pt2::ScalarType::Float;
  pt2::SymInt two;
  two.value = 2;
  meta.sizes = {two};
  p.program.graph.tensor_values["x"] = meta;
  p.program.graph.tensor_values[name] = meta;
  pt2::InputSpec in;
  in.kind = pt2::InputSpec::Kind::UserInput;
  in.arg = tensor_arg("x");
  p.program.signature.input_specs.push_back(in);
  pt2::Node node;
  node.target = target;
  node.name = name;
  node.inputs = std::move(inputs);
  node.outputs = {tensor_arg(name)};
  node.metadata["stack_trace"] = "  File \"model.py\", line 17, in forward\n    return torch.foo(x)\n";
  p.program.graph.nodes.push_back(node);
  pt2::OutputSpec out;
  out.arg = tensor_arg(name);
  p.program.signature.output_specs.push_back(out);
  return p;
}

template <typename E>
std::string message_of(const pt2::Pt2Program& p) {
  try {
    translate(p);
  } catch (const E& e) {
    return e.what();
  }
  return "no exception of the expected kind";
}

TEST(TranslateErrors, MissingArgumentNamesNodeAndArgument) {
  auto p = one_node_program("torch.ops.aten.add.Tensor", "add_3", {{"self", tensor_arg("x"), pt2::ArgumentKind::Positional}});
  EXPECT_EQ(message_of<UserError>(p), "node 'add_3' (aten::add.Tensor): missing argument 'other'");
}

TEST(TranslateErrors, WrongArgumentKindNamesTheArgument) {
  pt2::Argument f;
  f.kind = pt2::Argument::Kind::Float;
  f.floats = {1.0};
  auto p = one_node_program("torch.ops.aten.neg.default", "neg", {{"self", f, pt2::ArgumentKind::Positional}});
  EXPECT_EQ(message_of<UserError>(p), "node 'neg' (aten::neg.default): argument 'self' is as_float, expected a tensor");
}

// Found by tests/fuzz/fuzz_compile: an archive node whose outputs disagree with its op's reached
// an internal check ("the handler did not bind output"); it is the archive's fault.
TEST(TranslateErrors, SymOpWithTensorOutputNamesTheOutput) {
  auto p = one_node_program("torch.ops.aten.sym_numel.default", "numel",
                            {{"self", tensor_arg("x"), pt2::ArgumentKind::Positional}});
  EXPECT_EQ(message_of<UserError>(p), "node 'numel' (aten::sym_numel.default): output 0 is as_tensor, expected a named SymInt");
}

TEST(TranslateErrors, ExtraTensorOutputIsTheArchivesFault) {
  auto p = one_node_program("torch.ops.aten.relu.default", "relu", {{"self", tensor_arg("x"), pt2::ArgumentKind::Positional}});
  p.program.graph.nodes[0].outputs.push_back(tensor_arg("relu_extra"));
  const std::string m = message_of<UserError>(p);
  EXPECT_EQ(m.rfind("node 'relu' (aten::relu.default): the program lists output 1 ('relu_extra') of 2, but "
                    "aten::relu.default computes no such tensor",
                    0),
            0u)
      << m;
}

TEST(TranslateErrors, UnknownOpNamesNodeAndSource) {
  auto p = one_node_program("torch.ops.aten.foo.bar", "foo_1", {{"self", tensor_arg("x"), pt2::ArgumentKind::Positional}});
  const std::string m = message_of<UnsupportedError>(p);
  EXPECT_EQ(m.rfind("aten::foo.bar has no native translation (node 'foo_1', at File \"model.py\", line 17, in "
                    "forward: return torch.foo(x)) and options={'fallback': 'error'} forbids",
                    0),
            0u)
      << m;
}

TEST(TranslateFallback, UntranslatedOpBecomesAnAtenCall) {
  // aten::foo.bar(x, dim=1, approximate="tanh"): the call keeps every argument by name, its tensor
  // operands as node inputs, and the result's dtype and shape from the program.
  pt2::Argument dim;
  dim.kind = pt2::Argument::Kind::Int;
  dim.ints = {1};
  pt2::Argument approximate;
  approximate.kind = pt2::Argument::Kind::String;
  approximate.strings = {"tanh"};
  auto p = one_node_program("torch.ops.aten.foo.bar", "foo_1",
                            {{"self", tensor_arg("x"), pt2::ArgumentKind::Positional},
                             {"dim", dim, pt2::ArgumentKind::Positional},
                             {"approximate", approximate, pt2::ArgumentKind::Keyword}});
  TranslateOptions options;
  options.aten_fallback = true;
  TranslatedProgram t = translate(p, options);
  EXPECT_EQ(t.aten_fallback_ops, std::vector<std::string>{"aten::foo.bar"});
  const ir::Node& call = t.graph.node(t.graph.outputs()[0].node);
  ASSERT_EQ(call.op, Op::AtenCall);
  EXPECT_EQ(call.aten_call->op, "aten::foo");
  EXPECT_EQ(call.aten_call->overload, "bar");
  EXPECT_EQ(call.aten_call->output_index, 0);
  EXPECT_EQ(call.dtype, DType::F32);
  EXPECT_EQ(call.shape, (ir::Shape{Expr(int64_t{2})}));
  ASSERT_EQ(call.inputs.size(), 1u);
  EXPECT_EQ(t.graph.node(call.inputs[0].node).op, Op::Input);
  ASSERT_EQ(call.aten_call->args.size(), 3u);
  EXPECT_EQ(call.aten_call->args[0].kind, ir::AtenArg::Kind::Tensor);
  EXPECT_EQ(call.aten_call->args[0].tensors, std::vector<int>{0});
  EXPECT_EQ(call.aten_call->args[1].kind, ir::AtenArg::Kind::Int);
  EXPECT_EQ(call.aten_call->args[1].ints.at(0), Expr(int64_t{1}));
  EXPECT_EQ(call.aten_call->args[2].name, "approximate");
  EXPECT_EQ(call.aten_call->args[2].text, "tanh");
}

// torch.unique's result size depends on the data; it has no translation, and the fallback cannot
// give it one (nonzero, the other such op, is translated natively).
TEST(TranslateFallback, DataDependentResultShapeIsUnsupported) {
  auto p = one_node_program("torch.ops.aten._unique2.default", "unique",
                            {{"self", tensor_arg("x"), pt2::ArgumentKind::Positional}});
  pt2::SymInt unbacked;
  unbacked.expr = pt2::SymExpr{"Symbol('u0', integer=True)", std::nullopt};
  p.program.graph.tensor_values["unique"].sizes = {unbacked};
  TranslateOptions options;
  options.aten_fallback = true;
  try {
    translate(p, options);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("depends on the data (u0)"), std::string::npos) << e.what();
  }
}

TEST(TranslateErrors, DefaultsFillOmittedArguments) {
  // add.Tensor without alpha takes the schema default 1.
  auto p = one_node_program("torch.ops.aten.add.Tensor", "add",
                            {{"self", tensor_arg("x"), pt2::ArgumentKind::Positional},
                             {"other", tensor_arg("x"), pt2::ArgumentKind::Positional}});
  TranslatedProgram t = translate(p);
  EXPECT_EQ(t.graph.node(t.graph.outputs()[0].node).op, Op::Add);
}

// ---------------------------------------------------------------- fixture programs

std::string fixture(const std::string& name) { return std::string(LUMINAL_TEST_DATA_DIR) + "/" + name; }

std::map<Op, int> op_counts(const ir::Graph& g) {
  std::map<Op, int> counts;
  for (const ir::Node& n : g.nodes()) counts[n.op]++;
  return counts;
}

std::map<std::string, runtime::BufferRef> bind_weights(pt2::Pt2Program& p) {
  std::map<std::string, runtime::BufferRef> weights;
  for (auto* stored : {&p.weights, &p.constants}) {
    for (auto& [fqn, t] : *stored) {
      const DType dtype = to_ir_dtype(t.dtype, fqn);
      weights[fqn] = runtime::BufferRef{t.bytes.data() + t.storage_offset * ir::dtype_size(dtype), dtype, t.sizes,
                                        t.strides};
    }
  }
  return weights;
}

std::vector<float> floats_of(const pt2::StoredTensor& t) {
  std::vector<float> v(t.bytes.size() / 4 - static_cast<size_t>(t.storage_offset));
  std::memcpy(v.data(), t.bytes.data() + t.storage_offset * 4, v.size() * 4);
  return v;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 7) - 3);
  return v;
}

// out[i][o] = b[o] + sum_k x[i][k] * w[o][k]  (nn.Linear)
std::vector<float> linear(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                          int rows, int in, int out) {
  std::vector<float> y(static_cast<size_t>(rows * out));
  for (int i = 0; i < rows; ++i)
    for (int o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int k = 0; k < in; ++k) acc += static_cast<double>(x[i * in + k]) * w[o * in + k];
      y[i * out + o] = static_cast<float>(acc);
    }
  return y;
}

void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected, float tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
}

std::vector<float> run_mlp(const std::string& name, int rows) {
  pt2::Pt2Program p = pt2::read_pt2_file(fixture(name));
  TranslatedProgram t = translate(p);
  EXPECT_EQ(t.input_names, std::vector<std::string>{"x"});
  std::map<Op, int> counts = op_counts(t.graph);
  EXPECT_EQ(counts[Op::Matmul], 2);
  EXPECT_EQ(counts[Op::Weight], 4);
  EXPECT_EQ(counts[Op::Copy], 0) << "the transposed weights must stay views";
  const auto weights = bind_weights(p);
  std::vector<testing::HostTensor> in = {testing::HostTensor::of<float>(DType::F32, {rows, 16}, ramp(rows * 16, 0.25f))};
  auto out = testing::run_reference(t.graph, in, weights);
  // relu(x W1^T + b1) W2^T + b2, from the archive's own weights.
  auto h = linear(ramp(rows * 16, 0.25f), floats_of(p.weights.at("fc1.weight")), floats_of(p.weights.at("fc1.bias")),
                  rows, 16, 32);
  for (float& v : h) v = std::max(v, 0.0f);
  auto expected = linear(h, floats_of(p.weights.at("fc2.weight")), floats_of(p.weights.at("fc2.bias")), rows, 32, 4);
  std::vector<float> actual = out.at(0).values<float>();
  expect_near_all(actual, expected, 1e-5f);
  return actual;
}

TEST(TranslateFixtures, MlpRunsAndMatchesHandComputedResult) {
  run_mlp("mlp.pt2", 4);
  run_mlp("mlp_deflate.pt2", 4);
}

// The batch dim is symbolic: one translation serves every batch size.
TEST(TranslateFixtures, DynamicMlpServesOtherBatchSizes) {
  pt2::Pt2Program p = pt2::read_pt2_file(fixture("dyn_mlp.pt2"));
  TranslatedProgram t = translate(p);
  const ir::Node& x = t.graph.node(t.graph.input_nodes().at(0));
  EXPECT_FALSE(x.shape[0].is_constant());
  EXPECT_EQ(x.shape[1].to_string(), "16");
  run_mlp("dyn_mlp.pt2", 3);
  run_mlp("dyn_mlp.pt2", 7);
}

// Every signature kind: a parameter, a mutated buffer, a non-persistent buffer, a constant, a
// mutated user input; layer_norm without affine parameters, clamp(min), maximum with -inf.
TEST(TranslateFixtures, SigdemoSignatureAndValues) {
  pt2::Pt2Program p = pt2::read_pt2_file(fixture("sigdemo.pt2"));
  TranslatedProgram t = translate(p);
  EXPECT_EQ(t.input_names, (std::vector<std::string>{"x", "y"}));
  ASSERT_EQ(t.outputs.size(), 4u);
  EXPECT_EQ(t.outputs[0].kind, ProgramOutput::Kind::WeightMutation);
  EXPECT_EQ(t.outputs[0].target, "running");
  EXPECT_EQ(t.outputs[1].kind, ProgramOutput::Kind::UserInputMutation);
  EXPECT_EQ(t.outputs[1].user_input_index, 1);
  EXPECT_EQ(t.outputs[2].kind, ProgramOutput::Kind::UserOutput);
  std::map<std::string, bool> mutated;
  for (const WeightSpec& w : t.weights) mutated[w.fqn] = w.is_mutated;
  EXPECT_EQ(mutated, (std::map<std::string, bool>{{"const", false}, {"running", true}, {"scratch", false}, {"w", false}}));

  const std::vector<float> x = ramp(32, 0.5f), y = ramp(32, -0.25f);
  std::vector<testing::HostTensor> in = {testing::HostTensor::of<float>(DType::F32, {4, 8}, x),
                                         testing::HostTensor::of<float>(DType::F32, {4, 8}, y)};
  const auto weights = bind_weights(p);
  auto out = testing::run_reference(t.graph, in, weights);

  auto get = [&](const std::string& fqn) {
    auto it = p.weights.find(fqn);
    return floats_of(it != p.weights.end() ? it->second : p.constants.at(fqn));
  };
  const std::vector<float> w = get("w"), running = get("running"), scratch = get("scratch"), cst = get("const");
  std::vector<float> h(32), running_new(8), y2(32), normed(32);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) {
      double acc = 0;
      for (int k = 0; k < 8; ++k) acc += static_cast<double>(x[i * 8 + k]) * w[k * 8 + j];
      h[i * 8 + j] = static_cast<float>(acc) + scratch[j] + cst[j];
    }
  for (int j = 0; j < 8; ++j) running_new[j] = running[j] + (h[j] + h[8 + j] + h[16 + j] + h[24 + j]) / 4.0f;
  for (int k = 0; k < 32; ++k) y2[k] = y[k] * 2.0f;
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double mean = 0, var = 0;
    for (int j = 0; j < 8; ++j) mean += h[i * 8 + j] / 8.0;
    for (int j = 0; j < 8; ++j) var += (h[i * 8 + j] - mean) * (h[i * 8 + j] - mean) / 8.0;
    for (int j = 0; j < 8; ++j) {
      normed[i * 8 + j] = std::max(-1.0f, static_cast<float>((h[i * 8 + j] - mean) / std::sqrt(var + 1e-5)));
      total += normed[i * 8 + j];
    }
  }
  std::vector<float> sliced;
  for (int i = 0; i < 4; ++i)
    for (int j = 1; j < 8; ++j) sliced.push_back(normed[i * 8 + j] + y2[i * 8 + j]);
  expect_near_all(out.at(0).values<float>(), running_new, 1e-4f);
  expect_near_all(out.at(1).values<float>(), y2, 1e-6f);
  expect_near_all(out.at(2).values<float>(), {static_cast<float>(total)}, 1e-3f);
  expect_near_all(out.at(3).values<float>(), sliced, 1e-4f);
}

// A tiny Llama with sdpa attention: mask building (cumsum, index, and/le), rotary embeddings
// (cat of slices), GQA (expand + clone + view), RMSNorm, softmax.
TEST(TranslateFixtures, LlamaTranslatesVerifiesAndRuns) {
  pt2::Pt2Program p = pt2::read_pt2_file(fixture("llama.pt2"));
  TranslatedProgram t = translate(p);
  std::map<Op, int> counts = op_counts(t.graph);
  EXPECT_EQ(counts[Op::Input], 1);
  EXPECT_EQ(counts[Op::Matmul], 2 * (7 + 2) + 1);  // per layer q,k,v,o,gate,up,down + 2 bmm; lm_head
  EXPECT_EQ(counts[Op::Sigmoid], 2);                // silu per layer
  EXPECT_GE(counts[Op::Gather], 1);                 // embedding
  EXPECT_EQ(counts[Op::CumSum], 1);                 // the padding mask's positions
  EXPECT_EQ(t.outputs.size(), 1u);
  const auto weights = bind_weights(p);
  std::vector<testing::HostTensor> in = {
      testing::HostTensor::of<int64_t>(DType::I64, {1, 4}, std::vector<int64_t>{1, 5, 9, 3})};
  auto out = testing::run_reference(t.graph, in, weights);
  ASSERT_EQ(out.at(0).sizes, (std::vector<int64_t>{1, 4, 128}));
  const std::vector<float> logits = out.at(0).values<float>();
  // Eager's logits for this fixture: torch.export.load("llama.pt2").module()(tensor([[1, 5, 9, 3]]));
  // recompute them here if make_fixtures.py changes the model.
  expect_near_all({logits[0], logits[1], logits[2], logits[3]}, {0.0614484f, -0.2738650f, 0.1187079f, 0.0525730f}, 1e-5f);
  expect_near_all({logits[384], logits[385], logits[386], logits[387]},
                  {-0.1097230f, 0.1056531f, 0.0628236f, -0.0655491f}, 1e-5f);
  double abs_sum = 0;
  for (float v : logits) abs_sum += std::fabs(v);
  EXPECT_NEAR(abs_sum, 64.761589, 1e-3);
}

}  // namespace
}  // namespace luminal::translator

namespace luminal::translator {
namespace {

// sym_numel / sym_stride / sym_storage_offset: export usually folds them, but a program that
// keeps them gets the values eager computes: the numel of the shape, the program's own strides
// and storage offset (IR values have no storage of their own).
TEST(TranslateSymQueries, NumelStrideAndStorageOffsetComeFromTheProgram) {
  pt2::ExportedProgram program;
  pt2::TensorMeta meta;
  meta.dtype = pt2::ScalarType::Float;
  pt2::SymInt rows, three, one, five;
  rows.expr = pt2::SymExpr{"Symbol('s0', positive=True, integer=True)", 4};
  three.value = 3;
  one.value = 1;
  five.value = 5;
  meta.sizes = {rows, three};
  meta.strides = {three, one};
  meta.storage_offset = five;
  program.graph.tensor_values["x"] = meta;
  TranslationContext cx(program);
  ir::Node input;
  input.op = Op::Input;
  input.name = "x";
  input.shape = {Expr::symbol("s0"), Expr(int64_t{3})};
  cx.bind_tensor("x", cx.add(input));

  auto query = [&](const std::string& overload, std::vector<pt2::NamedArgument> extra) {
    pt2::Node node;
    node.name = "q";
    pt2::Argument self;
    self.kind = pt2::Argument::Kind::Tensor;
    self.tensors = {"x"};
    node.inputs = {{"self", self, pt2::ArgumentKind::Positional}};
    for (auto& a : extra) node.inputs.push_back(a);
    pt2::Argument out;
    out.kind = pt2::Argument::Kind::SymInt;
    out.syms = {pt2::SymArgument{std::string("result_") + std::to_string(node.inputs.size()) + overload}};
    node.outputs = {out};
    NodeArgs args(cx, node, overload);
    find_handler(overload)(args);
    return cx.sym_int(*out.syms[0].name);
  };
  pt2::Argument dim0;
  dim0.kind = pt2::Argument::Kind::Int;
  dim0.ints = {-2};
  EXPECT_EQ(query("aten::sym_numel.default", {}), Expr::symbol("s0") * Expr(int64_t{3}));
  EXPECT_EQ(query("aten::sym_stride.int", {{"dim", dim0, pt2::ArgumentKind::Positional}}), Expr(int64_t{3}));
  EXPECT_EQ(query("aten::sym_storage_offset.default", {}), Expr(int64_t{5}));
}

}  // namespace
}  // namespace luminal::translator
