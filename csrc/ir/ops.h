// The primitive op enum and its trait queries, generated from ops.def.
#pragma once

#include <cstdint>

namespace luminal::ir {

enum OpTrait : uint32_t {
  kSource = 1u << 0,
  kElementwise = 1u << 1,
  kUnary = 1u << 2,
  kBinary = 1u << 3,
  kTernary = 1u << 4,
  kCommutative = 1u << 5,
  kComparison = 1u << 6,
  kReduction = 1u << 7,
  kContraction = 1u << 8,
  kIndexing = 1u << 9,
  kExternal = 1u << 10,
  kScan = 1u << 11,
};

// The arity of an op that takes any number of inputs (AtenCall).
constexpr int kVariadic = -1;

enum class Op {
#define LUMINAL_OP(name, arity, traits) name,
#include "ir/ops.def"
#undef LUMINAL_OP
};

const char* op_name(Op op);
int op_arity(Op op);
uint32_t op_traits(Op op);
inline bool op_has(Op op, OpTrait trait) { return (op_traits(op) & trait) != 0; }

}  // namespace luminal::ir
