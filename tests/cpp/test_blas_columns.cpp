// BLAS products computed a block of output columns at a time (gemm.h ColumnSplit), as the cpu
// runtime runs them on its threads: every layout BLAS reads in place (b as [K, N] or as the
// transpose of [N, K], one row of a as a GEMV, batches) gives the unsplit call's values, each
// column once.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/cpu/gemm.h"

namespace luminal::testing {
namespace {

using runtime::cpu::blas_matmul;
using runtime::cpu::ColumnSplit;
using runtime::cpu::StridedLayout;

// Blocks of `block` columns, last first (an order no BLAS call of the whole would take), each
// column's calls counted.
ColumnSplit blocks_of(int64_t block, std::vector<int>& calls_per_column) {
  return [block, &calls_per_column](int64_t, int64_t n, int64_t, const std::function<void(int64_t, int64_t)>& columns) {
    calls_per_column.assign(static_cast<size_t>(n), 0);
    for (int64_t begin = (n - 1) / block * block; begin >= 0; begin -= block) {
      const int64_t end = std::min(n, begin + block);
      for (int64_t c = begin; c < end; ++c) ++calls_per_column[static_cast<size_t>(c)];
      columns(begin, end);
    }
  };
}

struct Case {
  std::string name;
  int64_t batch, m, k, n;
  bool b_transposed;  // b's memory is [N, K] (a Linear's weight)
};

TEST(BlasColumns, BlocksOfColumnsGiveTheWholeProduct) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const std::vector<Case> cases = {{"gemm [K, N]", 1, 7, 9, 50, false}, {"gemm [N, K]", 1, 7, 9, 50, true},
                                   {"gemv [K, N]", 1, 1, 33, 70, false}, {"gemv [N, K]", 1, 1, 33, 70, true},
                                   {"batched", 3, 5, 4, 37, false},      {"batched gemv [N, K]", 2, 1, 8, 40, true}};
  for (const Case& c : cases) {
    std::vector<float> a(static_cast<size_t>(c.batch * c.m * c.k)), b(static_cast<size_t>(c.batch * c.k * c.n));
    for (float& v : a) v = value(rng);
    for (float& v : b) v = value(rng);
    const StridedLayout al{{c.batch, c.m, c.k}, {c.m * c.k, c.k, 1}, 0};
    const StridedLayout bl = c.b_transposed ? StridedLayout{{c.batch, c.k, c.n}, {c.k * c.n, 1, c.k}, 0}
                                            : StridedLayout{{c.batch, c.k, c.n}, {c.k * c.n, c.n, 1}, 0};
    std::vector<float> whole(static_cast<size_t>(c.batch * c.m * c.n)), split(whole.size(), -7.0f);
    blas_matmul(ir::DType::F32, a.data(), al, b.data(), bl, whole.data());
    std::vector<int> calls;
    blas_matmul(ir::DType::F32, a.data(), al, b.data(), bl, split.data(), blocks_of(16, calls));
    EXPECT_EQ(calls, std::vector<int>(static_cast<size_t>(c.n), 1)) << c.name;
    for (size_t i = 0; i < whole.size(); ++i) ASSERT_FLOAT_EQ(split[i], whole[i]) << c.name << " element " << i;
  }
}

}  // namespace
}  // namespace luminal::testing
