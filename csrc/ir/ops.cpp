#include "ir/ops.h"

namespace luminal::ir {

namespace {
struct OpInfo {
  const char* name;
  int arity;
  uint32_t traits;
};

constexpr OpInfo kOpInfos[] = {
#define LUMINAL_OP(name, arity, traits) {#name, arity, traits},
#include "ir/ops.def"
#undef LUMINAL_OP
};
}  // namespace

const char* op_name(Op op) { return kOpInfos[static_cast<int>(op)].name; }
int op_arity(Op op) { return kOpInfos[static_cast<int>(op)].arity; }
uint32_t op_traits(Op op) { return kOpInfos[static_cast<int>(op)].traits; }

}  // namespace luminal::ir
