// Every op handler, one per overload, grouped by the family file that defines it. registry.cpp
// maps overload names to these. A handler decodes its node through NodeArgs, builds IR with
// tensor_ops.h and binds its outputs; it throws (UserError / UnsupportedError) on bad input.
#pragma once

#include "translator/args.h"

namespace luminal::translator {

// ---- elementwise.cpp ----
void translate_abs(NodeArgs& args);
void translate_acos(NodeArgs& args);
void translate_acosh(NodeArgs& args);
void translate_add_scalar(NodeArgs& args);
void translate_add_tensor(NodeArgs& args);
void translate_asin(NodeArgs& args);
void translate_asinh(NodeArgs& args);
void translate_atan(NodeArgs& args);
void translate_atan2(NodeArgs& args);
void translate_atanh(NodeArgs& args);
void translate_bitwise_and(NodeArgs& args);
void translate_bitwise_not(NodeArgs& args);
void translate_bitwise_or(NodeArgs& args);
void translate_bitwise_xor(NodeArgs& args);
void translate_ceil(NodeArgs& args);
void translate_clamp(NodeArgs& args);
void translate_clamp_max(NodeArgs& args);
void translate_clamp_min(NodeArgs& args);
void translate_cos(NodeArgs& args);
void translate_cosh(NodeArgs& args);
void translate_div(NodeArgs& args);
void translate_div_mode(NodeArgs& args);
void translate_elu(NodeArgs& args);
void translate_eq(NodeArgs& args);
void translate_erf(NodeArgs& args);
void translate_exp(NodeArgs& args);
void translate_expm1(NodeArgs& args);
void translate_floor(NodeArgs& args);
void translate_fmod(NodeArgs& args);
void translate_ge(NodeArgs& args);
void translate_gt(NodeArgs& args);
void translate_hardtanh(NodeArgs& args);
void translate_isinf(NodeArgs& args);
void translate_isnan(NodeArgs& args);
void translate_le(NodeArgs& args);
void translate_leaky_relu(NodeArgs& args);
void translate_log(NodeArgs& args);
void translate_log10(NodeArgs& args);
void translate_log1p(NodeArgs& args);
void translate_log2(NodeArgs& args);
void translate_logical_and(NodeArgs& args);
void translate_logical_not(NodeArgs& args);
void translate_logical_or(NodeArgs& args);
void translate_logical_xor(NodeArgs& args);
void translate_lt(NodeArgs& args);
void translate_masked_fill_scalar(NodeArgs& args);
void translate_maximum(NodeArgs& args);
void translate_minimum(NodeArgs& args);
void translate_mul(NodeArgs& args);
void translate_prims_fma(NodeArgs& args);
void translate_ne(NodeArgs& args);
void translate_neg(NodeArgs& args);
void translate_pow_scalar(NodeArgs& args);
void translate_pow_tensor_scalar(NodeArgs& args);
void translate_pow_tensor_tensor(NodeArgs& args);
void translate_reciprocal(NodeArgs& args);
void translate_relu(NodeArgs& args);
void translate_remainder(NodeArgs& args);
void translate_round(NodeArgs& args);
void translate_rsqrt(NodeArgs& args);
void translate_sigmoid(NodeArgs& args);
void translate_sign(NodeArgs& args);
void translate_sin(NodeArgs& args);
void translate_sinh(NodeArgs& args);
void translate_sqrt(NodeArgs& args);
void translate_sub_scalar(NodeArgs& args);
void translate_sub_tensor(NodeArgs& args);
void translate_tan(NodeArgs& args);
void translate_tanh(NodeArgs& args);
void translate_trunc(NodeArgs& args);
void translate_where_self(NodeArgs& args);

// ---- reduction.cpp ----
void translate_amax(NodeArgs& args);
void translate_amin(NodeArgs& args);
void translate_any(NodeArgs& args);
void translate_any_dim(NodeArgs& args);
void translate_any_dims(NodeArgs& args);
void translate_argmax(NodeArgs& args);
void translate_argmin(NodeArgs& args);
void translate_cumsum(NodeArgs& args);
void translate_linalg_vector_norm(NodeArgs& args);
void translate_max(NodeArgs& args);
void translate_max_dim(NodeArgs& args);
void translate_mean(NodeArgs& args);
void translate_mean_dim(NodeArgs& args);
void translate_min(NodeArgs& args);
void translate_min_dim(NodeArgs& args);
void translate_prod(NodeArgs& args);
void translate_prod_dim_int(NodeArgs& args);
void translate_sum(NodeArgs& args);
void translate_sum_dim_intlist(NodeArgs& args);
void translate_var_correction(NodeArgs& args);
void translate_var_dim(NodeArgs& args);
void translate_var_mean_correction(NodeArgs& args);

// ---- movement.cpp ----
void translate_alias(NodeArgs& args);
void translate_cat(NodeArgs& args);
void translate_clone(NodeArgs& args);
void translate_constant_pad_nd(NodeArgs& args);
void translate_copy(NodeArgs& args);
void translate_diagonal(NodeArgs& args);
void translate_expand(NodeArgs& args);
void translate_fill_scalar(NodeArgs& args);
void translate_flip(NodeArgs& args);
void translate_permute(NodeArgs& args);
void translate_repeat(NodeArgs& args);
void translate_reshape(NodeArgs& args);
void translate_scatter_add(NodeArgs& args);
void translate_scatter_src(NodeArgs& args);
void translate_scatter_value(NodeArgs& args);
void translate_select_int(NodeArgs& args);
void translate_select_scatter(NodeArgs& args);
void translate_slice_scatter(NodeArgs& args);
void translate_slice_tensor(NodeArgs& args);
void translate_split_tensor(NodeArgs& args);
void translate_split_with_sizes(NodeArgs& args);
void translate_squeeze(NodeArgs& args);
void translate_squeeze_dim(NodeArgs& args);
void translate_squeeze_dims(NodeArgs& args);
void translate_t(NodeArgs& args);
void translate_to_copy(NodeArgs& args);
void translate_convert_element_type(NodeArgs& args);
void translate_transpose_int(NodeArgs& args);
void translate_unsqueeze(NodeArgs& args);
void translate_view(NodeArgs& args);

// ---- indexing.cpp ----
void translate_embedding(NodeArgs& args);
void translate_embedding_renorm(NodeArgs& args);
void translate_gather(NodeArgs& args);
void translate_index_put(NodeArgs& args);
void translate_index_select(NodeArgs& args);
void translate_index_tensor(NodeArgs& args);

// ---- linalg.cpp ----
void translate_addmm(NodeArgs& args);
void translate_bmm(NodeArgs& args);
void translate_int_mm(NodeArgs& args);
void translate_mm(NodeArgs& args);
void translate_out_dtype(NodeArgs& args);

// ---- nn.cpp ----
void translate_gelu(NodeArgs& args);
void translate_log_softmax(NodeArgs& args);
void translate_native_batch_norm_legit(NodeArgs& args);
void translate_native_batch_norm_legit_functional(NodeArgs& args);
void translate_native_batch_norm_legit_no_stats(NodeArgs& args);
void translate_native_batch_norm_legit_no_training(NodeArgs& args);
void translate_native_group_norm(NodeArgs& args);
void translate_native_dropout(NodeArgs& args);
void translate_native_layer_norm(NodeArgs& args);
void translate_silu(NodeArgs& args);
void translate_softmax(NodeArgs& args);

// ---- convolution.cpp ----
void translate_convolution(NodeArgs& args);
void translate_convolution_backward(NodeArgs& args);

// ---- pooling.cpp ----
void translate_adaptive_avg_pool2d(NodeArgs& args);
void translate_adaptive_avg_pool2d_backward(NodeArgs& args);
void translate_adaptive_avg_pool3d(NodeArgs& args);
void translate_adaptive_avg_pool3d_backward(NodeArgs& args);
void translate_avg_pool2d(NodeArgs& args);
void translate_avg_pool2d_backward(NodeArgs& args);
void translate_avg_pool3d(NodeArgs& args);
void translate_avg_pool3d_backward(NodeArgs& args);
void translate_max_pool2d_with_indices(NodeArgs& args);
void translate_max_pool2d_with_indices_backward(NodeArgs& args);
void translate_max_pool3d_with_indices(NodeArgs& args);
void translate_max_pool3d_with_indices_backward(NodeArgs& args);

// ---- padding.cpp ----
void translate_reflection_pad1d(NodeArgs& args);
void translate_reflection_pad2d(NodeArgs& args);
void translate_reflection_pad3d(NodeArgs& args);
void translate_replication_pad1d(NodeArgs& args);
void translate_replication_pad2d(NodeArgs& args);
void translate_replication_pad3d(NodeArgs& args);

// ---- scatter_reduce.cpp ----
void translate_scatter_reduce_two(NodeArgs& args);
void translate_scatter_reduce(NodeArgs& args);
void translate_scatter_value_reduce(NodeArgs& args);

// ---- upsample.cpp ----
void translate_upsample_bilinear2d_vec(NodeArgs& args);
void translate_upsample_nearest2d_vec(NodeArgs& args);

// ---- attention.cpp ----
void translate_scaled_dot_product_attention(NodeArgs& args);

// ---- sorting.cpp ----
void translate_sort(NodeArgs& args);
void translate_sort_stable(NodeArgs& args);
void translate_topk(NodeArgs& args);

// ---- collectives.cpp ----
void translate_c10d_all_gather_into_tensor(NodeArgs& args);
void translate_c10d_all_reduce(NodeArgs& args);
void translate_c10d_all_reduce_coalesced(NodeArgs& args);
void translate_c10d_all_to_all_single(NodeArgs& args);
void translate_c10d_broadcast(NodeArgs& args);
void translate_c10d_reduce_scatter_tensor(NodeArgs& args);
void translate_c10d_wait_tensor(NodeArgs& args);

// ---- moe.cpp ----
void translate_grouped_mm(NodeArgs& args);
void translate_grouped_mm_fallback(NodeArgs& args);
void translate_grouped_mm_fallback_backward(NodeArgs& args);
void translate_histc(NodeArgs& args);

// ---- creation.cpp ----
void translate_arange(NodeArgs& args);
void translate_arange_start(NodeArgs& args);
void translate_arange_start_step(NodeArgs& args);
void translate_empty(NodeArgs& args);
void translate_full(NodeArgs& args);
void translate_full_like(NodeArgs& args);
void translate_ones(NodeArgs& args);
void translate_ones_like(NodeArgs& args);
void translate_scalar_tensor(NodeArgs& args);
void translate_zeros(NodeArgs& args);
void translate_zeros_like(NodeArgs& args);

// ---- data_dependent.cpp ----
void translate_local_scalar_dense(NodeArgs& args);
void translate_masked_scatter(NodeArgs& args);
void translate_masked_select(NodeArgs& args);
void translate_nonzero(NodeArgs& args);

// ---- meta.cpp ----
void translate_assert_scalar(NodeArgs& args);
void translate_assert_tensor_metadata(NodeArgs& args);
void translate_sym_add(NodeArgs& args);
void translate_sym_constrain_range(NodeArgs& args);
void translate_sym_constrain_range_for_size(NodeArgs& args);
void translate_sym_eq(NodeArgs& args);
void translate_sym_ge(NodeArgs& args);
void translate_sym_gt(NodeArgs& args);
void translate_sym_le(NodeArgs& args);
void translate_sym_lt(NodeArgs& args);
void translate_sym_ne(NodeArgs& args);
void translate_sym_not(NodeArgs& args);
void translate_sym_and(NodeArgs& args);
void translate_sym_or(NodeArgs& args);
void translate_sym_floordiv(NodeArgs& args);
void translate_sym_max(NodeArgs& args);
void translate_sym_min(NodeArgs& args);
void translate_sym_mod(NodeArgs& args);
void translate_sym_mul(NodeArgs& args);
void translate_sym_size_int(NodeArgs& args);
void translate_sym_numel(NodeArgs& args);
void translate_sym_stride_int(NodeArgs& args);
void translate_sym_storage_offset(NodeArgs& args);
void translate_sym_sub(NodeArgs& args);

}  // namespace luminal::translator
