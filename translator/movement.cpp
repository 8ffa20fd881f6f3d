// Movement and copy ops. Views (permute, expand, slice, select, unsqueeze, squeeze, reshape when
// the strides allow) only build a new View on the edge; cat and dtype conversions add nodes.
// IR values are immutable, so alias/clone/copy need no copy of their own.
#include <algorithm>

#include "common/error.h"
#include "translator/handlers.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;

namespace {

std::vector<int> int_dims(NodeArgs& args, const std::string& name) {
  std::vector<int> dims;
  for (int64_t d : args.integers(name)) dims.push_back(static_cast<int>(d));
  return dims;
}

// The pieces of split_with_sizes / split.Tensor: consecutive slices along dim.
std::vector<Tensor> split_by(const Tensor& t, int dim, const std::vector<Expr>& sizes) {
  std::vector<Tensor> pieces;
  Expr start(int64_t{0});
  for (const Expr& size : sizes) {
    pieces.push_back(slice(t, dim, start, start + size, 1));
    start = start + size;
  }
  return pieces;
}


// Up to this many pieces, cat selects each element's piece in place (selected_concat); beyond,
// every element would load from every piece, and scattering each piece once is cheaper.
constexpr size_t kMaxSelectedPieces = 4;

// gather(f(x)) is f(gather(x)) for a unary elementwise f. Reading f's operand at the gathered
// positions lets f fuse with the Gather (rope's -x[..., half:]), whose data must otherwise be a
// materialised buffer.
Tensor gather_through_unary(TranslationContext& cx, Tensor data, int dim, const Tensor& index) {
  std::vector<ir::Node> applied;  // outermost first
  while (true) {
    const ir::Node& node = cx.graph().node(data.ref.node);
    const bool reads_whole_node = data.ref.view.is_contiguous() && data.shape() == node.shape;
    if (!reads_whole_node || !ir::op_has(node.op, ir::kElementwise) || !ir::op_has(node.op, ir::kUnary)) break;
    applied.push_back(node);
    data = Tensor{node.inputs[0], cx.graph().node(node.inputs[0].node).dtype};
  }
  Tensor out = gather(cx, data, dim, index);
  for (auto it = applied.rbegin(); it != applied.rend(); ++it) {
    ir::Node n = *it;
    n.shape = out.shape();
    n.inputs = {out.ref};
    out = cx.add(std::move(n));
  }
  return out;
}

// cat as an elementwise select: out[.., p, ..] = piece k at p - offset_k for the k whose range
// holds p. Each piece is read by a Gather whose position is clamped into the piece, so that the
// pieces not selected are read in bounds, and the whole cat fuses into its consumer (rotate_half
// into rope's multiply-add) instead of scattering into a zeroed buffer. The positions are an
// Iota over the whole result, so that their arithmetic fuses too rather than being read through
// a broadcast. Needs every piece's length along dim static and non-zero: a clamp into an empty
// piece has no position to read.
Tensor selected_concat(TranslationContext& cx, const std::vector<Tensor>& pieces, int dim, DType dtype,
                       const ir::Shape& shape) {
  const Tensor positions = iota(cx, shape, dim, DType::I64);
  const auto position_constant = [&](int64_t v) { return constant(cx, ir::Scalar::of_int(v), DType::I64); };
  const int64_t total = shape[dim].constant_value();
  Tensor out;
  int64_t end = total;
  for (size_t k = pieces.size(); k-- > 0;) {
    const Tensor& piece = pieces[k];
    const int64_t length = piece.shape()[dim].constant_value();
    const int64_t offset = end - length;
    Tensor local = positions;
    if (offset > 0) {
      local = binary(cx, ir::Op::Sub, local, position_constant(offset));
      local = binary(cx, ir::Op::Max, local, position_constant(0));
    }
    if (end < total) local = binary(cx, ir::Op::Min, local, position_constant(length - 1));
    const Tensor selected = gather_through_unary(cx, cast(cx, piece, dtype), dim, local);
    out = k + 1 == pieces.size()
              ? selected
              : where(cx, binary(cx, ir::Op::Lt, positions, position_constant(end)), selected, out);
    end = offset;
  }
  return out;
}

// torch.cat of same-rank tensors along dim, promoted to their common dtype.
Tensor concat(TranslationContext& cx, const std::vector<Tensor>& inputs, int dim) {
  const DType dtype = result_type(inputs, {});
  if (inputs.size() == 1) return cast(cx, inputs[0], dtype);
  ir::Shape shape = inputs[0].shape();
  Expr total(int64_t{0});
  bool lengths_static = true;
  for (const Tensor& t : inputs) {
    USER_CHECK(t.rank() == inputs[0].rank()) << "cat of tensors of rank " << inputs[0].rank() << " and " << t.rank();
    total = total + t.shape()[dim];
    const Expr& length = t.shape()[dim];
    lengths_static = lengths_static && length.is_constant() && length.constant_value() > 0;
  }
  shape[dim] = total;
  if (lengths_static && inputs.size() <= kMaxSelectedPieces) return selected_concat(cx, inputs, dim, dtype, shape);
  Tensor out = constant(cx, ir::Scalar::of_int(0), dtype, shape);
  Expr offset(int64_t{0});
  for (const Tensor& t : inputs) {
    const Expr& n = t.shape()[dim];
    if (!(n.is_constant() && n.constant_value() == 0)) {
      Tensor positions = binary(cx, ir::Op::Add, iota(cx, n, DType::I64), size_value(cx, offset, DType::I64));
      for (int d = 0; d < t.rank(); ++d)
        if (d != dim) positions = unsqueeze(positions, d);
      out = scatter(cx, out, dim, expand(positions, t.shape()), cast(cx, t, dtype), /*accumulate=*/false);
    }
    offset = offset + n;
  }
  return out;
}

// Requires a static size (flip, pads): these ops index with constants.
int64_t static_size(const Tensor& t, int dim, const char* op) {
  const Expr& size = t.shape()[dim];
  UNSUPPORTED_CHECK(size.is_constant()) << op << " of dim " << dim << " with the symbolic size " << size.to_string();
  return size.constant_value();
}
}  // namespace

