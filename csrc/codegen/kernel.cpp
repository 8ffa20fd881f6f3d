#include "codegen/kernel.h"

#include <algorithm>

namespace luminal::codegen {

namespace {
void collect(const ir::Expr& e, std::vector<std::string>& out) { e.collect_symbols(out); }
void collect(const Index& index, std::vector<std::string>& out) {
  collect(index.offset, out);
  for (const ir::Expr& s : index.strides) collect(s, out);
}
void collect(const MatrixOperand& m, std::vector<std::string>& out) {
  collect(m.batch, out);
  collect(m.row_stride, out);
  collect(m.col_stride, out);
}
}  // namespace

std::vector<std::string> Kernel::symbols() const {
  std::vector<std::string> out;
  for (const ir::Expr& d : domain) collect(d, out);
  for (const Value& v : values) {
    collect(v.index, out);
    collect(v.divisor, out);
    collect(v.extent, out);
    collect(v.gather_stride, out);
  }
  for (const Store& s : stores) collect(s.index, out);
  if (kind == KernelKind::Scatter) {
    for (const ir::Expr& d : scatter.out_shape) collect(d, out);
    for (const ir::Expr& d : scatter.index_shape) collect(d, out);
    collect(scatter.data, out);
    collect(scatter.index, out);
    collect(scatter.src, out);
  }
  if (kind == KernelKind::Gemv) {
    collect(gemv.depth, out);
    collect(gemv.a, out);
    collect(gemv.w, out);
    collect(gemv.out, out);
    if (gemv.group > 0) {
      collect(gemv.scale, out);
      collect(gemv.scale_group_stride, out);
    }
    if (gemv.has_zero) {
      collect(gemv.zero, out);
      collect(gemv.zero_group_stride, out);
    }
    if (gemv.columns) {
      collect(gemv.a_depth_stride, out);
      collect(gemv.w_depth_stride, out);
    }
  }
  if (kind == KernelKind::Attention) {
    for (const ir::Expr& d : {attention.q_len, attention.kv_len, attention.head_dim, attention.value_dim}) collect(d, out);
    for (const MatrixOperand* m : {&attention.q, &attention.k, &attention.v, &attention.bias}) collect(*m, out);
    if (attention.has_shift_param) collect(attention.shift_offset, out);
  }
  if (kind == KernelKind::Scan) {
    collect(scan.in, out);
    collect(scan.out, out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ir::Expr Kernel::parallel_extent() const {
  if (kind == KernelKind::Scatter) return ir::Expr(int64_t{1});
  if (kind == KernelKind::Attention) {
    ir::Expr n(int64_t{1});
    for (size_t d = 0; d + 2 < domain.size(); ++d) n = n * domain[d];
    return n;
  }
  if (kind == KernelKind::Gemv && gemv.columns) {
    // The rows of a prompt's form are all in each item.
    ir::Shape batch(domain.begin(), domain.end() - (gemv.rows_in_item ? 2 : 1));
    return ir::numel(batch) * floordiv(domain.back() + ir::Expr(column_run() - 1), ir::Expr(column_run()));
  }
  if (kind == KernelKind::Gemv) {  // every row of `a` in the item (the M dim is not split)
    ir::Expr n(int64_t{1});
    for (size_t d = 0; d < domain.size(); ++d)
      if (d + 2 != domain.size()) n = n * domain[d];
    return n;
  }
  int inner = reduce_axis >= 0 ? reduce_axis : static_cast<int>(domain.size()) - 1;
  if (kind == KernelKind::Scan) inner = scan.axis;
  ir::Expr n(int64_t{1});
  for (int d = 0; d < static_cast<int>(domain.size()); ++d)
    if (d != inner && d != lane_axis) n = n * domain[d];
  if (lane_axis >= 0) n = n * floordiv(domain[lane_axis] + ir::Expr(lane_run() - 1), ir::Expr(lane_run()));
  return n;
}

ir::Expr Kernel::inner_extent() const {
  if (domain.empty() || kind == KernelKind::Scatter) return ir::Expr(int64_t{1});
  if (kind == KernelKind::Gemv)
    return gemv.columns ? gemv.depth * ir::Expr(column_run()) * (gemv.rows_in_item ? domain[0] : ir::Expr(int64_t{1}))
                        : gemv.depth * domain[domain.size() - 2];
  if (kind == KernelKind::Attention)
    return attention.q_len * attention.kv_len * (attention.head_dim + attention.value_dim);
  if (kind == KernelKind::Scan) return domain[scan.axis];
  const int inner = reduce_axis >= 0 ? reduce_axis : static_cast<int>(domain.size()) - 1;
  const ir::Expr per_row = domain[inner] * ir::Expr(static_cast<int64_t>(std::max<size_t>(1, reductions.size() + 1)));
  return lane_axis >= 0 ? per_row * ir::Expr(lane_run()) : per_row;
}

bool Kernel::gemv_strips() const {
  // Params: a, the weight, out, then a grouped weight's scales and zero points.
  if (kind != KernelKind::Gemv || gemv.columns || params.size() < 3 || domain.size() < 2 ||
      is_one(domain[domain.size() - 2]))
    return false;
  const ir::DType a = params[0].dtype, weight = params[1].dtype;
  // a, the weight, out (and the bias, the output's scale)
  const size_t operands = 3 + (gemv.has_bias ? 1 : 0) + (gemv.has_output_scale ? 1 : 0);
  // bf16 activations times an int8 or group-quantized weight: `a` packed once per call, as
  // bf16 pairs or widened to f32 (lm_pack_bf16_strips).
  if (a == ir::DType::BF16)
    return domain.size() == 2 &&
           ((weight == ir::DType::I8 && (gemv.group > 0 ? params[3].dtype == ir::DType::BF16 : params.size() == operands)) ||
            (weight == ir::DType::BF16 && gemv.bf16_pairs && params.size() == operands));
  if (a != ir::DType::F32) return false;
  return gemv.group > 0 ? params[3].dtype == ir::DType::F32
                        : params.size() == operands && (weight == ir::DType::F32 || weight == ir::DType::I8);
}

std::vector<int64_t> tile_candidates(const Kernel& kernel) {
  // Both neighbours of the default: half and twice the rows.
  if (kernel.kind == KernelKind::Gemv) {
    // The strips' six weight rows fill the registers; fewer spill (lm_tile_strips).
    if (kernel.gemv.columns || kernel.gemv_strips()) return {};
    const ir::Expr& rows = kernel.domain.back();
    if (rows.is_constant() && rows.constant_value() <= kGemvRows / 2) return {};
    return {kGemvRows / 2, kGemvRows * 2};
  }
  if (kernel.kind == KernelKind::Attention) {
    // Every tile covers a head of at most half the default's rows in one block.
    const ir::Expr& rows = kernel.attention.q_len;
    if (rows.is_constant() && rows.constant_value() <= kAttentionRows / 2) return {};
    return {kAttentionRows / 2, kAttentionRows * 2};
  }
  return {};
}

}  // namespace luminal::codegen
