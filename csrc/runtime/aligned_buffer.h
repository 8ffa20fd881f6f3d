// A buffer for one run (a reference node's, a cpu intermediate sized by a data symbol), 64-byte
// aligned so that library and vector code can use it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>

namespace luminal::runtime {

class AlignedBuffer {
 public:
  static constexpr std::align_val_t kAlignment{64};

  AlignedBuffer() = default;
  // A zero-byte request still gets a distinct pointer, so that empty tensors need no special case.
  explicit AlignedBuffer(size_t bytes)
      : data_(static_cast<std::byte*>(::operator new[](std::max<size_t>(bytes, 1), kAlignment))) {}

  std::byte* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, kAlignment); }
  };
  std::unique_ptr<std::byte[], Free> data_;
};

}  // namespace luminal::runtime
