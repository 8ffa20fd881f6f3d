"""The machine's roofline, measured in the same run as the kernels: DRAM copy bandwidth and f32 GEMM peak."""

from __future__ import annotations

import ctypes
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import torch


def _median_s(fn, reps: int) -> float:
    fn()  # page in / warm up
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def last_level_cache_bytes() -> int:
    """The largest cache's size as Linux reports it (sysfs), 0 where it does not."""
    largest = 0
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text[:-1] if scale > 1 else text
        if digits.isdigit():
            largest = max(largest, int(digits) * scale)
    return largest


def probe_floats() -> int:
    """How many f32 the bandwidth probes stream: 256 MiB, or twice the last-level cache where that
    is larger (a whole number of 8192-float rows). On a 2-core Xeon VM with a 480 MiB L3 the read
    probe over 256 MiB gave 33-37 GB/s and over 1-2 GiB 31.2-31.4, so its floors were the cache's."""
    floats = max(64 * 2**20, 2 * last_level_cache_bytes() // 4)
    return (floats + 8191) // 8192 * 8192


def copy_bandwidth_gbps() -> float:
    """An f32 copy (read + write) far beyond any cache (probe_floats): sustained DRAM bandwidth."""
    src = torch.randn(probe_floats())
    dst = torch.empty_like(src)
    return 2 * src.nbytes / _median_s(lambda: dst.copy_(src), 10) / 1e9


def _native_read_probe():
    """read_probe.cpp built for this CPU (g++ -O3 -march=native, as luminal's kernels are), or
    None where it cannot be built."""
    source = Path(__file__).with_name("read_probe.cpp")
    build = Path(tempfile.gettempdir()) / f"luminal_read_probe_{os.getuid()}"
    build.mkdir(exist_ok=True)
    library = build / f"read_probe_{int(source.stat().st_mtime_ns)}.so"
    if not library.exists():
        command = [os.environ.get("LUMINAL_CXX", "g++"), "-O3", "-march=native", "-shared", "-fPIC", "-pthread",
                   str(source), "-o", str(library)]
        if subprocess.run(command, capture_output=True).returncode != 0:
            return None
    probe = ctypes.CDLL(str(library)).luminal_read_probe
    probe.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    probe.restype = ctypes.c_float
    return probe


def read_bandwidth_gbps() -> float:
    """probe_floats() f32 read once (no write stream): what a decode step streaming its weights can
    reach at best. The fastest of torch's sum, BLAS's GEMV over the same bytes as a [8192, 8192]
    matrix, and a native read loop (read_probe.cpp) on torch's threads: on an Emerald Rapids VM
    the sum alone read 20 GB/s where a GEMV (and luminal's) streamed 29-34, and on a Zen 4 both
    read 25.5 where luminal's GEMVs streamed 31, which made every floor derived from them wrong."""
    src = torch.randn(probe_floats())
    matrix, vector = src.view(-1, 8192), torch.randn(8192)
    summed = src.nbytes / _median_s(lambda: src.sum(), 10) / 1e9
    gemv = src.nbytes / _median_s(lambda: torch.mv(matrix, vector), 10) / 1e9
    probe = _native_read_probe()
    threads = torch.get_num_threads()
    native = 0.0 if probe is None else src.nbytes / _median_s(lambda: probe(src.data_ptr(), src.numel(), threads), 10) / 1e9
    return max(summed, gemv, native)


def sgemm_peak_gflops() -> float:
    """The best dense f32 compute this machine's BLAS delivers: torch.mm of square matrices, the
    faster of 1024^3 and 2048^3 (which size peaks depends on the caches and on the neighbours
    sharing the machine)."""
    best = 0.0
    for n in (1024, 2048):
        a, b = torch.randn(n, n), torch.randn(n, n)
        best = max(best, 2 * n**3 / _median_s(lambda: torch.mm(a, b), 10) / 1e9)
    return best


def half_gemm_peak_gflops(dtype: torch.dtype, f32_peak: float) -> float:
    """GFLOP/s a bf16 or f16 GEMM can reach here: the faster of torch's GEMM in that dtype and
    `f32_peak` (sgemm's), since any path may widen to f32. torch's half mm depends on the layout
    and the CPU: without native dot products its row-major x row-major product runs at under
    1 GFLOP/s while F.linear's transposed weight runs at a third of sgemm, so the half rate is
    F.linear's at 1024^3 (three runs, bounded in time)."""
    a, w = torch.randn(1024, 1024, dtype=dtype), torch.randn(1024, 1024, dtype=dtype)
    return max(f32_peak, 2 * 1024**3 / _median_s(lambda: torch.nn.functional.linear(a, w), 3) / 1e9)


def measure() -> dict[str, float]:
    sgemm = sgemm_peak_gflops()
    return {"copy_gbps": copy_bandwidth_gbps(), "sgemm_gflops": sgemm,
            "bf16_gemm_gflops": half_gemm_peak_gflops(torch.bfloat16, sgemm)}


def gemm_peak_gflops(roof: dict[str, float], dtype: str) -> float:
    """The compute peak a kernel of `dtype` ("f32", "bf16") is held to: its own dtype's GEMM peak
    where the roofline measured one, else sgemm's."""
    return roof.get(f"{dtype}_gemm_gflops", roof["sgemm_gflops"])
