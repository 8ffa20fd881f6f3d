// The collectives' seam: runtimes issue a Collective node through an executor that the Python
// module registers (it calls torch's process groups), so the core never includes torch.
//
// Needs: a registered executor (luminal._C registers the c10d one when imported) and, when a
// collective runs, a process group of that name in torch's registry.
// Guarantees: start_collective issues the collective and returns its handle; the result is in
// `output` once the handle's wait() returns, and the input buffer is read until then. A handle
// destroyed without wait() still waits (ignoring failures): buffers are never reused while a
// collective may write them. Failures (no such group, a peer that died, the group's timeout)
// are luminal errors naming the collective. With no executor it throws UnsupportedError.
#pragma once

#include <memory>
#include <string>

#include "ir/collective.h"
#include "ir/expr.h"
#include "runtime/runtime.h"

namespace luminal::runtime {

class InFlightCollective {
 public:
  virtual ~InFlightCollective() = default;
  // Blocks until the collective is complete and its result is in the output buffer.
  virtual void wait() = 0;
};

class CollectiveExecutor {
 public:
  virtual ~CollectiveExecutor() = default;
  // `input` is this rank's contribution read through its view; `output` is contiguous, of the
  // node's dtype and shape. start_collective has checked the group's size first.
  virtual std::unique_ptr<InFlightCollective> start(const ir::Collective& collective, const BufferRef& input,
                                                    const BufferRef& output,
                                                    const ir::SymbolBindings& bindings) const = 0;
  // The size of the process group `group_name`; UserError when torch's registry has none by
  // that name (the process group is not initialised, or was destroyed).
  virtual int64_t group_size(const std::string& group_name) const = 0;
};

// Installs the process-wide executor (not owned; it must outlive every compiled model).
void set_collective_executor(const CollectiveExecutor* executor);

// Checks, as every call must (the group may have been destroyed since the compile), that the
// group exists with the size the program assumed, then issues the collective.
std::unique_ptr<InFlightCollective> start_collective(const ir::Collective& collective, const BufferRef& input,
                                                     const BufferRef& output, const ir::SymbolBindings& bindings);

// Checked when a program with collectives is compiled: every group exists now, with the size
// the program's shapes assume. UserError naming the collective otherwise.
void check_collective_group(const ir::Collective& collective, const std::string& origin);

}  // namespace luminal::runtime
