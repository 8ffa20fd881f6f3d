// aten::scaled_dot_product_attention, kept whole by luminal's decomposition table
// (python/luminal/decompositions.py) so that the runtime sees attention as one pattern.
// Lowered here to torch's math reference: softmax(q k^T * scale + bias) v.
#include <cmath>
#include <optional>
#include <utility>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/tensor_ops.h"

namespace luminal::translator {

namespace {

using ir::DType;
using ir::Expr;
using ir::Op;
using ir::Scalar;

// Softmax over the last dim where a row with every score at -inf gives zeros, not NaN, as
// torch's _safe_softmax does for fully masked rows (a padded query row in BERT).
Tensor safe_softmax_last_dim(TranslationContext& cx, const Tensor& scores) {
  const Tensor row_max = reduce(cx, Op::MaxReduce, scores, {-1}, /*keepdim=*/true);
  const Tensor neg_inf = constant(cx, Scalar::of_float(-INFINITY), scores.dtype);
  const Tensor zero = constant(cx, Scalar::of_float(0.0), scores.dtype);
  const Tensor fully_masked = binary(cx, Op::Eq, row_max, neg_inf);
  const Tensor shift = where(cx, fully_masked, zero, row_max);
  const Tensor exps = unary(cx, Op::Exp, binary(cx, Op::Sub, scores, shift));
  const Tensor sums = reduce(cx, Op::SumReduce, exps, {-1}, /*keepdim=*/true);
  const Tensor one = constant(cx, Scalar::of_float(1.0), scores.dtype);
  const Tensor safe_sums = where(cx, binary(cx, Op::Eq, sums, zero), one, sums);
  return binary(cx, Op::Div, exps, safe_sums);
}

// [L, S] additive bias of the causal mask: 0 where s <= l, -inf above the diagonal (torch
// aligns the mask top-left: tril(ones(L, S))).
Tensor causal_bias(TranslationContext& cx, const Expr& L, const Expr& S, DType dtype) {
  const Tensor rows = unsqueeze(iota(cx, L, DType::I64), 1);
  const Tensor cols = unsqueeze(iota(cx, S, DType::I64), 0);
  const Tensor allowed = binary(cx, Op::Le, cols, rows);
  return where(cx, allowed, constant(cx, Scalar::of_float(0.0), dtype), constant(cx, Scalar::of_float(-INFINITY), dtype));
}

// A bool mask becomes 0 / -inf; a float mask is added as is.
Tensor mask_bias(TranslationContext& cx, const Tensor& mask, DType dtype) {
  if (mask.dtype == DType::Bool)
    return where(cx, mask, constant(cx, Scalar::of_float(0.0), dtype), constant(cx, Scalar::of_float(-INFINITY), dtype));
  return cast(cx, mask, dtype);
}

// K/V with Hk heads serve Hq = G*Hk query heads (GQA). Rather than repeating K/V, group the
// queries: q [.., Hq, L, E] -> [.., Hk, G, L, E] and broadcast K/V over G with a stride-0 view.
Tensor group_heads(TranslationContext& cx, const Tensor& t, const Expr& kv_heads, const Expr& group) {
  std::vector<Expr> shape(t.shape().begin(), t.shape().end());
  const size_t h = shape.size() - 3;
  shape[h] = kv_heads;
  shape.insert(shape.begin() + static_cast<long>(h) + 1, group);
  return reshape(cx, t, shape);
}

// HF's repeat_kv (expand -> clone -> view) hands attention K/V with each of Hk heads copied G
// times: a Copy of a view with stride 0 along G, then a view merging Hk and G. The Copy's source,
// read once per KV head with the queries grouped as for enable_gqa, gives the same values
// without writing G copies of the whole cache every decode step (9% of an int8 Llama decode).
// Returns that source [.., Hk, S, E] and G, or nullopt when `t` is not such a repeat.
std::optional<std::pair<Tensor, int64_t>> unrepeated_heads(TranslationContext& cx, const Tensor& t) {
  const int rank = t.rank();
  if (rank < 3 || !t.ref.view.is_contiguous()) return std::nullopt;
  const ir::Node& copy = cx.graph().node(t.ref.node);
  if (copy.op != Op::Copy || copy.shape.size() != static_cast<size_t>(rank) + 1) return std::nullopt;
  const size_t h = static_cast<size_t>(rank) - 3;  // the heads dim of t; h + 1 is G in the Copy
  const ir::View& repeated = copy.inputs[0].view;
  const Expr& group = copy.shape[h + 1];
  if (!group.is_constant() || group.constant_value() < 2 || !ir::is_zero(repeated.strides()[h + 1])) {
    return std::nullopt;
  }
  for (size_t d = 0; d < h; ++d)
    if (!(copy.shape[d] == t.shape()[d])) return std::nullopt;
  if (!(copy.shape[h] * group == t.shape()[h]) || !(copy.shape[h + 2] == t.shape()[h + 1]) ||
      !(copy.shape[h + 3] == t.shape()[h + 2])) {
    return std::nullopt;
  }
  Tensor source{ir::TensorRef{copy.inputs[0].node, repeated.select(static_cast<int>(h) + 1, Expr(int64_t{0}))},
                t.dtype};
  return std::make_pair(source, group.constant_value());
}

}  // namespace

void translate_scaled_dot_product_attention(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor q = args.tensor("query");
  Tensor k = args.tensor("key");
  Tensor v = args.tensor("value");
  const std::optional<Tensor> attn_mask = args.optional_tensor("attn_mask");
  const bool is_causal = args.boolean("is_causal");
  const bool enable_gqa = args.has("enable_gqa") && args.boolean("enable_gqa");
  UNSUPPORTED_CHECK(args.floating("dropout_p") == 0.0)
      << "dropout_p=" << args.floating("dropout_p")
      << " inside the fused attention op is not translated; for inference call model.eval() (training graphs, with "
         "grad enabled, compute attention as its math, where dropout is native)";
  USER_CHECK(!(is_causal && attn_mask)) << "is_causal=True together with an attn_mask (torch rejects this too)";
  USER_CHECK(q.rank() >= 3 && k.rank() == q.rank() && v.rank() == q.rank())
      << "query, key and value must share a rank >= 3, got " << q.rank() << ", " << k.rank() << ", " << v.rank();

  // K and V repeated alike by repeat_kv are read unrepeated, grouped as enable_gqa would group them.
  bool repeated_kv = false;
  if (q.shape()[q.rank() - 3] == k.shape()[k.rank() - 3]) {
    const auto unrepeated_k = unrepeated_heads(cx, k);
    const auto unrepeated_v = unrepeated_heads(cx, v);
    if (unrepeated_k && unrepeated_v && unrepeated_k->second == unrepeated_v->second) {
      k = unrepeated_k->first;
      v = unrepeated_v->first;
      repeated_kv = true;
    }
  }

  const DType out_dtype = q.dtype;
  // f16/bf16 attention accumulates in f32, as torch's CPU flash kernel does.
  const DType compute = (out_dtype == DType::F16 || out_dtype == DType::BF16) ? DType::F32 : out_dtype;
  q = cast(cx, q, compute);
  k = cast(cx, k, compute);
  v = cast(cx, v, compute);

  const int rank = q.rank();
  const Expr L = q.shape()[rank - 2];  // by value: q, k and v are reassigned below
  const Expr S = k.shape()[rank - 2];
  const Expr E = q.shape()[rank - 1];
  double scale = 0;
  if (args.has("scale") && !args.is_none("scale")) {
    scale = args.floating("scale");
  } else {
    USER_CHECK(E.is_constant()) << "the head dim must be static to derive the default scale";
    scale = 1.0 / std::sqrt(static_cast<double>(E.constant_value()));
  }

  Tensor bias;
  bool has_bias = false;
  if (is_causal) {
    bias = causal_bias(cx, L, S, compute);
    has_bias = true;
  } else if (attn_mask) {
    bias = mask_bias(cx, *attn_mask, compute);
    has_bias = true;
  }

  const Expr q_heads = q.shape()[rank - 3];
  const Expr kv_heads = k.shape()[rank - 3];
  const bool grouped = (enable_gqa || repeated_kv) && q_heads != kv_heads;
  if (grouped) {
    USER_CHECK(q_heads.is_constant() && kv_heads.is_constant() &&
               q_heads.constant_value() % kv_heads.constant_value() == 0)
        << "enable_gqa: " << q_heads.to_string() << " query heads are not a multiple of " << kv_heads.to_string()
        << " key/value heads";
    const Expr group(q_heads.constant_value() / kv_heads.constant_value());
    q = group_heads(cx, q, kv_heads, group);
    k = unsqueeze(k, rank - 2);
    v = unsqueeze(v, rank - 2);
    // A per-head bias [.., Hq, L, S] splits its heads like the queries; a shared one gets a
    // size-1 group dim so that it still lines up with the grouped scores.
    if (has_bias && bias.rank() >= 3) {
      const bool per_head = !(bias.shape()[bias.rank() - 3] == Expr(1));
      bias = per_head ? group_heads(cx, bias, kv_heads, group) : unsqueeze(bias, bias.rank() - 2);
    }
  }

  const Tensor scale_value = constant(cx, Scalar::of_float(scale), compute);
  Tensor scores = binary(cx, Op::Mul, matmul(cx, q, transpose(k, -2, -1)), scale_value);
  if (has_bias) scores = binary(cx, Op::Add, scores, bias);
  Tensor out = matmul(cx, safe_softmax_last_dim(cx, scores), v);
  if (grouped) {
    std::vector<Expr> shape(out.shape().begin(), out.shape().end());
    const size_t h = shape.size() - 4;
    shape[h] = q_heads;
    shape.erase(shape.begin() + static_cast<long>(h) + 1);
    out = reshape(cx, out, shape);
  }
  args.set_output(0, cast(cx, out, out_dtype));
}

}  // namespace luminal::translator
