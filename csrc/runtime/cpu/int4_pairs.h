// A copy of an int4 weight packed two values a byte, which a decode row's GEMV reads instead of
// the weight itself where CompileOptions::pack_int4_weights allows it (build_program.cpp):
// torchao's IntxWeightOnlyConfig keeps one int4 value in each int8 byte, so its decode GEMVs
// read as many bytes as int8's. The lookup kernel reading this layout
// (lm_int4_pair_lookup_groups, codegen/cpp/prelude.cpp) ran 54 G weights/s from memory on two
// Zen 5 cores against the byte form's 40 (docs/lessons.md, 2026-12-07), for half a byte more per
// weight held.
//
// Layout: each row's K values (K a multiple of kInt4PairBlock) in blocks of 64; byte i of a
// block (i < 32) holds the block's value i in its low four bits and value 32 + i in its high
// four, each as its two's complement nibble (q & 15). Rows are K / 2 bytes apart. The kernel
// sums the same weights in the same order as from the bytes: the same bits.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/aligned_buffer.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cpu {

constexpr int64_t kInt4PairBlock = 64;

struct Int4Pairs {
  AlignedBuffer data;
  int64_t bytes = 0;
};

// The packed copy of `weight`, an [N, K] int8 buffer (K a multiple of kInt4PairBlock); null
// where it is not dense or holds a value outside [-8, 8), which the nibbles cannot: the kernel
// then reads the int8 bytes, as without the option.
std::shared_ptr<const Int4Pairs> pack_int4_pairs(const BufferRef& weight);

}  // namespace luminal::runtime::cpu
