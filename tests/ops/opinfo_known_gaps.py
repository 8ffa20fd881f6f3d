"""The reviewed list of OpInfo entries (or entry x dtype) test_opinfo.py expects to fail, each with
its reason. An entry that starts passing makes the sweep fail too, so the list stays honest."""

from __future__ import annotations

# OpInfo full name ("div.floor_rounding") -> reason: every dtype is expected to fail.
OP_GAPS: dict[str, str] = {
    "round.decimals_0": "aten::round.decimals has no translation yet (models round without decimals)",
    "round.decimals_3": "aten::round.decimals has no translation yet",
    "round.decimals_neg_3": "aten::round.decimals has no translation yet",
    "empty": "uninitialised memory: eager's values are arbitrary, nothing to compare",
    "empty_permuted": "uninitialised memory: eager's values are arbitrary, nothing to compare",
    "index_put": "owned and tested by the KV-cache work (tests/models)",
    "bmm.triton_optimized": "a CUDA/Triton-specific sample set",
    "nn.functional.silu.complex": "complex dtypes are not supported",
}

# (OpInfo full name, dtype name) -> reason: only that dtype is expected to fail.
DTYPE_GAPS: dict[tuple[str, str], str] = {}