void translate_view(NodeArgs& args) {
  args.set_output(0, reshape(args.cx(), args.tensor("self"), args.sym_ints("size")));
}

void translate_reshape(NodeArgs& args) {
  args.set_output(0, reshape(args.cx(), args.tensor("self"), args.sym_ints("shape")));
}

void translate_permute(NodeArgs& args) { args.set_output(0, permute(args.tensor("self"), int_dims(args, "dims"))); }

void translate_expand(NodeArgs& args) { args.set_output(0, expand(args.tensor("self"), args.sym_ints("size"))); }

void translate_slice_tensor(NodeArgs& args) {
  Tensor self = args.tensor("self");
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  args.set_output(0, slice(self, dim, args.optional_sym_int("start"), args.optional_sym_int("end"), args.integer("step")));
}

void translate_select_int(NodeArgs& args) {
  Tensor self = args.tensor("self");
  args.set_output(0, select(self, wrap_dim(args.integer("dim"), self.rank()), args.sym_int("index")));
}

void translate_unsqueeze(NodeArgs& args) {
  Tensor self = args.tensor("self");
  args.set_output(0, unsqueeze(self, wrap_dim(args.integer("dim"), self.rank() + 1)));
}

void translate_squeeze(NodeArgs& args) {
  Tensor out = args.tensor("self");
  for (int d = out.rank() - 1; d >= 0; --d) out = squeeze(out, d);
  args.set_output(0, out);
}

void translate_squeeze_dim(NodeArgs& args) {
  Tensor self = args.tensor("self");
  args.set_output(0, squeeze(self, wrap_dim(args.integer("dim"), self.rank())));
}

void translate_squeeze_dims(NodeArgs& args) {
  Tensor out = args.tensor("self");
  std::vector<int> dims;
  for (int d : int_dims(args, "dim")) dims.push_back(wrap_dim(d, out.rank()));
  std::sort(dims.rbegin(), dims.rend());
  for (int d : dims) out = squeeze(out, d);
  args.set_output(0, out);
}

