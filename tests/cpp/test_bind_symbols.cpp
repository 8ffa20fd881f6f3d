#include "ir/bind_symbols.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "ir_test_builder.h"

namespace luminal::testing {
namespace {

const ir::Expr s0 = ir::Expr::symbol("s0");
const ir::Expr s1 = ir::Expr::symbol("s1");

std::string user_error_of(const ir::Graph& graph, const std::vector<std::vector<int64_t>>& shapes) {
  try {
    ir::bind_symbols(graph, shapes);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Expr, IsMultipleOfWhatItsFormShows) {
  // A product with a factor that is a multiple, sums of multiples; a bare symbol, a sum with one
  // term that is not, and a floor division are not shown to be (true for some values only).
  EXPECT_TRUE(ir::is_multiple_of(ir::Expr(int64_t{128}), 64));
  EXPECT_TRUE(ir::is_multiple_of(ir::Expr(int64_t{-64}), 64));
  EXPECT_TRUE(ir::is_multiple_of(ir::Expr(int64_t{0}), 64));
  EXPECT_TRUE(ir::is_multiple_of(ir::Expr(int64_t{64}) * s0, 64));
  EXPECT_TRUE(ir::is_multiple_of(s1 * (ir::Expr(int64_t{128}) * s0), 64));
  EXPECT_TRUE(ir::is_multiple_of(ir::Expr(int64_t{64}) * s0 + ir::Expr(int64_t{192}), 64));
  EXPECT_FALSE(ir::is_multiple_of(ir::Expr(int64_t{96}), 64));
  EXPECT_FALSE(ir::is_multiple_of(s0, 64));
  EXPECT_FALSE(ir::is_multiple_of(ir::Expr(int64_t{32}) * s0, 64));
  EXPECT_FALSE(ir::is_multiple_of(ir::Expr(int64_t{64}) * s0 + ir::Expr(int64_t{1}), 64));
  EXPECT_FALSE(ir::is_multiple_of(floordiv(ir::Expr(int64_t{128}) * s0, ir::Expr(int64_t{2})), 64));
}

TEST(BindSymbols, BindsBareSymbolsInInputOrder) {
  IrTestBuilder b;
  b.input("x", DType::F32, {s0, 4});
  b.input("y", DType::F32, {s1, s0 * 2});
  const ir::SymbolBindings bindings = ir::bind_symbols(b.graph, {{3, 4}, {5, 6}});
  EXPECT_EQ(bindings.at("s0"), 3);
  EXPECT_EQ(bindings.at("s1"), 5);
}

TEST(BindSymbols, StaticGraphBindsNothing) {
  IrTestBuilder b;
  b.input("x", DType::F32, {2, 3});
  EXPECT_TRUE(ir::bind_symbols(b.graph, {{2, 3}}).empty());
}

TEST(BindSymbols, WrongStaticDimNamesInputAndBothShapes) {
  IrTestBuilder b;
  b.input("x", DType::F32, {s0, 4});
  const std::string message = user_error_of(b.graph, {{3, 5}});
  EXPECT_NE(message.find("input 'x' has shape [3, 5] but the compiled graph expects [s0, 4]"), std::string::npos)
      << message;
}

TEST(BindSymbols, ConflictingSymbolValuesAreReported) {
  IrTestBuilder b;
  b.input("x", DType::F32, {s0});
  b.input("y", DType::F32, {s0});
  const std::string message = user_error_of(b.graph, {{3}, {4}});
  EXPECT_NE(message.find("input 'y' has shape [4]"), std::string::npos) << message;
  EXPECT_NE(message.find("s0=3"), std::string::npos) << message;
}

TEST(BindSymbols, DerivedDimIsChecked) {
  IrTestBuilder b;
  b.input("x", DType::F32, {s0});
  b.input("y", DType::F32, {s0 + 1});
  EXPECT_NO_THROW(ir::bind_symbols(b.graph, {{3}, {4}}));
  EXPECT_NE(user_error_of(b.graph, {{3}, {3}}).find("input 'y'"), std::string::npos);
}

TEST(BindSymbols, WrongRankAndCountAreUserErrors) {
  IrTestBuilder b;
  b.input("x", DType::F32, {s0, 4});
  EXPECT_NE(user_error_of(b.graph, {{3}}).find("input 'x' has shape [3]"), std::string::npos);
  EXPECT_NE(user_error_of(b.graph, {}).find("takes 1 inputs"), std::string::npos);
  EXPECT_NE(user_error_of(b.graph, {{-1, 4}}).find("negative"), std::string::npos);
}

TEST(BindSymbols, SymbolBoundByNoInputDimIsAUserError) {
  IrTestBuilder b;
  b.input("x", DType::F32, {s0 * 2});
  EXPECT_THROW(ir::bind_symbols(b.graph, {{4}}), UserError);
}

}  // namespace
}  // namespace luminal::testing
