#include "ir/view.h"

#include "common/error.h"

namespace luminal::ir {

namespace {
std::vector<Expr> contiguous_strides(const Shape& shape) {
  std::vector<Expr> strides(shape.size(), Expr(int64_t{1}));
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

// torch's computeStride (aten/src/ATen/TensorUtils.cpp) for fully static views: finds strides
// for new_shape that address the same elements, or nullopt.
std::optional<std::vector<Expr>> static_reshape_strides(const std::vector<int64_t>& old_shape,
                                                        const std::vector<int64_t>& old_strides,
                                                        const std::vector<int64_t>& new_shape) {
  std::vector<Expr> new_strides(new_shape.size(), Expr(int64_t{1}));
  if (old_shape.empty()) return new_strides;
  int64_t numel = 1;
  for (int64_t d : old_shape) numel *= d;
  if (numel == 0) return new_strides;
  int view_d = static_cast<int>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int tensor_d = static_cast<int>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    const bool chunk_ends = tensor_d == 0 || (old_shape[tensor_d - 1] != 1 &&
                                              old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      new_strides[view_d] = Expr(view_numel * chunk_base_stride);
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

std::optional<std::vector<int64_t>> constants(const std::vector<Expr>& exprs) {
  std::vector<int64_t> out;
  for (const Expr& e : exprs) {
    if (!e.is_constant()) return std::nullopt;
    out.push_back(e.constant_value());
  }
  return out;
}
}  // namespace

View::View(Shape shape, std::vector<Expr> strides, Expr offset)
    : shape_(std::move(shape)), strides_(std::move(strides)), offset_(std::move(offset)) {
  INTERNAL_CHECK(shape_.size() == strides_.size())
      << "view rank mismatch: shape " << shape_to_string(shape_) << " has " << strides_.size() << " strides";
}

View View::contiguous(const Shape& shape) { return View(shape, contiguous_strides(shape), Expr(int64_t{0})); }

bool View::is_contiguous() const {
  if (!(offset_.is_constant() && offset_.constant_value() == 0)) return false;
  Expr expected(int64_t{1});
  for (int i = static_cast<int>(rank()) - 1; i >= 0; --i) {
    if (!is_one(shape_[i]) && strides_[i] != expected) return false;
    expected = expected * shape_[i];
  }
  return true;
}

bool View::is_last_dim_vector() const {
  if (strides_.empty() || !is_one(strides_.back())) return false;
  for (size_t d = 0; d + 1 < strides_.size(); ++d)
    if (!(strides_[d] == Expr(int64_t{0})) && !is_one(shape_[d])) return false;
  return true;
}

View View::permute(const std::vector<int>& order) const {
  INTERNAL_CHECK(order.size() == rank()) << "permute of rank " << rank() << " with " << order.size() << " dims";
  Shape shape;
  std::vector<Expr> strides;
  for (int d : order) {
    INTERNAL_CHECK(d >= 0 && d < static_cast<int>(rank())) << "permute dim " << d << " out of range";
    shape.push_back(shape_[d]);
    strides.push_back(strides_[d]);
  }
  return View(shape, strides, offset_);
}

View View::expand(const Shape& new_shape) const {
  INTERNAL_CHECK(new_shape.size() >= rank()) << "expand to a lower rank";
  const size_t lead = new_shape.size() - rank();
  std::vector<Expr> strides(lead, Expr(int64_t{0}));
  for (size_t i = 0; i < rank(); ++i) {
    if (shape_[i] == new_shape[lead + i]) {
      strides.push_back(strides_[i]);
    } else {
      INTERNAL_CHECK(is_one(shape_[i])) << "expand of dim " << i << " with size " << shape_[i].to_string()
                                        << " to " << new_shape[lead + i].to_string();
      strides.push_back(Expr(int64_t{0}));
    }
  }
  return View(new_shape, strides, offset_);
}

View View::slice(int dim, const Expr& start, const Expr& end, int64_t step) const {
  INTERNAL_CHECK(step > 0) << "slice step must be positive";
  Shape shape = shape_;
  std::vector<Expr> strides = strides_;
  shape[dim] = max(Expr(int64_t{0}), floordiv(end - start + Expr(step - 1), Expr(step)));
  strides[dim] = strides_[dim] * Expr(step);
  return View(shape, strides, offset_ + start * strides_[dim]);
}

View View::select(int dim, const Expr& index) const {
  Shape shape = shape_;
  std::vector<Expr> strides = strides_;
  Expr offset = offset_ + index * strides_[dim];
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  return View(shape, strides, offset);
}

View View::unsqueeze(int dim) const {
  Shape shape = shape_;
  std::vector<Expr> strides = strides_;
  // The stride of a size-1 dim never matters; use the one a contiguous tensor would have.
  Expr stride = dim < static_cast<int>(rank()) ? strides_[dim] * shape_[dim] : Expr(int64_t{1});
  shape.insert(shape.begin() + dim, Expr(int64_t{1}));
  strides.insert(strides.begin() + dim, stride);
  return View(shape, strides, offset_);
}

View View::squeeze(int dim) const {
  INTERNAL_CHECK(is_one(shape_[dim])) << "squeeze of dim " << dim << " with size " << shape_[dim].to_string();
  Shape shape = shape_;
  std::vector<Expr> strides = strides_;
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  return View(shape, strides, offset_);
}

std::optional<View> View::reshape(const Shape& new_shape) const {
  // Dense row-major data (any offset) reshapes freely, symbolic dims included.
  View dense(shape_, strides_, Expr(int64_t{0}));
  if (dense.is_contiguous()) return View(new_shape, contiguous_strides(new_shape), offset_);
  auto old_shape = constants(shape_);
  auto old_strides = constants(strides_);
  auto target = constants(new_shape);
  if (!old_shape || !old_strides || !target) return std::nullopt;
  auto strides = static_reshape_strides(*old_shape, *old_strides, *target);
  if (!strides) return std::nullopt;
  return View(new_shape, *strides, offset_);
}

std::string View::to_string() const {
  std::string s = shape_to_string(shape_) + " strides " + shape_to_string(strides_);
  if (!(offset_.is_constant() && offset_.constant_value() == 0)) s += " offset " + offset_.to_string();
  return s;
}

std::optional<View> read_through(const View& read, const View& stored) {
  // A contiguous stored view is the buffer itself: the same elements in the same order.
  if (stored.is_contiguous()) return read;
  const Shape& inner = stored.shape();
  const std::vector<Expr> contiguous = contiguous_strides(inner);
  const std::optional<std::vector<int64_t>> sizes = constants(inner);
  // Where read's first element lies in the contiguous buffer, one coordinate per dim.
  std::vector<int64_t> start(inner.size(), 0);
  if (!is_zero(read.offset())) {
    if (!read.offset().is_constant() || !sizes) return std::nullopt;
    int64_t rest = read.offset().constant_value();
    for (size_t j = inner.size(); j-- > 0;) {
      if ((*sizes)[j] <= 0) return std::nullopt;
      start[j] = rest % (*sizes)[j];
      rest /= (*sizes)[j];
    }
    if (rest != 0) return std::nullopt;
  }
  // Each dim of read steps one coordinate of the buffer by a multiple of one: the dim j whose
  // contiguous stride c_j divides the step and lies in [c_j, c_j * size_j) (a split of dim j by a
  // reshape steps it by more than 1). Its last coordinate, over every read dim stepping it, must
  // stay inside dim j, or the step carries into the next dim and no stride says that. Symbolic
  // sizes allow only a step of c_j over the whole dim.
  std::vector<int64_t> last(start);
  std::vector<bool> whole(inner.size(), false);
  std::vector<Expr> strides(read.rank(), Expr(int64_t{0}));
  for (size_t i = 0; i < read.rank(); ++i) {
    const Expr& size = read.shape()[i];
    const Expr& step = read.strides()[i];
    if (is_one(size) || is_zero(step)) continue;  // one index, or the same element throughout
    if (sizes && size.is_constant() && step.is_constant()) {
      size_t j = 0;
      int64_t c = 1;
      for (; j < inner.size(); ++j) {
        c = contiguous[j].constant_value();
        if ((*sizes)[j] > 1 && c <= step.constant_value() && step.constant_value() < c * (*sizes)[j]) break;
      }
      if (j == inner.size() || step.constant_value() % c != 0) return std::nullopt;
      const int64_t m = step.constant_value() / c;
      last[j] += m * (size.constant_value() - 1);
      if (last[j] >= (*sizes)[j]) return std::nullopt;
      strides[i] = stored.strides()[j] * Expr(m);
      continue;
    }
    size_t j = 0;
    while (j < inner.size() && (whole[j] || is_one(inner[j]) || contiguous[j] != step)) ++j;
    if (j == inner.size() || start[j] != 0 || last[j] != 0 || size != inner[j]) return std::nullopt;
    whole[j] = true;
    strides[i] = stored.strides()[j];
  }
  Expr offset = stored.offset();
  for (size_t j = 0; j < inner.size(); ++j)
    if (start[j] != 0) offset = offset + Expr(start[j]) * stored.strides()[j];
  return View(read.shape(), strides, offset);
}

bool operator==(const View& a, const View& b) {
  return a.shape_ == b.shape_ && a.strides_ == b.strides_ && a.offset_ == b.offset_;
}

void View::collect_symbols(std::vector<std::string>& out) const {
  for (const Expr& e : shape_) e.collect_symbols(out);
  for (const Expr& e : strides_) e.collect_symbols(out);
  offset_.collect_symbols(out);
}

}  // namespace luminal::ir