void translate_t(NodeArgs& args) {
  Tensor self = args.tensor("self");
  USER_CHECK(self.rank() <= 2) << "t() expects a tensor of rank <= 2, got rank " << self.rank();
  args.set_output(0, self.rank() < 2 ? self : transpose(self, 0, 1));
}

void translate_transpose_int(NodeArgs& args) {
  Tensor self = args.tensor("self");
  args.set_output(0, transpose(self, static_cast<int>(args.integer("dim0")), static_cast<int>(args.integer("dim1"))));
}

void translate_alias(NodeArgs& args) { args.set_output(0, args.tensor("self")); }

// A contiguous clone makes the following view (GQA's expand -> clone -> view) a plain view.
void translate_clone(NodeArgs& args) { args.set_output(0, contiguous(args.cx(), args.tensor("self"))); }

// copy(self, src): src converted to self's dtype and broadcast to its shape (StaticCache's copy_).
void translate_copy(NodeArgs& args) {
  Tensor self = args.tensor("self");
  Tensor src = cast(args.cx(), args.tensor("src"), self.dtype);
  args.set_output(0, broadcast_to(src, self.shape()));
}

// .to(dtype) / .float(): a cast. A device move inside the graph would mean a program spanning
// devices, which one runtime cannot run; the program's tensor_values say where `self` lives.
void translate_to_copy(NodeArgs& args) {
  args.require_strided_layout();
  Tensor self = args.tensor("self");
  if (std::optional<pt2::Device> device = args.device("device")) {
    const auto& values = args.cx().program().graph.tensor_values;
    auto it = values.find(args.raw("self").tensors.at(0));
    const std::string from = it == values.end() ? "cpu" : it->second.device.type;
    USER_CHECK(device->type == from) << "_to_copy moves a tensor from " << from << " to " << device->type
                                     << "; a compiled graph must stay on one device";
  }
  std::optional<DType> dtype = args.dtype("dtype");
  args.set_output(0, cast(args.cx(), self, dtype.value_or(self.dtype)));
}

// prims::convert_element_type(a, dtype): a cast. AOTAutograd's graphs keep it where a
// decomposition with symbolic sizes wrote it (Llama's RMSNorm under dynamic=True).
void translate_convert_element_type(NodeArgs& args) {
  Tensor a = args.tensor("a");
  std::optional<DType> dtype = args.dtype("dtype");
  USER_CHECK(dtype.has_value()) << "convert_element_type without a dtype";
  args.set_output(0, cast(args.cx(), a, *dtype));
}

// cat = scatter each input into its range of the result along dim. Inputs promote to a common
// dtype; legacy empty 1-d inputs ([0]) are skipped, as torch does.
// Legacy 1-d empty tensors ([0]) are skipped whatever the others' rank, as torch does; they
// still take part in dtype promotion, so the result takes the program's dtype.
void translate_cat(NodeArgs& args) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : args.tensors("tensors")) {
    const bool legacy_empty = t.rank() == 1 && t.shape()[0].is_constant() && t.shape()[0].constant_value() == 0;
    if (!legacy_empty) inputs.push_back(t);
  }
  const DType dtype = args.output_dtype(0);
  if (inputs.empty())
    return args.set_output(0, constant(args.cx(), ir::Scalar::of_int(0), dtype, {Expr(int64_t{0})}));
  const int dim = wrap_dim(args.integer("dim"), inputs[0].rank());
  args.set_output(0, cast(args.cx(), concat(args.cx(), inputs, dim), dtype));
}

void translate_split_with_sizes(NodeArgs& args) {
  Tensor self = args.tensor("self");
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  args.set_outputs(0, split_by(self, dim, args.sym_ints("split_sizes")));
}

// Pieces of split_size along dim, the last one shorter; the archive lists how many there are.
void translate_split_tensor(NodeArgs& args) {
  Tensor self = args.tensor("self");
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  const Expr size = args.sym_int("split_size");
  const pt2::Argument& out = args.node().outputs.at(0);
  std::vector<Tensor> pieces;
  for (size_t i = 0; i < out.tensors.size(); ++i) {
    Expr start = Expr(static_cast<int64_t>(i)) * size;
    pieces.push_back(slice(self, dim, start, start + size, 1));
  }
  args.set_outputs(0, pieces);
}

