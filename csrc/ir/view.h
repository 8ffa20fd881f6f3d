// A View says how a consumer reads a producer's contiguous output buffer: a shape, a stride per
// dim and an offset, all in elements and all symbolic. Movement ops (permute, expand, slice,
// select, unsqueeze, squeeze, reshape when expressible) only build a new View, so they copy
// nothing; a kernel reads through the view.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace luminal::ir {

class View {
 public:
  View() = default;
  View(Shape shape, std::vector<Expr> strides, Expr offset);
  // Row-major view of a buffer of this shape.
  static View contiguous(const Shape& shape);

  const Shape& shape() const { return shape_; }
  const std::vector<Expr>& strides() const { return strides_; }
  const Expr& offset() const { return offset_; }
  size_t rank() const { return shape_.size(); }
  bool is_contiguous() const;  // row-major, offset 0 (size-1 dims' strides ignored)
  // One vector along the last dim, broadcast: unit stride there, stride 0 (or size 1) elsewhere.
  bool is_last_dim_vector() const;

  // All dims are already normalised (non-negative, in range); the translator wraps negatives.
  View permute(const std::vector<int>& order) const;
  // Broadcast size-1 dims to new sizes (stride 0) and prepend new leading dims.
  View expand(const Shape& new_shape) const;
  // Elements start, start+step, ... below end along dim (start/end already clamped).
  View slice(int dim, const Expr& start, const Expr& end, int64_t step) const;
  // Drops dim, fixing it at index (already wrapped non-negative).
  View select(int dim, const Expr& index) const;
  View unsqueeze(int dim) const;
  View squeeze(int dim) const;  // dim must have size 1
  // A view of the same elements with a new shape, or nullopt when the strides cannot express
  // it (then the caller materialises a contiguous copy first, as torch.reshape does).
  std::optional<View> reshape(const Shape& new_shape) const;

  std::string to_string() const;
  // Appends the symbols of the shape, strides and offset not already in `out`.
  void collect_symbols(std::vector<std::string>& out) const;
  friend bool operator==(const View& a, const View& b);

 private:
  Shape shape_;
  std::vector<Expr> strides_;
  Expr offset_;
};

// The view of `stored`'s buffer that reads what `read` reads from a contiguous buffer holding
// stored's elements (read is a view of shape stored.shape()'s row-major buffer): an elementwise
// op through `stored` followed by `read`, as one read of stored's source. Nullopt unless each
// dim of `read` steps along one dim of that buffer within its extent (a permute, expand, slice,
// select or split of it; not a reshape that merges dims), with an offset of 0 or constant over a
// static shape.
std::optional<View> read_through(const View& read, const View& stored);

}  // namespace luminal::ir
