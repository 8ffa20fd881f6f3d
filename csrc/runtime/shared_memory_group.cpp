#include "runtime/shared_memory_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/half.h"

namespace luminal::runtime {
namespace {

// One rank's counters and pid, each on its own cache line: ranks spin on each other's.
struct RankState {
  alignas(64) std::atomic<uint64_t> published;
  alignas(64) std::atomic<uint64_t> consumed;
  alignas(64) int64_t pid;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory counters must be lock-free");

constexpr size_t kPage = 4096;

size_t header_bytes(int size) { return (sizeof(RankState) * static_cast<size_t>(size) + kPage - 1) / kPage * kPage; }

size_t segment_bytes(int size) {
  return header_bytes(size) + 2 * static_cast<size_t>(size) * SharedMemoryGroup::kSlotBytes;
}

RankState* states(void* base) { return static_cast<RankState*>(base); }

template <typename T, typename Acc, typename Load, typename Store>
void combine_slots(SharedMemoryGroup::Combine combine, const std::byte* const* slots, int ranks, size_t count, void* out,
                   Load load, Store store) {
  using Combine = SharedMemoryGroup::Combine;
  T* result = static_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) {
    Acc acc = load(reinterpret_cast<const T*>(slots[0])[i]);
    for (int r = 1; r < ranks; ++r) {
      const Acc v = load(reinterpret_cast<const T*>(slots[r])[i]);
      switch (combine) {
        case Combine::Sum: acc = acc + v; break;
        case Combine::Product: acc = acc * v; break;
        // NaN propagates, as torch's reductions do.
        case Combine::Max: acc = (v > acc || v != v) && acc == acc ? v : acc; break;
        case Combine::Min: acc = (v < acc || v != v) && acc == acc ? v : acc; break;
        case Combine::Gather: break;
      }
    }
    result[i] = store(acc);
  }
}

template <typename T>
void combine_plain(SharedMemoryGroup::Combine combine, const std::byte* const* slots, int ranks, size_t count, void* out) {
  combine_slots<T, T>(combine, slots, ranks, count, out, [](T v) { return v; }, [](T v) { return v; });
}

// Integers wrap around as torch's do: the sum and product in unsigned arithmetic.
template <typename T>
void combine_integers(SharedMemoryGroup::Combine combine, const std::byte* const* slots, int ranks, size_t count,
                      void* out) {
  using U = std::make_unsigned_t<T>;
  if (combine == SharedMemoryGroup::Combine::Sum || combine == SharedMemoryGroup::Combine::Product) {
    combine_slots<T, U>(combine, slots, ranks, count, out, [](T v) { return static_cast<U>(v); },
                        [](U v) { return static_cast<T>(v); });
  } else {
    combine_plain<T>(combine, slots, ranks, count, out);
  }
}

}  // namespace

std::unique_ptr<SharedMemoryGroup> SharedMemoryGroup::map(const std::string& name, bool create, int rank, int size,
                                                          std::chrono::milliseconds timeout, std::string group) {
  const size_t length = segment_bytes(size);
  const int fd = shm_open(name.c_str(), create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
  if (fd < 0) return nullptr;
  // Reserve the pages now: a tmpfs out of space would otherwise kill the process (SIGBUS) at the
  // first write to a page it cannot back.
  if (create && posix_fallocate(fd, 0, static_cast<off_t>(length)) != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return nullptr;
  }
  struct stat info{};
  if (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) != length) {
    close(fd);
    return nullptr;
  }
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return nullptr;
  states(base)[rank].pid = static_cast<int64_t>(getpid());
  return std::unique_ptr<SharedMemoryGroup>(
      new SharedMemoryGroup(base, length, rank, size, timeout, std::move(group), name));
}

SharedMemoryGroup::SharedMemoryGroup(void* base, size_t length, int rank, int size, std::chrono::milliseconds timeout,
                                     std::string group, std::string name)
    : base_(base), length_(length), rank_(rank), size_(size), timeout_(timeout), group_(std::move(group)),
      name_(std::move(name)) {}

SharedMemoryGroup::~SharedMemoryGroup() {
  // Calls issued but never completed (a run that failed mid-way): nothing reads their outputs.
  munmap(base_, length_);
}

void SharedMemoryGroup::unlink_name() const { shm_unlink(name_.c_str()); }

bool SharedMemoryGroup::can_reduce(const std::string& reduce_op, ir::DType dtype) {
  const bool known = reduce_op == "sum" || reduce_op == "max" || reduce_op == "min" || reduce_op == "product";
  switch (dtype) {
    case ir::DType::F32:
    case ir::DType::F64:
    case ir::DType::F16:
    case ir::DType::BF16:
    case ir::DType::I32:
    case ir::DType::I64: return known;
    default: return false;
  }
}

std::byte* SharedMemoryGroup::slot(uint64_t call, int rank) const {
  const size_t index = static_cast<size_t>(call & 1) * static_cast<size_t>(size_) + static_cast<size_t>(rank);
  return static_cast<std::byte*>(base_) + header_bytes(size_) + index * kSlotBytes;
}

void SharedMemoryGroup::wait_for_all(bool published, uint64_t value) const {
  RankState* state = states(base_);
  const auto ready = [&] {
    for (int r = 0; r < size_; ++r) {
      const std::atomic<uint64_t>& counter = published ? state[r].published : state[r].consumed;
      if (counter.load(std::memory_order_acquire) < value) return false;
    }
    return true;
  };
  // Spin first (a peer on its own core answers within microseconds), then yield the core.
  for (int i = 0; i < 20000; ++i) {
    if (ready()) return;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  const auto start = std::chrono::steady_clock::now();
  auto next_check = start;
  while (!ready()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      next_check = now + std::chrono::milliseconds(50);
      for (int r = 0; r < size_; ++r) {
        const auto pid = static_cast<pid_t>(state[r].pid);
        USER_CHECK(r == rank_ || pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH)
            << "rank " << r << " of process group '" << group_ << "' (pid " << pid
            << ") exited while this rank waited for it in a collective";
      }
      USER_CHECK(now - start < timeout_) << "a collective on process group '" << group_ << "' waited "
                                         << timeout_.count() << " ms (the group's timeout) for its other ranks";
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

uint64_t SharedMemoryGroup::start(size_t bytes, ir::DType dtype, Combine combine, void* output,
                                  const std::function<void(void* slot)>& fill) {
  INTERNAL_CHECK(bytes <= kSlotBytes) << "a shared-memory collective of " << bytes << " bytes";
  const uint64_t call = next_call_++;
  // The slot's previous use was call - 2: complete our own, then wait for the others'.
  while (!pending_.empty() && pending_.front().call + 2 <= call) {
    finish(pending_.front());
    pending_.pop_front();
  }
  if (call > 2) wait_for_all(false, call - 2);
  fill(slot(call, rank_));
  states(base_)[rank_].published.store(call, std::memory_order_release);
  pending_.push_back(Pending{call, bytes, dtype, combine, output});
  return call;
}

void SharedMemoryGroup::complete(uint64_t call) {
  while (!pending_.empty() && pending_.front().call <= call) {
    finish(pending_.front());
    pending_.pop_front();
  }
}

void SharedMemoryGroup::finish(const Pending& p) {
  wait_for_all(true, p.call);
  std::vector<const std::byte*> slots(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) slots[static_cast<size_t>(r)] = slot(p.call, r);
  if (p.combine == Combine::Gather) {
    for (int r = 0; r < size_; ++r)
      std::memcpy(static_cast<std::byte*>(p.output) + static_cast<size_t>(r) * p.bytes, slots[static_cast<size_t>(r)],
                  p.bytes);
  } else {
    const size_t count = p.bytes / ir::dtype_size(p.dtype);
    const std::byte* const* s = slots.data();
    switch (p.dtype) {
      case ir::DType::F32: combine_plain<float>(p.combine, s, size_, count, p.output); break;
      case ir::DType::F64: combine_plain<double>(p.combine, s, size_, count, p.output); break;
      case ir::DType::I32: combine_integers<int32_t>(p.combine, s, size_, count, p.output); break;
      case ir::DType::I64: combine_integers<int64_t>(p.combine, s, size_, count, p.output); break;
      // Half precision combines in float, rounded once: every rank gets the same bits.
      case ir::DType::BF16:
        combine_slots<uint16_t, float>(p.combine, s, size_, count, p.output, bf16_to_float, float_to_bf16);
        break;
      case ir::DType::F16:
        combine_slots<uint16_t, float>(p.combine, s, size_, count, p.output, half_to_float, float_to_half);
        break;
      default: INTERNAL_ERROR() << "no shared-memory reduction for " << ir::dtype_name(p.dtype);
    }
  }
  states(base_)[rank_].consumed.store(p.call, std::memory_order_release);
}

}  // namespace luminal::runtime
