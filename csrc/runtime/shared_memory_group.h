// Collectives between the ranks of a process group that all run on one host, through a shared
// memory segment instead of the group's transport: a 4 KB all_reduce through gloo's loopback TCP
// takes 1.2 ms on a 2-core machine, here a few microseconds. Used by the collectives' executor
// for CPU buffers when every rank of the group has mapped the segment (bootstrapped through the
// group itself); everything else goes through the process group.
//
// Protocol: each rank owns one slot per parity of the call counter. Call n (counted per group,
// every rank issues the group's collectives in the same order, as torch requires) writes this
// rank's contribution into slot (n % 2, rank) and publishes n; its completion waits until every
// rank published n, combines the slots in rank order (so every rank computes bit-identical
// results) and marks n consumed. A rank writes slot parity p for call n only once every rank has
// consumed call n - 2, the slot's previous use.
//
// Needs: rank in [0, size); every rank's segment of identical geometry. Guarantees: a wait never
// outlasts `timeout`, and a peer whose process exited is detected within ~50 ms: both are
// UserErrors naming the group. Not thread-safe: one thread issues a group's collectives.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "ir/dtype.h"

namespace luminal::runtime {

class SharedMemoryGroup {
 public:
  // Slot size: collectives whose per-rank contribution is larger go through the process group.
  static constexpr size_t kSlotBytes = size_t{4} << 20;

  // Rank 0 creates the segment (`create`), the others open it. nullptr when shared memory is
  // unavailable (no /dev/shm, out of space): the caller falls back to the process group.
  static std::unique_ptr<SharedMemoryGroup> map(const std::string& name, bool create, int rank, int size,
                                                std::chrono::milliseconds timeout, std::string group);
  // Rank 0, once every rank has mapped it: the name goes, the memory stays until the last unmap.
  void unlink_name() const;
  ~SharedMemoryGroup();

  int rank() const { return rank_; }
  int size() const { return size_; }

  enum class Combine { Sum, Max, Min, Product, Gather };
  static bool can_reduce(const std::string& reduce_op, ir::DType dtype);

  // Starts the group's next collective: `fill` writes this rank's `bytes` into the slot it is
  // given; the result (`bytes` for a reduction, size * bytes for a gather) goes to `output`
  // when the call completes. Returns the call's number.
  uint64_t start(size_t bytes, ir::DType dtype, Combine combine, void* output,
                 const std::function<void(void* slot)>& fill);
  // Completes every call up to `call` (in order), writing their outputs.
  void complete(uint64_t call);

 private:
  struct Pending {
    uint64_t call;
    size_t bytes;
    ir::DType dtype;
    Combine combine;
    void* output;
  };
  SharedMemoryGroup(void* base, size_t length, int rank, int size, std::chrono::milliseconds timeout,
                    std::string group, std::string name);
  std::byte* slot(uint64_t call, int rank) const;
  // Spins (then sleeps) until every rank's counter (published or consumed) reaches `value`.
  void wait_for_all(bool published, uint64_t value) const;
  void finish(const Pending& p);

  void* base_;
  size_t length_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::string group_, name_;
  uint64_t next_call_ = 1;
  std::deque<Pending> pending_;
};

}  // namespace luminal::runtime
