"""The environment OpenBLAS reads once, when `luminal._C` loads it: set before that import.

Values the user set are kept.
"""

from __future__ import annotations

import os


def _cpu_flags() -> tuple[str, set[str]]:
    """(vendor, flags) of the first CPU in /proc/cpuinfo; ("", set()) where there is none."""
    vendor, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "vendor_id":
                    vendor = value.strip()
                elif key == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return vendor, flags


def openblas_core_for(vendor: str, flags: set[str]) -> str | None:
    """The OpenBLAS kernel family for a CPU with these flags, or None to keep its own detection.

    Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernels by CPU model number, and a model it
    does not know (an Emerald Rapids Xeon, model 207) falls back to Prescott: SSE3 code, 37
    GFLOP/s on two cores where its AVX-512 kernels run 150-200 (docs/lessons.md, 2026-11-26).
    Every x86 CPU with these features runs these kernels correctly, so the features choose.
    """
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Zen" if vendor == "AuthenticAMD" else "Haswell"
    return None


def configure() -> None:
    # Its workers go to sleep right after each GEMM instead of spinning for about 2^28 cycles
    # (~0.1 s). Spinning, they held a core through a whole prefill while our kernels between the
    # GEMMs woke our own pool's worker: three busy threads on two cores, and f32 prefill 15-20%
    # slower in most processes (docs/lessons.md). A GEMM that wakes them costs microseconds.
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    if "OPENBLAS_CORETYPE" not in os.environ:
        core = openblas_core_for(*_cpu_flags())
        if core is not None:
            os.environ["OPENBLAS_CORETYPE"] = core
