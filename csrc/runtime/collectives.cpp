#include "runtime/collectives.h"

#include <atomic>

#include "common/error.h"

namespace luminal::runtime {

namespace {
std::atomic<const CollectiveExecutor*> g_executor{nullptr};

const CollectiveExecutor& executor_for(const ir::Collective& collective) {
  const CollectiveExecutor* executor = g_executor.load();
  UNSUPPORTED_CHECK(executor != nullptr)
      << collective.describe() << " needs torch.distributed, through the luminal Python module (luminal._C) "
      << "loaded in this process";
  return *executor;
}
}  // namespace

void set_collective_executor(const CollectiveExecutor* executor) { g_executor.store(executor); }

std::unique_ptr<InFlightCollective> start_collective(const ir::Collective& collective, const BufferRef& input,
                                                     const BufferRef& output, const ir::SymbolBindings& bindings) {
  return executor_for(collective).start(collective, input, output, bindings);
}

void check_collective_group(const ir::Collective& collective, const std::string& origin) {
  int64_t size = 0;
  try {
    size = executor_for(collective).group_size(collective.group_name);
  } catch (Error& e) {
    e.add_context(collective.describe() + " (" + origin + ")");
    throw;
  }
  USER_CHECK(collective.group_size == 0 || collective.group_size == size)
      << collective.describe() << " (" << origin << ") was traced for a group of " << collective.group_size
      << " ranks, but that group has " << size
      << " now; recompile in a process whose process group matches the one the model was traced with";
}

}  // namespace luminal::runtime
