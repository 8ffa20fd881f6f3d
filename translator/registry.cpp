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
    {"aten::_softmax.default", translate_softmax},
    {"aten::_to_copy.default", translate_to_copy},
    {"aten::_unsafe_view.default", translate_view},
    {"aten::abs.default", translate_abs},
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
    {"aten::clamp.default", translate_clamp},
    {"aten::clamp_max.default", translate_clamp_max},
    {"aten::clamp_min.default", translate_clamp_min},
    {"aten::clone.default", translate_clone},
    {"aten::copy.default", translate_copy},
    {"aten::cos.default", translate_cos},
    {"aten::cumsum.default", translate_cumsum},
    {"aten::div.Scalar", translate_div},
    {"aten::div.Tensor", translate_div},
    {"aten::div.Tensor_mode", translate_div_mode},
    {"aten::embedding.default", translate_embedding},
    {"aten::empty.memory_format", translate_empty_memory_format},
    {"aten::empty_permuted.default", translate_empty_permuted},
    {"aten::eq.Scalar", translate_eq},
    {"aten::eq.Tensor", translate_eq},
    {"aten::erf.default", translate_erf},
    {"aten::exp.default", translate_exp},
    {"aten::expand.default", translate_expand},
    {"aten::floor.default", translate_floor},
    {"aten::full.default", translate_full},
    {"aten::full_like.default", translate_full_like},
    {"aten::gather.default", translate_gather},
    {"aten::ge.Scalar", translate_ge},
    {"aten::ge.Tensor", translate_ge},
    {"aten::gelu.default", translate_gelu},
    {"aten::gt.Scalar", translate_gt},
    {"aten::gt.Tensor", translate_gt},
    {"aten::index.Tensor", translate_index_tensor},
    {"aten::index_put.default", translate_index_put},
    {"aten::index_select.default", translate_index_select},
    {"aten::isnan.default", translate_isnan},
    {"aten::le.Scalar", translate_le},
    {"aten::le.Tensor", translate_le},
    {"aten::log.default", translate_log},
    {"aten::logical_and.default", translate_logical_and},
    {"aten::logical_not.default", translate_logical_not},
    {"aten::logical_or.default", translate_logical_or},
    {"aten::logical_xor.default", translate_logical_xor},
    {"aten::lt.Scalar", translate_lt},
    {"aten::lt.Tensor", translate_lt},
    {"aten::masked_fill.Scalar", translate_masked_fill_scalar},
    {"aten::maximum.default", translate_maximum},
    {"aten::mean.default", translate_mean},
    {"aten::mean.dim", translate_mean_dim},
    {"aten::minimum.default", translate_minimum},
    {"aten::mm.default", translate_mm},
    {"aten::mul.Scalar", translate_mul},
    {"aten::mul.Tensor", translate_mul},
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
    {"aten::prod.dim_int", translate_prod_dim_int},
    {"aten::reciprocal.default", translate_reciprocal},
    {"aten::relu.default", translate_relu},
    {"aten::reshape.default", translate_reshape},
    {"aten::round.default", translate_round},
    {"aten::rsqrt.default", translate_rsqrt},
    {"aten::scalar_tensor.default", translate_scalar_tensor},
    {"aten::scaled_dot_product_attention.default", translate_scaled_dot_product_attention},
    {"aten::select.int", translate_select_int},
    {"aten::sigmoid.default", translate_sigmoid},
    {"aten::silu.default", translate_silu},
    {"aten::sin.default", translate_sin},
    {"aten::slice.Tensor", translate_slice_tensor},
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
    {"aten::tanh.default", translate_tanh},
    {"aten::transpose.int", translate_transpose_int},
    {"aten::trunc.default", translate_trunc},
    {"aten::unsqueeze.default", translate_unsqueeze},
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
