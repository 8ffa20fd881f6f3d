#include "bindings/large_output_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace luminal::bindings {
namespace {

constexpr size_t kPage = 4096;

// Each live mapping's length by its start, and the last one freed, kept for the next output
// that fits it. The data pointers this allocator returns are "simple" (their context is the
// data itself), as torch's own are: copy-on-write clones (torch._lazy_clone) accept only those.
struct Mappings {
  std::mutex mutex;
  std::unordered_map<void*, size_t> lengths;
  void* kept = nullptr;
  size_t kept_length = 0;
};

Mappings& mappings() {
  static auto* all = new Mappings;  // never destroyed: a tensor may be freed during exit
  return *all;
}

// Keeps the mapping for reuse, unmapping the one kept before.
void release(void* start) {
  Mappings& all = mappings();
  void* unmapped = nullptr;
  size_t unmapped_length = 0;
  {
    std::lock_guard<std::mutex> lock(all.mutex);
    const auto found = all.lengths.find(start);
    unmapped = all.kept;
    unmapped_length = all.kept_length;
    all.kept = start;
    all.kept_length = found->second;
    all.lengths.erase(found);
  }
  if (unmapped != nullptr) munmap(unmapped, unmapped_length);
}

// The kept mapping if it holds `length` bytes and is at most twice that (so that a small
// output does not pin a large one's memory), else nullptr, the kept one unmapped.
void* reuse(size_t length) {
  Mappings& all = mappings();
  void* unmapped = nullptr;
  size_t unmapped_length = 0;
  {
    std::lock_guard<std::mutex> lock(all.mutex);
    if (all.kept != nullptr && all.kept_length >= length && all.kept_length / 2 <= length) {
      void* start = all.kept;
      all.lengths.emplace(start, all.kept_length);
      all.kept = nullptr;
      return start;
    }
    unmapped = all.kept;
    unmapped_length = all.kept_length;
    all.kept = nullptr;
  }
  if (unmapped != nullptr) munmap(unmapped, unmapped_length);
  return nullptr;
}

class LargeOutputAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    if (n < kLargeOutputBytes) return c10::GetCPUAllocator()->allocate(n);
    const size_t length = (n + kPage - 1) / kPage * kPage;
    if (void* kept = reuse(length)) return {kept, kept, &release, c10::Device(c10::DeviceType::CPU)};
    void* data = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // Out of address space: torch's allocator raises its own out-of-memory error.
    if (data == MAP_FAILED) return c10::GetCPUAllocator()->allocate(n);
    {
      Mappings& all = mappings();
      std::lock_guard<std::mutex> lock(all.mutex);
      all.lengths.emplace(data, length);
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

}  // namespace

size_t large_output_bytes_kept() {
  Mappings& all = mappings();
  std::lock_guard<std::mutex> lock(all.mutex);
  return all.kept == nullptr ? 0 : all.kept_length;
}

c10::Allocator* large_output_allocator() {
  static LargeOutputAllocator allocator;
  return &allocator;
}

}  // namespace luminal::bindings
