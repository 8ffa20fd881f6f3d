// ir::View: read_through, which composes a reader's view of an elementwise op's contiguous result
// with that op's view of its input (an attention reading a bf16 KV cache's slice through its cast).
#include <gtest/gtest.h>

#include "ir/view.h"

namespace luminal::ir {
namespace {

// The source element each index of `view` reads, for a static view.
int64_t address(const View& view, const std::vector<int64_t>& index) {
  int64_t at = view.offset().constant_value();
  for (size_t d = 0; d < index.size(); ++d) at += index[d] * view.strides()[d].constant_value();
  return at;
}

// Every element `read` reads from a contiguous copy of `stored`'s elements, against what the
// composed view reads from stored's source directly.
void expect_same_elements(const View& read, const View& stored, const View& composed) {
  ASSERT_EQ(composed.shape(), read.shape());
  std::vector<int64_t> index(read.rank(), 0);
  while (true) {
    // The copy's element: its index in stored's shape, then stored's source address of it.
    int64_t flat = address(read, index);
    std::vector<int64_t> inner(stored.rank());
    for (size_t d = stored.rank(); d-- > 0;) {
      const int64_t size = stored.shape()[d].constant_value();
      inner[d] = flat % size;
      flat /= size;
    }
    EXPECT_EQ(address(composed, index), address(stored, inner)) << read.to_string() << " of " << stored.to_string();
    size_t d = read.rank();
    while (d > 0 && ++index[d - 1] == read.shape()[d - 1].constant_value()) index[--d] = 0;
    if (d == 0) break;
  }
}

TEST(View, ReadThroughComposesASliceWithAPermuteAndAnExpand) {
  // A StaticCache [2 heads, 16 slots, 8 dims], its first 5 slots cast, read transposed and
  // repeated over 3 query heads per KV head: [2, 3, 8, 5].
  const View cache = View::contiguous({2, 16, 8});
  const View filled = cache.slice(1, Expr(0), Expr(5), 1);
  const View read = View::contiguous({2, 5, 8}).permute({0, 2, 1}).unsqueeze(1).expand({2, 3, 8, 5});
  const std::optional<View> composed = read_through(read, filled);
  ASSERT_TRUE(composed.has_value());
  EXPECT_EQ(composed->to_string(), "[2, 3, 8, 5] strides [128, 0, 1, 8]");
  expect_same_elements(read, filled, *composed);
}

TEST(View, ReadThroughCarriesAnOffsetIntoTheStoredDims) {
  // stored: rows 3..9 of a [10, 6] source, columns 1..5; read: rows 2..5 and column 3 onwards of
  // its contiguous [7, 5] copy (an offset of 2 * 5 + 3).
  const View stored = View::contiguous({10, 6}).slice(0, Expr(3), Expr(10), 1).slice(1, Expr(1), Expr(6), 1);
  const View read = View::contiguous({7, 5}).slice(0, Expr(2), Expr(6), 1).slice(1, Expr(3), Expr(5), 1);
  const std::optional<View> composed = read_through(read, stored);
  ASSERT_TRUE(composed.has_value());
  expect_same_elements(read, stored, *composed);
  // A select fixes a dim through the offset too.
  const View row = View::contiguous({7, 5}).select(0, Expr(4));
  const std::optional<View> selected = read_through(row, stored);
  ASSERT_TRUE(selected.has_value());
  expect_same_elements(row, stored, *selected);
}

TEST(View, ReadThroughSplitsAndStepsAlongOneStoredDim) {
  const View stored = View::contiguous({4, 16, 8}).permute({1, 0, 2});  // [16, 4, 8], not contiguous
  // Splitting the copy's first dim ([2, 8, 4, 8], as a query's heads split into KV groups) and
  // taking every other element of its last.
  for (const View& read : {*View::contiguous({16, 4, 8}).reshape({2, 8, 4, 8}),
                           View::contiguous({16, 4, 8}).slice(2, Expr(0), Expr(8), 2)}) {
    const std::optional<View> composed = read_through(read, stored);
    ASSERT_TRUE(composed.has_value()) << read.to_string();
    expect_same_elements(read, stored, *composed);
  }
  // A contiguous stored view is its buffer: the read as it is.
  EXPECT_EQ(read_through(View::contiguous({4, 2, 2, 8}), View::contiguous({4, 4, 8})), View::contiguous({4, 2, 2, 8}));
}

TEST(View, ReadThroughRefusesWhatStridesCannotSay) {
  const View stored = View::contiguous({4, 16, 8}).permute({1, 0, 2});
  // Merging two dims of the copy ([16, 32]) walks the copy's order, which stored's strides do
  // not follow.
  EXPECT_FALSE(read_through(*View::contiguous({16, 4, 8}).reshape({16, 32}), stored).has_value());
  // A symbolic offset cannot be split into coordinates.
  const View shifted({16, 4, 8}, {32, 8, 1}, Expr::symbol("s0"));
  EXPECT_FALSE(read_through(shifted, stored).has_value());
}

TEST(View, ReadThroughASymbolicCacheSlice) {
  // A cache of s1 slots, its first s0 read transposed: symbolic sizes compose where a read dim
  // steps one whole stored dim.
  const Expr s0 = Expr::symbol("s0"), s1 = Expr::symbol("s1");
  const View filled = View::contiguous({2, s1, 8}).slice(1, Expr(0), s0, 1);
  const View read = View::contiguous({2, filled.shape()[1], 8}).permute({0, 2, 1});
  const std::optional<View> composed = read_through(read, filled);
  ASSERT_TRUE(composed.has_value());
  EXPECT_EQ(composed->strides()[1], Expr(1));
  EXPECT_EQ(composed->strides()[2], Expr(8));
  EXPECT_EQ(composed->strides()[0], filled.strides()[0]);
  // Half of it cannot be proven to stay inside the dim.
  const View half = View::contiguous({2, filled.shape()[1], 8}).slice(1, Expr(0), Expr(3), 1);
  EXPECT_FALSE(read_through(half, filled).has_value());
}

}  // namespace
}  // namespace luminal::ir
