// torch.distributed's functional collectives (_c10d_functional::*): each becomes a Collective
// node the runtime issues asynchronously; wait_tensor is where torch's program waits, and the
// runtime waits before the first reader of the result instead, so it is the identity here.
#include <cctype>
#include <memory>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/tensor_ops.h"

namespace luminal::translator {
namespace {

using Kind = ir::Collective::Kind;

// The reductions every backend has; "avg" and friends are backend-specific in c10d and are
// passed through for the process group to accept or refuse.
const char* const kReduceOps[] = {"sum", "avg", "product", "min", "max", "band", "bor", "bxor", "premul_sum"};

std::string reduce_op_of(const NodeArgs& args) {
  std::string op = args.string("reduce_op");
  for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool known = false;
  for (const char* k : kReduceOps) known = known || op == k;
  USER_CHECK(known) << "argument 'reduce_op'" << " is '" << op << "', not a reduction torch.distributed knows";
  return op;
}

// A Collective node computing `c` on `input` into a result of `shape`.
Tensor collective_node(NodeArgs& args, const Tensor& input, std::shared_ptr<ir::Collective> c, ir::Shape shape) {
  const std::string& name = args.overload();
  c->op = name.substr(0, name.rfind('.'));
  c->group_name = args.string("group_name");
  USER_CHECK(!c->group_name.empty()) << "argument 'group_name'" << " is empty";
  ir::Node n;
  n.op = ir::Op::Collective;
  n.dtype = input.dtype;
  n.shape = std::move(shape);
  n.inputs = {input.ref};
  n.collective = std::move(c);
  return args.cx().add(std::move(n));
}

// The collective on `input` with the result dtype and shape the program declared for output 0.
Tensor collective(NodeArgs& args, const Tensor& input, std::shared_ptr<ir::Collective> c) {
  USER_CHECK(args.output_dtype(0) == input.dtype)
      << "result '" << args.output_name(0) << "' is " << ir::dtype_name(args.output_dtype(0)) << " but the input is "
      << ir::dtype_name(input.dtype);
  return collective_node(args, input, std::move(c), args.output_shape(0));
}

// The result's dim 0 must be the input's times (or divided by) the group size the program names.
void check_dim0(const NodeArgs& args, const Tensor& input, const Tensor& result, int64_t group_size, bool gather) {
  USER_CHECK(group_size > 0) << "argument 'group_size'" << " is " << group_size;
  USER_CHECK(input.rank() >= 1 && result.rank() == input.rank())
      << args.overload() << " of a rank-" << input.rank() << " input declares a rank-" << result.rank() << " result";
  const ir::Expr expected = gather ? input.shape()[0] * ir::Expr(group_size) : result.shape()[0] * ir::Expr(group_size);
  const ir::Expr& actual = gather ? result.shape()[0] : input.shape()[0];
  // Symbolic dims are equal only up to how the archive spelled them: checked when static.
  USER_CHECK(!expected.is_constant() || !actual.is_constant() || expected == actual)
      << args.overload() << ": dim 0 of input " << shape_to_string(input.shape()) << " and result "
      << shape_to_string(result.shape()) << " do not match a group of " << group_size << " ranks";
}

// all_gather_into_tensor and reduce_scatter_tensor: dim 0 of the result is the input's times,
// or divided by, the group size.
void translate_resizing(NodeArgs& args, Kind kind) {
  auto c = std::make_shared<ir::Collective>();
  c->kind = kind;
  if (kind == Kind::ReduceScatter) c->reduce_op = reduce_op_of(args);
  c->group_size = args.integer("group_size");
  const Tensor input = args.tensor("input");
  const Tensor out = collective(args, input, c);
  check_dim0(args, input, out, c->group_size, kind == Kind::AllGather);
  args.set_output(0, out);
}

}  // namespace

void translate_c10d_all_reduce(NodeArgs& args) {
  auto c = std::make_shared<ir::Collective>();
  c->kind = Kind::AllReduce;
  c->reduce_op = reduce_op_of(args);
  const Tensor input = args.tensor("input");
  const Tensor out = collective(args, input, std::move(c));
  USER_CHECK(out.shape() == input.shape()) << args.overload() << " declares result " << shape_to_string(out.shape())
                                           << " for input " << shape_to_string(input.shape());
  args.set_output(0, out);
}

// Several tensors reduced together: one collective each (a process group runs them in order,
// and every rank issues them in the same order).
void translate_c10d_all_reduce_coalesced(NodeArgs& args) {
  const std::string op = reduce_op_of(args);
  std::vector<Tensor> results;
  const std::vector<Tensor> inputs = args.tensors("inputs");
  const pt2::Argument& out = args.node().outputs.at(0);
  USER_CHECK(out.tensors.size() == inputs.size())
      << args.overload() << " has " << inputs.size() << " inputs and " << out.tensors.size() << " results";
  for (const Tensor& input : inputs) {
    auto c = std::make_shared<ir::Collective>();
    c->kind = Kind::AllReduce;
    c->reduce_op = op;
    results.push_back(collective_node(args, input, std::move(c), input.shape()));
  }
  args.set_outputs(0, results);
}

void translate_c10d_all_gather_into_tensor(NodeArgs& args) { translate_resizing(args, Kind::AllGather); }

void translate_c10d_reduce_scatter_tensor(NodeArgs& args) { translate_resizing(args, Kind::ReduceScatter); }

void translate_c10d_all_to_all_single(NodeArgs& args) {
  auto c = std::make_shared<ir::Collective>();
  c->kind = Kind::AllToAll;
  if (!args.is_none("output_split_sizes")) c->output_split_sizes = args.sym_ints("output_split_sizes");
  if (!args.is_none("input_split_sizes")) c->input_split_sizes = args.sym_ints("input_split_sizes");
  // Sizes read from data (expert parallelism's token counts) would size the result at run time.
  for (const auto* sizes : {&c->output_split_sizes, &c->input_split_sizes})
    for (const ir::Expr& e : *sizes)
      UNSUPPORTED_CHECK(e.is_constant())
          << "all_to_all_single with split sizes known only at run time (" << e.to_string()
          << ") is not supported yet; constant split sizes are";
  args.set_output(0, collective(args, args.tensor("input"), std::move(c)));
}

void translate_c10d_broadcast(NodeArgs& args) {
  auto c = std::make_shared<ir::Collective>();
  c->kind = Kind::Broadcast;
  c->src = args.integer("src");
  args.set_output(0, collective(args, args.tensor("input"), std::move(c)));
}

void translate_c10d_wait_tensor(NodeArgs& args) { args.set_output(0, args.tensor("tensor")); }

}  // namespace luminal::translator
