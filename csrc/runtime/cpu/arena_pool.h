// The arenas CPU executables run their intermediates in, pooled for the whole process.
//
// A call takes a free arena, grows it to its plan's size if needed, and gives it back when it
// ends. The pool is shared by every executable: a model's graphs run one after another (a
// training step's forward and backward graphs, a decode loop's prefill and step graphs), so
// one arena sized to the largest of them serves all, where an arena per executable kept each
// graph's intermediates resident between its calls (a GPT-2 training step held four, 1.6 GB,
// beside autograd's saved tensors). Concurrent calls take distinct arenas. The pool lives while
// an executable holds it: once every compiled model is gone, so is its memory.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace luminal::runtime::cpu {

struct Arena {
  std::byte* data = nullptr;
  size_t capacity = 0;
  std::vector<void*> params;  // a step's kernel arguments, rebuilt per step

  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();
  // At least `bytes` of data; the old contents are not kept.
  void reserve(size_t bytes);
};

class ArenaPool {
 public:
  // The process's pool, made when the first executable asks and freed after the last lets go.
  static std::shared_ptr<ArenaPool> shared();

  // An arena for one call, given back to the pool however the call ends.
  class Lease {
   public:
    Lease(ArenaPool& pool, std::unique_ptr<Arena> arena) : pool_(pool), arena_(std::move(arena)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    Arena& arena() { return *arena_; }

   private:
    ArenaPool& pool_;
    std::unique_ptr<Arena> arena_;
  };

  // The largest free arena (a new one if none is free), grown to `bytes`.
  Lease take(size_t bytes);
  // The capacities of the arenas not in use.
  std::vector<size_t> free_capacities();

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Arena>> free_;
};

}  // namespace luminal::runtime::cpu
