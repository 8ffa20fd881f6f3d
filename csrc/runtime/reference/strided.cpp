#include "runtime/reference/strided.h"

namespace luminal::runtime::reference {

Layout evaluate_layout(const ir::View& view, const ir::SymbolBindings& bindings) {
  Layout layout;
  layout.shape = ir::evaluate_shape(view.shape(), bindings);
  layout.strides = ir::evaluate_shape(view.strides(), bindings);
  layout.offset = view.offset().evaluate(bindings);
  return layout;
}

Layout contiguous_layout(const std::vector<int64_t>& shape) {
  Layout layout;
  layout.shape = shape;
  layout.strides.assign(shape.size(), 1);
  for (size_t d = shape.size(); d > 1; --d) layout.strides[d - 2] = layout.strides[d - 1] * shape[d - 1];
  return layout;
}

bool addresses_within(const Layout& layout, int64_t count) {
  if (element_count(layout.shape) == 0) return true;
  int64_t lowest = layout.offset;
  int64_t highest = layout.offset;
  for (size_t d = 0; d < layout.shape.size(); ++d) {
    const int64_t span = layout.strides[d] * (layout.shape[d] - 1);
    (span < 0 ? lowest : highest) += span;
  }
  return lowest >= 0 && highest < count;
}

}  // namespace luminal::runtime::reference
