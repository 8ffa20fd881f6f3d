#include "runtime/cpu/int4_pairs.h"

#include "common/error.h"
#include "runtime/buffer_layout.h"

namespace luminal::runtime::cpu {

std::shared_ptr<const Int4Pairs> pack_int4_pairs(const BufferRef& weight) {
  INTERNAL_CHECK(weight.dtype == ir::DType::I8 && weight.sizes.size() == 2 &&
                 weight.sizes[1] % kInt4PairBlock == 0)
      << "int4 pairs of a " << ir::dtype_name(weight.dtype) << " weight of sizes " << sizes_text(weight.sizes);
  if (!is_dense(weight)) return nullptr;
  const int64_t values = element_count(weight.sizes);
  auto pairs = std::make_shared<Int4Pairs>();
  pairs->bytes = values / 2;
  pairs->data = AlignedBuffer(static_cast<size_t>(pairs->bytes));
  const auto* q = static_cast<const int8_t*>(weight.data);
  auto* out = reinterpret_cast<uint8_t*>(pairs->data.data());
  // q + 8 of every value ORed together: no bit above the fourth, all in [-8, 8).
  uint8_t above = 0;
  for (int64_t block = 0; block < values; block += kInt4PairBlock) {
    const int8_t* low = q + block;
    const int8_t* high = low + kInt4PairBlock / 2;
    uint8_t* packed = out + block / 2;
    for (int i = 0; i < kInt4PairBlock / 2; ++i) {
      above |= static_cast<uint8_t>(low[i] + 8) | static_cast<uint8_t>(high[i] + 8);
      packed[i] = static_cast<uint8_t>((low[i] & 15) | ((high[i] & 15) << 4));
    }
  }
  if ((above & 0xf0) != 0) return nullptr;
  return pairs;
}

}  // namespace luminal::runtime::cpu
