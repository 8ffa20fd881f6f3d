#include "translator/defaults.h"

#include <map>

namespace luminal::translator {
namespace {

pt2::Argument none() { return pt2::Argument{}; }
pt2::Argument integer(int64_t v) {
  pt2::Argument a;
  a.kind = pt2::Argument::Kind::Int;
  a.ints = {v};
  return a;
}
pt2::Argument boolean(bool v) {
  pt2::Argument a;
  a.kind = pt2::Argument::Kind::Bool;
  a.bools = {v};
  return a;
}
pt2::Argument floating(double v) {
  pt2::Argument a;
  a.kind = pt2::Argument::Kind::Float;
  a.floats = {v};
  return a;
}
pt2::Argument string(const std::string& v) {
  pt2::Argument a;
  a.kind = pt2::Argument::Kind::String;
  a.strings = {v};
  return a;
}
pt2::Argument empty_ints() {
  pt2::Argument a;
  a.kind = pt2::Argument::Kind::Ints;
  return a;
}

using ArgDefaults = std::map<std::string, pt2::Argument>;

// The tensor-creation keywords every factory function takes.
ArgDefaults factory(ArgDefaults extra = {}) {
  ArgDefaults d{{"dtype", none()}, {"layout", none()}, {"device", none()}, {"pin_memory", none()}};
  d.insert(extra.begin(), extra.end());
  return d;
}

// From each overload's schema in torch 2.13 (torch.ops.aten.<op>.<overload>._schema), for the
// overloads registry.cpp translates. Sorted by overload.
const std::map<std::string, ArgDefaults>& table() {
  static const std::map<std::string, ArgDefaults> defaults = {
      {"aten::_assert_tensor_metadata.default",
       {{"size", none()}, {"stride", none()}, {"dtype", none()}, {"device", none()}, {"layout", none()}}},
      {"aten::_grouped_mm.default", {{"offs", none()}, {"bias", none()}, {"out_dtype", none()}}},
      {"aten::_to_copy.default",
       factory({{"non_blocking", boolean(false)}, {"memory_format", none()}})},
      {"aten::add.Scalar", {{"alpha", integer(1)}}},
      {"aten::add.Tensor", {{"alpha", integer(1)}}},
      {"aten::addmm.default", {{"beta", integer(1)}, {"alpha", integer(1)}}},
      {"aten::amax.default", {{"dim", empty_ints()}, {"keepdim", boolean(false)}}},
      {"aten::amin.default", {{"dim", empty_ints()}, {"keepdim", boolean(false)}}},
      {"aten::any.dim", {{"keepdim", boolean(false)}}},
      {"aten::any.dims", {{"dim", none()}, {"keepdim", boolean(false)}}},
      {"aten::arange.default", factory()},
      {"aten::arange.start", factory()},
      {"aten::arange.start_step", factory({{"step", integer(1)}})},
      {"aten::argmax.default", {{"dim", none()}, {"keepdim", boolean(false)}}},
      {"aten::argmin.default", {{"dim", none()}, {"keepdim", boolean(false)}}},
      {"aten::avg_pool2d.default",
       {{"stride", empty_ints()}, {"padding", integer(0)}, {"ceil_mode", boolean(false)}, {"count_include_pad", boolean(true)}, {"divisor_override", none()}}},
      {"aten::avg_pool3d.default",
       {{"stride", empty_ints()}, {"padding", integer(0)}, {"ceil_mode", boolean(false)}, {"count_include_pad", boolean(true)}, {"divisor_override", none()}}},
      {"aten::cat.default", {{"dim", integer(0)}}},
      {"aten::clamp.Tensor", {{"min", none()}, {"max", none()}}},
      {"aten::clamp.default", {{"min", none()}, {"max", none()}}},
      {"aten::clone.default", {{"memory_format", none()}}},
      {"aten::constant_pad_nd.default", {{"value", integer(0)}}},
      {"aten::copy.default", {{"non_blocking", boolean(false)}}},
      {"aten::cumsum.default", {{"dtype", none()}}},
      {"aten::diagonal.default", {{"offset", integer(0)}, {"dim1", integer(0)}, {"dim2", integer(1)}}},
      {"aten::elu.default", {{"alpha", integer(1)}, {"scale", integer(1)}, {"input_scale", integer(1)}}},
      {"aten::embedding.default",
       {{"padding_idx", integer(-1)}, {"scale_grad_by_freq", boolean(false)}, {"sparse", boolean(false)}}},
      {"aten::empty.memory_format", factory({{"memory_format", none()}})},
      {"aten::empty_permuted.default", factory()},
      {"aten::empty_strided.default", factory()},
      {"aten::expand.default", {{"implicit", boolean(false)}}},
      {"aten::full.default", factory()},
      {"aten::full_like.default", factory({{"memory_format", none()}})},
      {"aten::gather.default", {{"sparse_grad", boolean(false)}}},
      {"aten::gelu.default", {{"approximate", string("none")}}},
      {"aten::hardtanh.default", {{"min_val", integer(-1)}, {"max_val", integer(1)}}},
      {"aten::histc.default", {{"bins", integer(100)}, {"min", integer(0)}, {"max", integer(0)}}},
      {"aten::index_put.default", {{"accumulate", boolean(false)}}},
      {"aten::leaky_relu.default", {{"negative_slope", floating(0.01)}}},
      {"aten::linalg_vector_norm.default", {{"ord", integer(2)}, {"dim", none()}, {"keepdim", boolean(false)}, {"dtype", none()}}},
      {"aten::max.dim", {{"keepdim", boolean(false)}}},
      {"aten::max_pool2d_with_indices.default",
       {{"stride", empty_ints()}, {"padding", integer(0)}, {"dilation", integer(1)}, {"ceil_mode", boolean(false)}}},
      {"aten::max_pool3d_with_indices.default",
       {{"stride", empty_ints()}, {"padding", integer(0)}, {"dilation", integer(1)}, {"ceil_mode", boolean(false)}}},
      {"aten::mean.default", {{"dtype", none()}}},
      {"aten::mean.dim", {{"keepdim", boolean(false)}, {"dtype", none()}}},
      {"aten::min.dim", {{"keepdim", boolean(false)}}},
      {"aten::ones.default", factory()},
      {"aten::ones_like.default", factory({{"memory_format", none()}})},
      {"aten::prod.default", {{"dtype", none()}}},
      {"aten::prod.dim_int", {{"keepdim", boolean(false)}, {"dtype", none()}}},
      {"aten::scalar_tensor.default", factory()},
      {"aten::scaled_dot_product_attention.default",
       {{"attn_mask", none()}, {"dropout_p", floating(0.0)}, {"is_causal", boolean(false)}, {"scale", none()},
        {"enable_gqa", boolean(false)}}},
      {"aten::scatter_reduce.two", {{"include_self", boolean(true)}}},
      {"aten::slice.Tensor", {{"dim", integer(0)}, {"start", none()}, {"end", none()}, {"step", integer(1)}}},
      {"aten::slice_scatter.default", {{"dim", integer(0)}, {"start", none()}, {"end", none()}, {"step", integer(1)}}},
      {"aten::sort.default", {{"dim", integer(-1)}, {"descending", boolean(false)}}},
      {"aten::sort.stable", {{"stable", none()}, {"dim", integer(-1)}, {"descending", boolean(false)}}},
      {"aten::split.Tensor", {{"dim", integer(0)}}},
      {"aten::split_with_sizes.default", {{"dim", integer(0)}}},
      {"aten::sub.Scalar", {{"alpha", integer(1)}}},
      {"aten::sub.Tensor", {{"alpha", integer(1)}}},
      {"aten::sum.default", {{"dtype", none()}}},
      {"aten::sum.dim_IntList", {{"keepdim", boolean(false)}, {"dtype", none()}}},
      {"aten::sym_constrain_range.default", {{"min", none()}, {"max", none()}}},
      {"aten::sym_constrain_range_for_size.default", {{"min", none()}, {"max", none()}}},
      {"aten::topk.default", {{"dim", integer(-1)}, {"largest", boolean(true)}, {"sorted", boolean(true)}}},
      {"aten::var.correction", {{"dim", none()}, {"correction", none()}, {"keepdim", boolean(false)}}},
      {"aten::var.dim", {{"unbiased", boolean(true)}, {"keepdim", boolean(false)}}},
      {"aten::var_mean.correction", {{"dim", none()}, {"correction", none()}, {"keepdim", boolean(false)}}},
      {"aten::zeros.default", factory()},
      {"aten::zeros_like.default", factory({{"memory_format", none()}})},
  };
  return defaults;
}

}  // namespace

const pt2::Argument* schema_default(const std::string& overload, const std::string& arg) {
  auto op = table().find(overload);
  if (op == table().end()) return nullptr;
  auto it = op->second.find(arg);
  return it == op->second.end() ? nullptr : &it->second;
}

}  // namespace luminal::translator
