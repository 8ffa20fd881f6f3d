#include "translator/registry.h"

#include <algorithm>
#include <utility>

#include "translator/handlers.h"

namespace luminal::translator {
namespace {

// Sorted by overload name; a test checks the order so that lookups can binary-search.
constexpr std::pair<const char*, OpHandler> kHandlers[] = {
    {"_operator::add", translate_sym_add},
    {"_operator::floordiv", translate_sym_floordiv},
    {"_operator::mod", translate_sym_mod},
    {"_operator::mul", translate_sym_mul},
    {"_operator::sub", translate_sym_sub},
    {"aten::_assert_tensor_metadata.default", translate_assert_tensor_metadata},
    {"aten::_log_softmax.default", translate_log_softmax},
    {"aten::_native_batch_norm_legit_no_training.default", translate_native_batch_norm_legit_no_training},
    {"aten::_softmax.default", translate_softmax},
    {"aten::_to_copy.default", translate_to_copy},
    {"aten::_unsafe_view.default", translate_view},
    {"aten::abs.default", translate_abs},
    {"aten::acos.default", translate_acos},
    {"aten::acosh.default", translate_acosh},
    {"aten::add.Scalar", translate_add_scalar},
    {"aten::add.Tensor", translate_add_tensor},
    {"aten::addmm.default", translate_addmm},
    {"aten::alias.default", translate_alias},
    {"aten::amax.default", translate_amax},
    {"aten::amin.default", translate_amin},
    {"aten::any.default", translate_any},
    {"aten::any.dim", translate_any_dim},
    {"aten::any.dims", translate_any_dims},
    {"aten::arange.default", translate_arange},
    {"aten::arange.start", translate_arange_start},
    {"aten::arange.start_step", translate_arange_start_step},
    {"aten::argmax.default", translate_argmax},
    {"aten::argmin.default", translate_argmin},
    {"aten::asin.default", translate_asin},
    {"aten::asinh.default", translate_asinh},
    {"aten::atan.default", translate_atan},
    {"aten::atan2.default", translate_atan2},
    {"aten::atanh.default", translate_atanh},
    {"aten::bitwise_and.Scalar", translate_bitwise_and},
    {"aten::bitwise_and.Tensor", translate_bitwise_and},
    {"aten::bitwise_not.default", translate_bitwise_not},
    {"aten::bitwise_or.Scalar", translate_bitwise_or},
    {"aten::bitwise_or.Tensor", translate_bitwise_or},
    {"aten::bitwise_xor.Scalar", translate_bitwise_xor},
    {"aten::bitwise_xor.Tensor", translate_bitwise_xor},
    {"aten::bmm.default", translate_bmm},
    {"aten::cat.default", translate_cat},
    {"aten::ceil.default", translate_ceil},
    {"aten::clamp.Tensor", translate_clamp},
    {"aten::clamp.default", translate_clamp},
    {"aten::clamp_max.default", translate_clamp_max},
    {"aten::clamp_min.default", translate_clamp_min},
    {"aten::clone.default", translate_clone},
    {"aten::constant_pad_nd.default", translate_constant_pad_nd},
    {"aten::copy.default", translate_copy},
    {"aten::cos.default", translate_cos},
    {"aten::cosh.default", translate_cosh},
    {"aten::cumsum.default", translate_cumsum},
    {"aten::diagonal.default", translate_diagonal},
    {"aten::div.Scalar", translate_div},
    {"aten::div.Scalar_mode", translate_div_mode},
    {"aten::div.Tensor", translate_div},
    {"aten::div.Tensor_mode", translate_div_mode},
    {"aten::elu.default", translate_elu},
    {"aten::embedding.default", translate_embedding},
    {"aten::empty.memory_format", translate_empty_memory_format},
    {"aten::empty_permuted.default", translate_empty_permuted},
    {"aten::eq.Scalar", translate_eq},
    {"aten::eq.Tensor", translate_eq},
    {"aten::erf.default", translate_erf},
    {"aten::exp.default", translate_exp},
    {"aten::expand.default", translate_expand},
    {"aten::expm1.default", translate_expm1},
    {"aten::fill.Scalar", translate_fill_scalar},
    {"aten::flip.default", translate_flip},
    {"aten::floor.default", translate_floor},
    {"aten::fmod.Scalar", translate_fmod},
    {"aten::fmod.Tensor", translate_fmod},
    {"aten::full.default", translate_full},
    {"aten::full_like.default", translate_full_like},
    {"aten::gather.default", translate_gather},
    {"aten::ge.Scalar", translate_ge},
    {"aten::ge.Tensor", translate_ge},
    {"aten::gelu.default", translate_gelu},
    {"aten::gt.Scalar", translate_gt},
    {"aten::gt.Tensor", translate_gt},
    {"aten::hardtanh.default", translate_hardtanh},
    {"aten::index.Tensor", translate_index_tensor},
    {"aten::index_put.default", translate_index_put},
    {"aten::index_select.default", translate_index_select},
    {"aten::isinf.default", translate_isinf},
    {"aten::isnan.default", translate_isnan},
    {"aten::le.Scalar", translate_le},
    {"aten::le.Tensor", translate_le},
    {"aten::leaky_relu.default", translate_leaky_relu},
    {"aten::linalg_vector_norm.default", translate_linalg_vector_norm},
    {"aten::log.default", translate_log},
    {"aten::log10.default", translate_log10},
    {"aten::log1p.default", translate_log1p},
    {"aten::log2.default", translate_log2},
    {"aten::logical_and.default", translate_logical_and},
    {"aten::logical_not.default", translate_logical_not},
    {"aten::logical_or.default", translate_logical_or},
    {"aten::logical_xor.default", translate_logical_xor},
    {"aten::lt.Scalar", translate_lt},
    {"aten::lt.Tensor", translate_lt},
    {"aten::masked_fill.Scalar", translate_masked_fill_scalar},
    {"aten::max.default", translate_max},
    {"aten::max.dim", translate_max_dim},
    {"aten::maximum.default", translate_maximum},
    {"aten::mean.default", translate_mean},
    {"aten::mean.dim", translate_mean_dim},
    {"aten::min.default", translate_min},
    {"aten::min.dim", translate_min_dim},
    {"aten::minimum.default", translate_minimum},
    {"aten::mm.default", translate_mm},
    {"aten::mul.Scalar", translate_mul},
    {"aten::mul.Tensor", translate_mul},
    {"aten::native_group_norm.default", translate_native_group_norm},
    {"aten::native_layer_norm.default", translate_native_layer_norm},
    {"aten::ne.Scalar", translate_ne},
    {"aten::ne.Tensor", translate_ne},
    {"aten::neg.default", translate_neg},
    {"aten::ones.default", translate_ones},
    {"aten::ones_like.default", translate_ones_like},
    {"aten::permute.default", translate_permute},
    {"aten::pow.Scalar", translate_pow_scalar},
    {"aten::pow.Tensor_Scalar", translate_pow_tensor_scalar},
    {"aten::pow.Tensor_Tensor", translate_pow_tensor_tensor},
    {"aten::prod.default", translate_prod},
    {"aten::prod.dim_int", translate_prod_dim_int},
    {"aten::reciprocal.default", translate_reciprocal},
    {"aten::relu.default", translate_relu},
    {"aten::remainder.Scalar", translate_remainder},
    {"aten::remainder.Tensor", translate_remainder},
    {"aten::repeat.default", translate_repeat},
    {"aten::reshape.default", translate_reshape},
    {"aten::round.default", translate_round},
    {"aten::rsqrt.default", translate_rsqrt},
    {"aten::scalar_tensor.default", translate_scalar_tensor},
    {"aten::scaled_dot_product_attention.default", translate_scaled_dot_product_attention},
    {"aten::scatter.src", translate_scatter_src},
    {"aten::scatter.value", translate_scatter_value},
    {"aten::scatter_add.default", translate_scatter_add},
    {"aten::select.int", translate_select_int},
    {"aten::select_scatter.default", translate_select_scatter},
    {"aten::sigmoid.default", translate_sigmoid},
    {"aten::sign.default", translate_sign},
    {"aten::silu.default", translate_silu},
    {"aten::sin.default", translate_sin},
    {"aten::sinh.default", translate_sinh},
    {"aten::slice.Tensor", translate_slice_tensor},
    {"aten::slice_scatter.default", translate_slice_scatter},
    {"aten::split.Tensor", translate_split_tensor},
    {"aten::split_with_sizes.default", translate_split_with_sizes},
    {"aten::sqrt.default", translate_sqrt},
    {"aten::squeeze.default", translate_squeeze},
    {"aten::squeeze.dim", translate_squeeze_dim},
    {"aten::squeeze.dims", translate_squeeze_dims},
    {"aten::sub.Scalar", translate_sub_scalar},
    {"aten::sub.Tensor", translate_sub_tensor},
    {"aten::sum.default", translate_sum},
    {"aten::sum.dim_IntList", translate_sum_dim_intlist},
    {"aten::sym_size.int", translate_sym_size_int},
    {"aten::t.default", translate_t},
    {"aten::tan.default", translate_tan},
    {"aten::tanh.default", translate_tanh},
    {"aten::transpose.int", translate_transpose_int},
    {"aten::trunc.default", translate_trunc},
    {"aten::unsqueeze.default", translate_unsqueeze},
    {"aten::var.correction", translate_var_correction},
    {"aten::var.dim", translate_var_dim},
    {"aten::var_mean.correction", translate_var_mean_correction},
    {"aten::view.default", translate_view},
    {"aten::where.self", translate_where_self},
    {"aten::zeros.default", translate_zeros},
    {"aten::zeros_like.default", translate_zeros_like},
};

}  // namespace

OpHandler find_handler(const std::string& overload) {
  auto it = std::lower_bound(std::begin(kHandlers), std::end(kHandlers), overload,
                             [](const auto& entry, const std::string& key) { return entry.first < key; });
  return it != std::end(kHandlers) && it->first == overload ? it->second : nullptr;
}

std::vector<std::string> registered_overloads() {
  std::vector<std::string> names;
  for (const auto& [name, handler] : kHandlers) names.emplace_back(name);
  return names;
}

// "torch.ops.<namespace>.<op>.<overload>" -> "<namespace>::<op>.<overload>";
// "_operator.add" / "operator.add" (SymInt arithmetic) -> "_operator::add".
std::string overload_key(const std::string& target) {
  static const std::string kTorchOps = "torch.ops.";
  if (target.starts_with(kTorchOps)) {
    const std::string rest = target.substr(kTorchOps.size());
    const size_t dot = rest.find('.');
    if (dot != std::string::npos) return rest.substr(0, dot) + "::" + rest.substr(dot + 1);
    return rest;
  }
  for (const std::string prefix : {"_operator.", "operator."})
    if (target.starts_with(prefix)) return "_operator::" + target.substr(prefix.size());
  return target;
}

}  // namespace luminal::translator
