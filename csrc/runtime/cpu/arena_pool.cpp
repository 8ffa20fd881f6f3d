#include "runtime/cpu/arena_pool.h"

#include <algorithm>
#include <new>

namespace luminal::runtime::cpu {

namespace {
constexpr std::align_val_t kAlignment{64};
}  // namespace

Arena::~Arena() {
  if (data) ::operator delete[](data, kAlignment);
}

void Arena::reserve(size_t bytes) {
  if (bytes <= capacity && data) return;
  if (data) ::operator delete[](data, kAlignment);
  data = nullptr;
  capacity = std::max<size_t>(bytes, 64);
  data = static_cast<std::byte*>(::operator new[](capacity, kAlignment));
}

std::shared_ptr<ArenaPool> ArenaPool::shared() {
  static std::mutex mutex;
  static std::weak_ptr<ArenaPool> current;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<ArenaPool> pool = current.lock();
  if (!pool) {
    pool = std::make_shared<ArenaPool>();
    current = pool;
  }
  return pool;
}

ArenaPool::Lease ArenaPool::take(size_t bytes) {
  std::unique_ptr<Arena> arena;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The largest: a small call must not grow a second arena while a big one lies free.
    auto largest = std::max_element(free_.begin(), free_.end(),
                                    [](const auto& a, const auto& b) { return a->capacity < b->capacity; });
    if (largest != free_.end()) {
      arena = std::move(*largest);
      free_.erase(largest);
    }
  }
  if (!arena) arena = std::make_unique<Arena>();
  arena->reserve(bytes);
  return Lease(*this, std::move(arena));
}

std::vector<size_t> ArenaPool::free_capacities() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<size_t> capacities;
  for (const auto& arena : free_) capacities.push_back(arena->capacity);
  return capacities;
}

ArenaPool::Lease::~Lease() {
  std::lock_guard<std::mutex> lock(pool_.mutex_);
  pool_.free_.push_back(std::move(arena_));
}

}  // namespace luminal::runtime::cpu
