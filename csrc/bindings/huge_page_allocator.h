// The allocator of the CPU tensors a compiled call returns. Below kHugePageThreshold it is
// torch's own; from there up each tensor is its own mapping, 2 MiB-aligned and advised
// MADV_HUGEPAGE, so that writing a fresh output faults a page every 2 MiB instead of every 4 KiB,
// and the last such mapping freed is kept for the next output that fits it and needs at least
// half of it, whose pages are then already there: a prefill's logits, freed by the time the next
// prompt comes, cost no faults at all. One mapping at most is kept (unmapped when an output does
// not fit it): the memory a process holds beyond eager's between calls is one freed output's.
//
// Why: glibc maps every allocation from 32 MiB up afresh and unmaps it when it is freed, so a
// prompt's logits (1,024 x 32,000 bf16, 65 MB) were first-touched a 4 KiB page at a time on
// every call: 19-21 ms of page faults in a 100 ms LM head on two Zen 4 cores, the same in eager.
// Smaller allocations come back warm from glibc's heap once its mmap threshold has risen to
// them (a 31 MiB empty + fill: 1.5 ms), and 2 MiB-aligned ones there were slower (torch's
// THP_MEM_ALLOC_ENABLE: 4 MiB took 1.0 ms against 0.08): those stay torch's. docs/lessons.md,
// 2026-12-06 (late morning). Huge pages alone were bimodal on this VM (83 or 160-230 ms for that
// LM head, call by call: fresh 2 MiB blocks of guest memory the host had not backed yet); the
// kept mapping is 85-88 every call.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>

namespace luminal::bindings {

// glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit): every allocation this
// large is a fresh mapping whatever the allocator, so a huge-page mapping costs nothing more.
inline constexpr size_t kHugePageThreshold = size_t{32} << 20;

// The allocator for a compiled call's CPU outputs (a resizable storage resizes through it too).
c10::Allocator* huge_page_allocator();

// Bytes of the freed mapping kept for reuse (0 or one mapping's length).
size_t huge_page_bytes_kept();

}  // namespace luminal::bindings
