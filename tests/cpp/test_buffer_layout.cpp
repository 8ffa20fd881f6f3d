// The buffer checks both CPU runtimes share (csrc/runtime/buffer_layout.h).
#include <gtest/gtest.h>

#include <functional>

#include "common/error.h"
#include "ir_test_builder.h"
#include "runtime/buffer_layout.h"

namespace luminal::testing {
namespace {

using runtime::BufferRef;

BufferRef buffer(void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides, DType dtype = DType::F32) {
  return BufferRef{data, dtype, std::move(sizes), std::move(strides)};
}

TEST(BufferLayout, DenseIgnoresTheStridesOfSizeOneDims) {
  float data[12] = {};
  EXPECT_TRUE(runtime::is_dense(buffer(data, {3, 4}, {4, 1})));
  EXPECT_TRUE(runtime::is_dense(buffer(data, {1, 3, 4}, {999, 4, 1})));  // torch keeps any stride on a size-1 dim
  EXPECT_TRUE(runtime::is_dense(buffer(data, {}, {})));
  EXPECT_TRUE(runtime::is_dense(buffer(data, {0, 4}, {7, 2})));  // empty: nothing to address
  EXPECT_FALSE(runtime::is_dense(buffer(data, {4, 3}, {1, 4})));  // a transpose
  EXPECT_FALSE(runtime::is_dense(buffer(data, {3, 2}, {4, 1})));  // a column slice
}

TEST(BufferLayout, SpansAndOverlaps) {
  float data[16] = {};
  const BufferRef rows_0_1 = buffer(data, {2, 4}, {4, 1});
  const BufferRef rows_2_3 = buffer(data + 8, {2, 4}, {4, 1});
  const BufferRef column = buffer(data + 3, {4}, {4});
  EXPECT_EQ(runtime::span_bytes(rows_0_1), 32);
  EXPECT_EQ(runtime::span_bytes(column), 13 * 4);
  EXPECT_EQ(runtime::span_bytes(buffer(data, {0, 4}, {4, 1})), 0);
  EXPECT_FALSE(runtime::overlaps(rows_0_1, rows_2_3));
  EXPECT_TRUE(runtime::overlaps(rows_0_1, column));
  EXPECT_TRUE(runtime::overlaps(rows_2_3, column));
  EXPECT_EQ(runtime::element_count({2, 3, 4}), 24);
  EXPECT_EQ(runtime::byte_count({2, 3}, DType::BF16), 12);
  EXPECT_EQ(runtime::sizes_text({2, 3}), "[2, 3]");
}

TEST(BufferLayout, ChecksNameTheBufferAndBothValues) {
  float data[6] = {};
  EXPECT_NE(user_error_of([&] { runtime::check_buffer("input", "x", buffer(data, {6}, {1}, DType::I64), DType::F32); })
                .find("input 'x' is i64 but the compiled graph expects f32"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { runtime::check_buffer("input", "x", buffer(data, {2, 3}, {1}), DType::F32); })
                .find("input 'x' has 2 sizes but 1 strides"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { runtime::check_buffer("weight", "w", buffer(nullptr, {2}, {1}), DType::F32); })
                .find("weight 'w' has no data"),
            std::string::npos);

  IrTestBuilder b;
  auto w = b.weight("w", DType::F32, {2, 3});
  b.output(b.unary(Op::Neg, w));
  const ir::Node& weight = b.graph.node(w.node);
  runtime::check_weight(weight, buffer(data, {2, 3}, {3, 1}));
  EXPECT_NE(user_error_of([&] { runtime::check_weight(weight, buffer(data, {3, 2}, {2, 1})); })
                .find("weight 'w' has shape [3, 2] but the compiled graph expects [2, 3]"),
            std::string::npos);

  const runtime::OutputShapes produced{std::vector<int64_t>{2, 3}};
  runtime::check_outputs(b.graph, {buffer(data, {2, 3}, {3, 1})}, produced);
  EXPECT_NE(user_error_of([&] { runtime::check_outputs(b.graph, {}, produced); })
                .find("the compiled graph has 1 outputs but 0 were passed"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { runtime::check_outputs(b.graph, {buffer(data, {3, 2}, {2, 1})}, produced); })
                .find("output 0 has shape [3, 2] but this call produces [2, 3]"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { runtime::check_outputs(b.graph, {buffer(data, {2, 3}, {1, 2})}, produced); })
                .find("output 0 must be a contiguous buffer"),
            std::string::npos);
  // An output sized by tensor data is allocated during the run: the caller passes no buffer.
  runtime::check_outputs(b.graph, {runtime::BufferRef{}}, {std::nullopt});
  EXPECT_NE(user_error_of([&] { runtime::check_outputs(b.graph, {buffer(data, {2, 3}, {3, 1})}, {std::nullopt}); })
                .find("output 0's shape depends on tensor data"),
            std::string::npos);
}

}  // namespace
}  // namespace luminal::testing