// ---- ops that build a tensor from pieces (core ATen's functional forms of in-place updates) ----

// fill(self, value): a constant with self's shape and dtype.
void translate_fill_scalar(NodeArgs& args) {
  Tensor self = args.tensor("self");
  args.set_output(0, constant(args.cx(), args.scalar("value"), self.dtype, self.shape()));
}

// flip: a gather with reversed positions along each dim (the IR's views have no negative strides).
void translate_flip(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor out = args.tensor("self");
  if (out.rank() == 0) return args.set_output(0, out);
  for (int d : int_dims(args, "dims")) {
    const int dim = wrap_dim(d, out.rank());
    const int64_t n = static_size(out, dim, "flip");
    Tensor reversed = binary(cx, ir::Op::Sub, constant(cx, ir::Scalar::of_int(n - 1), DType::I64),
                             iota(cx, Expr(n), DType::I64));
    out = gather(cx, out, dim, index_along(reversed, dim, out.shape()));
  }
  args.set_output(0, out);
}

// repeat: each dim d of size s becomes r*s by a broadcast [.., r, s, ..] flattened; extra
// leading repeats add leading dims.
void translate_repeat(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  const std::vector<Expr> repeats = args.sym_ints("repeats");
  USER_CHECK(repeats.size() >= static_cast<size_t>(x.rank()))
      << "repeat needs at least " << x.rank() << " repeat counts, got " << repeats.size();
  while (x.rank() < static_cast<int>(repeats.size())) x = unsqueeze(x, 0);
  ir::Shape expanded, final_shape;
  for (int d = 0; d < x.rank(); ++d) {
    expanded.push_back(repeats[d]);
    expanded.push_back(x.shape()[d]);
    final_shape.push_back(repeats[d] * x.shape()[d]);
  }
  std::vector<Expr> interleaved;  // [1, s0, 1, s1, ...]
  for (int d = 0; d < x.rank(); ++d) {
    interleaved.push_back(Expr(int64_t{1}));
    interleaved.push_back(x.shape()[d]);
  }
  Tensor spread = reshape(cx, x, interleaved);
  args.set_output(0, reshape(cx, contiguous(cx, expand(spread, expanded)), final_shape));
}

// constant_pad_nd: pad (left, right) pairs from the last dim backwards; negative pads crop.
void translate_constant_pad_nd(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor out = args.tensor("self");
  const std::vector<int64_t> pad = args.integers("pad");
  USER_CHECK(pad.size() % 2 == 0 && static_cast<int>(pad.size() / 2) <= out.rank())
      << "pad of length " << pad.size() << " for a tensor of rank " << out.rank();
  const ir::Scalar value = args.scalar("value");
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int dim = out.rank() - 1 - static_cast<int>(i);
    const int64_t left = pad[2 * i], right = pad[2 * i + 1];
    if (left < 0 || right < 0) {
      const Expr size = out.shape()[dim];
      out = slice(out, dim, Expr(std::max<int64_t>(0, -left)), size - Expr(std::max<int64_t>(0, -right)), 1);
    }
    std::vector<Tensor> pieces;
    auto filler = [&](int64_t n) {
      ir::Shape shape = out.shape();
      shape[dim] = Expr(n);
      return constant(cx, value, out.dtype, shape);
    };
    if (left > 0) pieces.push_back(filler(left));
    pieces.push_back(out);
    if (right > 0) pieces.push_back(filler(right));
    if (pieces.size() > 1) out = concat(cx, pieces, dim);
  }
  args.set_output(0, out);
}

