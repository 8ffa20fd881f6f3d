// reflection_pad{1,2,3}d and replication_pad{1,2,3}d: one Gather per padded dim whose index is
// Iota arithmetic over the output positions (the IR's views have no negative strides, so a
// mirrored border cannot be a view). With i = o - left:
//   reflect:   size-1 - |size-1 - |i||   (mirror at both edges, edge element not repeated)
//   replicate: clamp(i, 0, size-1)
// Negative pads crop, as in torch. padding lists (left, right) pairs from the last dim back.
#include "common/error.h"
#include "translator/handlers.h"
#include "translator/spatial.h"

namespace luminal::translator {

using ir::Op;

namespace {

enum class PadMode { Reflect, Replicate };

Tensor source_positions(TranslationContext& cx, int64_t size, int64_t left, int64_t out, PadMode mode) {
  Tensor i = binary(cx, Op::Sub, positions(cx, out), int_constant(cx, left));
  if (mode == PadMode::Replicate)
    return binary(cx, Op::Min, binary(cx, Op::Max, i, int_constant(cx, 0)), int_constant(cx, size - 1));
  Tensor mirrored_left = unary(cx, Op::Abs, i);
  Tensor last = int_constant(cx, size - 1);
  return binary(cx, Op::Sub, last, unary(cx, Op::Abs, binary(cx, Op::Sub, last, mirrored_left)));
}

void pad(NodeArgs& args, int k, PadMode mode, const char* op) {
  TranslationContext& cx = args.cx();
  Tensor out = args.tensor("self");
  const std::vector<int64_t> padding = args.integers("padding");
  USER_CHECK(static_cast<int>(padding.size()) == 2 * k) << op << " needs " << 2 * k << " padding values, got "
                                                         << padding.size();
  USER_CHECK(out.rank() == k + 1 || out.rank() == k + 2)
      << op << " expects a " << k + 1 << "d or " << k + 2 << "d input, got shape " << shape_to_string(out.shape());
  for (int i = 0; i < k; ++i) {
    const int dim = out.rank() - 1 - i;
    const int64_t left = padding[2 * i], right = padding[2 * i + 1];
    if (left == 0 && right == 0) continue;
    const int64_t size = static_dim(out, dim, op);
    const int64_t out_size = size + left + right;
    USER_CHECK(out_size >= 0) << op << ": padding (" << left << ", " << right << ") of a dim of size " << size;
    if (mode == PadMode::Reflect) {
      USER_CHECK(left < size && right < size) << op << ": padding (" << left << ", " << right
                                              << ") must be smaller than the dim's size " << size;
    } else {
      USER_CHECK(size > 0) << op << ": cannot replicate an empty dim";
    }
    if (out_size == 0) {
      ir::Shape shape = out.shape();
      shape[dim] = ir::Expr(int64_t{0});
      out = constant(cx, ir::Scalar::of_int(0), out.dtype, shape);
      continue;
    }
    out = gather(cx, out, dim, index_along(source_positions(cx, size, left, out_size, mode), dim, out.shape()));
  }
  args.set_output(0, out);
}

}  // namespace

void translate_reflection_pad1d(NodeArgs& args) { pad(args, 1, PadMode::Reflect, "reflection_pad1d"); }
void translate_reflection_pad2d(NodeArgs& args) { pad(args, 2, PadMode::Reflect, "reflection_pad2d"); }
void translate_reflection_pad3d(NodeArgs& args) { pad(args, 3, PadMode::Reflect, "reflection_pad3d"); }
void translate_replication_pad1d(NodeArgs& args) { pad(args, 1, PadMode::Replicate, "replication_pad1d"); }
void translate_replication_pad2d(NodeArgs& args) { pad(args, 2, PadMode::Replicate, "replication_pad2d"); }
void translate_replication_pad3d(NodeArgs& args) { pad(args, 3, PadMode::Replicate, "replication_pad3d"); }

}  // namespace luminal::translator
