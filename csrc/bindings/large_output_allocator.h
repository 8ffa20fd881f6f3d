// The allocator of the CPU tensors a compiled call returns. Below kLargeOutputBytes it is
// torch's own; from there up each tensor is its own mapping, and the last one freed is kept for
// the next output that fits it and needs at least half of it, whose pages are then already
// there: a prefill's logits, freed by the time the next prompt comes, cost no page faults. One
// mapping at most is kept (unmapped when an output does not fit it): between calls a process
// holds one freed output's memory beyond eager's, and its peak is eager's.
//
// Why: glibc maps every allocation from 32 MiB up afresh and unmaps it when it is freed, so a
// prompt's logits (1,024 x 32,000 bf16, 65 MB) were first-touched a 4 KiB page at a time on
// every call: 19-21 ms of page faults in a 100 ms LM head on two Zen 4 cores, the same in eager.
// Smaller allocations come back warm from glibc's heap once its mmap threshold has risen to
// them (a 31 MiB empty + fill: 1.5 ms): those stay torch's. Huge pages (MADV_HUGEPAGE) were
// tried and left out: on a VM they made an output that is not reused (a caller keeping every
// call's logits) take 164-209 ms instead of 94-96, fresh 2 MiB blocks of guest memory being
// backed by the host on first touch, and with the kept mapping they gained nothing (81-86 ms
// either way). docs/lessons.md, 2026-12-06 (late morning).
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>

namespace luminal::bindings {

// glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit): every allocation this
// large is a fresh mapping whatever the allocator.
inline constexpr size_t kLargeOutputBytes = size_t{32} << 20;

// The allocator for a compiled call's CPU outputs (a resizable storage resizes through it too).
c10::Allocator* large_output_allocator();

// Bytes of the freed mapping kept for reuse (0 or one mapping's length).
size_t large_output_bytes_kept();

}  // namespace luminal::bindings
