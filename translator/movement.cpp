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

// cat = scatter each input into its range of the result along dim. Inputs promote to a common
// dtype; legacy empty 1-d inputs ([0]) are skipped, as torch does.
void translate_cat(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  std::vector<Tensor> inputs;
  for (const Tensor& t : args.tensors("tensors")) {
    const bool legacy_empty = t.rank() == 1 && t.shape()[0].is_constant() && t.shape()[0].constant_value() == 0;
    if (!legacy_empty) inputs.push_back(t);
  }
  USER_CHECK(!inputs.empty()) << "cat of no non-empty tensors";
  const DType dtype = result_type(inputs, {});
  const int dim = wrap_dim(args.integer("dim"), inputs[0].rank());
  if (inputs.size() == 1) return args.set_output(0, cast(cx, inputs[0], dtype));
  ir::Shape shape = inputs[0].shape();
  Expr total(int64_t{0});
  for (const Tensor& t : inputs) {
    USER_CHECK(t.rank() == inputs[0].rank()) << "cat of tensors of rank " << inputs[0].rank() << " and " << t.rank();
    total = total + t.shape()[dim];
  }
  shape[dim] = total;
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
  args.set_output(0, out);
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

}  // namespace luminal::translator
