// Kernel IR -> one C++ function.
//
// Every kernel has the signature
//   extern "C" int64_t NAME(void* const* params, const int64_t* symbols, int64_t begin,
//                           int64_t end, int64_t* info)
// and computes work items [begin, end) of Kernel::parallel_extent(), so the runtime's thread
// pool splits the outer loops (no OpenMP runtime: torch brings its own libgomp). `symbols`
// holds the values of Kernel::symbols(), in that order. It returns 0, or an error code with
// details in info[0..1]: 1 gather index out of range (index, size), 2 max/min over an empty
// axis, 3 integer division by zero, 4 no memory for scratch buffers (the attention kernel), 5 a
// strip GEMV of symbolic rows called with more than kF32GemvRows (the runtime never does).
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel.h"

namespace luminal::codegen::cpp {

enum KernelStatus : int64_t {
  kKernelOk = 0,
  kKernelIndexOutOfRange = 1,
  kKernelEmptyReduction = 2,
  kKernelDivisionByZero = 3,
  kKernelOutOfMemory = 4,
  kKernelTooManyRows = 5,
};

// The C variable a symbolic dim's value is read into ("S_s0"), and an index expression over
// those variables (floor division and modulo through the prelude's lm_floordiv/lm_floormod).
// Shared with the CUDA emitter, whose prelude defines the same helpers.
std::string symbol_var(const std::string& name);
std::string expr_text(const ir::Expr& e);

// Source-text edits both emitters make to the op table's templates: whether identifier `name`
// occurs in `text` as a whole identifier; every `from` replaced by `to`; every whole identifier
// `name` replaced by `to`.
bool mentions(const std::string& text, const std::string& name);
void replace_all(std::string& text, const std::string& from, const std::string& to);
void replace_identifier(std::string& text, const std::string& name, const std::string& to);

// Loop-kernel pieces both emitters share. `inner` is the loop dim a row kernel reduces over (or
// the innermost dim); loop variables are i<d>.
// Whether an index stays the same along a row kernel's reduce axis.
bool index_per_row(const Kernel& kernel, const Index& index);
// For each value, whether a row kernel computes it once per row rather than per element.
std::vector<bool> per_row_values(const Kernel& kernel, bool row_kernel);
// The dim a row kernel should reduce its rows side by side along (Kernel::lane_axis), or -1: a
// reduce axis its inputs are not contiguous along, a dim they are (the innermost other dim of
// more than one index), and a kernel whose reductions all run in one pass (no reduction reads
// another's result) and whose stores are all per row (no pass after the reductions).
int column_lane_axis(const Kernel& kernel);
// The element offset of `index` over the loop variables; `row_scope`: code outside the inner loop.
std::string index_text(const Kernel& kernel, const Index& index, int inner, bool row_scope);
// An IotaAt value's integer: the loop variable itself in the common contiguous case.
std::string iota_text(const Kernel& kernel, const Value& value, int inner, bool row_scope);

class CppOpTable;
// One row of a scan kernel (ScanSpec), its other dims' loop variables already declared: the
// running sum in ScanSpec::accumulate and one sequential loop along the axis that stores it,
// converted to the output dtype, at every element. `table` spells the values for the target.
std::string scan_row(const Kernel& kernel, const CppOpTable& table, const std::string& indent);

// The function's source, named `name`. Deterministic: the same kernel gives the same text, so
// that identical layers hash to one binary.
std::string emit_kernel(const Kernel& kernel, const std::string& name);

}  // namespace luminal::codegen::cpp