// diagonal: a view whose one new last dim steps by the sum of the two dims' strides.
void translate_diagonal(NodeArgs& args) {
  Tensor x = args.tensor("self");
  const int64_t offset = args.integer("offset");
  const int d1 = wrap_dim(args.integer("dim1"), x.rank()), d2 = wrap_dim(args.integer("dim2"), x.rank());
  USER_CHECK(d1 != d2) << "diagonal dimensions cannot be identical (" << d1 << ")";
  const int64_t n1 = static_size(x, d1, "diagonal"), n2 = static_size(x, d2, "diagonal");
  const int64_t length = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  const ir::View& v = x.ref.view;
  ir::Shape shape;
  std::vector<Expr> strides;
  for (int d = 0; d < x.rank(); ++d) {
    if (d == d1 || d == d2) continue;
    shape.push_back(x.shape()[d]);
    strides.push_back(v.strides()[d]);
  }
  shape.push_back(Expr(length));
  strides.push_back(v.strides()[d1] + v.strides()[d2]);
  Expr start = v.offset();
  if (length > 0) start = start + (offset >= 0 ? Expr(offset) * v.strides()[d2] : Expr(-offset) * v.strides()[d1]);
  Tensor out{ir::TensorRef{x.ref.node, ir::View(shape, strides, start)}, x.dtype};
  args.set_output(0, out);
}

// select_scatter / slice_scatter: src written into a copy of self at one index / a strided
// range along dim, by the Scatter primitive.
void translate_select_scatter(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  Tensor src = unsqueeze(cast(cx, args.tensor("src"), self.dtype), dim);
  Expr index = args.sym_int("index");
  if (index.is_constant() && index.constant_value() < 0) index = self.shape()[dim] + index;
  Tensor positions = reshape(cx, size_value(cx, index, DType::I64), {Expr(int64_t{1})});
  args.set_output(0, scatter(cx, self, dim, index_along(positions, dim, src.shape()), src, /*accumulate=*/false));
}

void translate_slice_scatter(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  const int64_t step = args.integer("step");
  Tensor src = cast(cx, args.tensor("src"), self.dtype);
  const Expr& n = src.shape()[dim];
  if (n.is_constant() && n.constant_value() == 0) return args.set_output(0, self);
  // The first written position: start after torch's clamping (negative counts from the end).
  std::optional<Expr> start = args.optional_sym_int("start");
  Expr first(int64_t{0});
  if (start) {
    const Expr size = self.shape()[dim];
    first = *start;
    if (first.is_constant() && size.is_constant()) {
      int64_t v = first.constant_value();
      if (v < 0) v += size.constant_value();
      first = Expr(std::clamp<int64_t>(v, 0, size.constant_value()));
    }
  }
  Tensor positions = binary(cx, ir::Op::Add, binary(cx, ir::Op::Mul, iota(cx, n, DType::I64),
                                                    constant(cx, ir::Scalar::of_int(step), DType::I64)),
                            size_value(cx, first, DType::I64));
  args.set_output(0, scatter(cx, self, dim, index_along(positions, dim, src.shape()), src, /*accumulate=*/false));
}

namespace {
// scatter's src may be larger than index: only src[index's extent] is read, as in torch.
Tensor src_for_index(const Tensor& src, const Tensor& index) {
  Tensor out = src;
  for (int d = 0; d < index.rank(); ++d)
    if (!(out.shape()[d] == index.shape()[d])) out = slice(out, d, Expr(int64_t{0}), index.shape()[d], 1);
  return out;
}

void scatter_handler(NodeArgs& args, bool accumulate) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  Tensor index = args.tensor("index");
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  Tensor src = args.has("src") ? src_for_index(cast(cx, args.tensor("src"), self.dtype), index)
                                     : broadcast_to(constant(cx, args.scalar("value"), self.dtype), index.shape());
  if (self.rank() == 0) {
    // torch treats a 0-d self as rank 1 of size 1.
    Tensor out = scatter(cx, unsqueeze(self, 0), 0, reshape(cx, index, {Expr(int64_t{1})}),
                         reshape(cx, src, {Expr(int64_t{1})}), accumulate);
    return args.set_output(0, reshape(cx, out, {}));
  }
  args.set_output(0, scatter(cx, self, dim, index, src, accumulate));
}
}  // namespace

void translate_scatter_src(NodeArgs& args) { scatter_handler(args, /*accumulate=*/false); }
void translate_scatter_value(NodeArgs& args) { scatter_handler(args, /*accumulate=*/false); }
void translate_scatter_add(NodeArgs& args) { scatter_handler(args, /*accumulate=*/true); }

}  // namespace luminal::translator
