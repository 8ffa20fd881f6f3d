// Concrete strided layouts and row-major index iteration for the reference runtime.
//
// A View's symbolic shape, strides and offset are evaluated once per run into a Layout; the
// loops below then walk element offsets incrementally (an odometer), never re-evaluating an
// expression per element.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/expr.h"
#include "ir/view.h"
#include "runtime/buffer_layout.h"

namespace luminal::runtime::reference {

struct Layout {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // in elements
};

Layout evaluate_layout(const ir::View& view, const ir::SymbolBindings& bindings);
Layout contiguous_layout(const std::vector<int64_t>& shape);
// True when every element the layout addresses lies in [0, count): a malformed view must raise
// an error, not read outside its producer's buffer.
bool addresses_within(const Layout& layout, int64_t count);

// Calls visit(offsets) for every index of `shape` in row-major order, where offsets[i] is the
// element offset of that index in layouts[i] (whose strides have shape's rank).
template <size_t N, typename Visit>
void for_each_offset(const std::vector<int64_t>& shape, const std::array<const Layout*, N>& layouts, Visit&& visit) {
  if (element_count(shape) == 0) return;
  const size_t rank = shape.size();
  std::array<int64_t, N> offsets;
  for (size_t i = 0; i < N; ++i) offsets[i] = layouts[i]->offset;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    visit(offsets);
    size_t d = rank;
    while (true) {  // advance the odometer; done once every dim has wrapped (at once for rank 0)
      if (d == 0) return;
      --d;
      ++index[d];
      for (size_t i = 0; i < N; ++i) offsets[i] += layouts[i]->strides[d];
      if (index[d] < shape[d]) break;
      for (size_t i = 0; i < N; ++i) offsets[i] -= layouts[i]->strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

// Copies the elements `source` addresses (from `source_data`) into a contiguous buffer.
inline void copy_to_contiguous(const std::byte* source_data, const Layout& source, size_t element_size,
                               std::byte* destination) {
  size_t written = 0;
  for_each_offset<1>(source.shape, {&source}, [&](const std::array<int64_t, 1>& offset) {
    std::memcpy(destination + written * element_size, source_data + offset[0] * static_cast<int64_t>(element_size),
                element_size);
    ++written;
  });
}

}  // namespace luminal::runtime::reference
