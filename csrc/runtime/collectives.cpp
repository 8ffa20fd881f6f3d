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

namespace {
// The group exists now and has the size the program's shapes assume; errors start with `what`.
void check_group(const ir::Collective& collective, const std::string& what) {
  int64_t size = 0;
  try {
    size = executor_for(collective).group_size(collective.group_name);
  } catch (Error& e) {
    e.add_context(what);
    throw;
  }
  USER_CHECK(collective.group_size == 0 || collective.group_size == size)
      << what << " was traced for a group of " << collective.group_size << " ranks, but that group has " << size
      << " now; recompile in a process whose process group matches the one the model was traced with";
}
}  // namespace

std::unique_ptr<InFlightCollective> start_collective(const ir::Collective& collective, const BufferRef& input,
                                                     const BufferRef& output, const ir::SymbolBindings& bindings) {
  check_group(collective, collective.describe());
  return executor_for(collective).start(collective, input, output, bindings);
}

void check_collective_group(const ir::Collective& collective, const std::string& origin) {
  check_group(collective, collective.describe() + " (" + origin + ")");
}

}  // namespace luminal::runtime
