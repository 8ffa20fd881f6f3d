"""PyTorch's own OpInfo samples for every op luminal claims, through torch.compile(backend=luminal)
against eager, in f32, bf16, i64 and bool (where the OpInfo supports the dtype).

Claimed = the OpInfo's name (nn.functional. stripped) is an op in translator/registry.cpp. All
samples of one OpInfo x dtype run in one compiled function; when that compile fails, each sample
is retried alone so the count is per sample. Expected failures (an OpInfo, an OpInfo x dtype, or
one sample) are in opinfo_known_gaps.py with a reason each; anything else fails the test. The
last test prints the pass rate per dtype (run with -s to see it). Slow (hundreds of compiles):
`pytest -m slow tests/ops/test_opinfo.py`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
import torch
import torch.utils._pytree as pytree

from op_harness import compile_and_run, dtype_name, mismatch

common_methods_invocations = pytest.importorskip(
    "torch.testing._internal.common_methods_invocations", reason="OpInfo needs the expecttest package"
)
from opinfo_known_gaps import DTYPE_GAPS, OP_GAPS, SAMPLE_GAPS  # noqa: E402

DTYPES = (torch.float32, torch.bfloat16, torch.int64, torch.bool)
REGISTRY = Path(__file__).resolve().parents[2] / "translator" / "registry.cpp"
REGISTERED_BASES = set(re.findall(r'\{"aten::([a-z_0-9]+)\.', REGISTRY.read_text()))


def full_name(opinfo) -> str:
    return opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


CLAIMED = sorted(
    (o for o in common_methods_invocations.op_db if o.name.removeprefix("nn.functional.") in REGISTERED_BASES),
    key=full_name,
)

@pytest.fixture(autouse=True)
def capture_data_dependent_ops():
    """nonzero, masked_select and item() give sizes and numbers read from data: dynamo puts them
    in the graph, for luminal to translate, only when told to."""
    with torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True):
        yield


# dtype name -> [passed, total] over samples of claimed, non-gap OpInfos.
PASS_RATE: dict[str, list[int]] = defaultdict(lambda: [0, 0])


def _as_fn(opinfo, sample):
    """(fn(*tensors), tensors) for one sample: its non-tensor leaves are constants of fn."""
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    tensors = [leaves[i] for i in positions]

    def fn(*ts):
        filled = list(leaves)
        for i, t in zip(positions, ts):
            filled[i] = t
        inp, args, kwargs = pytree.tree_unflatten(filled, spec)
        return opinfo.op(inp, *args, **kwargs)

    return fn, tensors


def _compare(got, expected) -> str | None:
    # OpInfo's comparisons use assert_close's per-dtype defaults; mismatch() scales ours.
    return mismatch(got, expected, scale=1.0)


def _run_samples(opinfo, dtype) -> tuple[int, dict[int, str]]:
    """(number of samples eager accepts, {sample index: what went wrong})."""
    samples = [s for s in opinfo.sample_inputs("cpu", dtype, requires_grad=False)]
    prepared = []
    for s in samples:
        fn, tensors = _as_fn(opinfo, s)
        # Own copies for eager and for luminal: an op that updates an argument in place
        # (_native_batch_norm_legit's running statistics, shared between samples) must not see
        # the other run's update.
        try:
            expected = fn(*[t.clone() for t in tensors])
        except Exception:  # noqa: BLE001 - eager rejects this sample; nothing to compare
            continue
        prepared.append((fn, [t.clone() for t in tensors], expected))
    if not prepared:
        return 0, {}
    arities = [len(t) for _, t, _ in prepared]

    def packed(*flat):
        outs, i = [], 0
        for (fn, _, _), n in zip(prepared, arities):
            outs.append(fn(*flat[i : i + n]))
            i += n
        return tuple(outs)

    flat = [t for _, ts, _ in prepared for t in ts]
    failures: dict[int, str] = {}
    try:
        actual, _ = compile_and_run(packed, flat, set())
        for k, ((_, _, expected), got) in enumerate(zip(prepared, actual)):
            problem = _compare(got, expected)
            if problem:
                failures[k] = problem
    except Exception:  # noqa: BLE001 - one sample broke the packed compile: try each alone
        for k, (fn, tensors, expected) in enumerate(prepared):
            torch._dynamo.reset()
            try:
                got, _ = compile_and_run(fn, tensors, set())
                problem = _compare(got, expected)
            except Exception as error:  # noqa: BLE001
                problem = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
            if problem:
                failures[k] = problem
    return len(prepared), failures


@pytest.mark.slow
@pytest.mark.parametrize("opinfo", CLAIMED, ids=full_name)
def test_opinfo(opinfo):
    name = full_name(opinfo)
    if name in OP_GAPS:
        pytest.xfail(OP_GAPS[name])
    problems = []
    for dtype in DTYPES:
        if not opinfo.supports_dtype(dtype, "cpu"):
            continue
        torch._dynamo.reset()
        total, failures = _run_samples(opinfo, dtype)
        gap = DTYPE_GAPS.get((name, dtype_name(dtype)))
        rate = PASS_RATE[dtype_name(dtype)]
        rate[0] += total - len(failures)
        rate[1] += total
        unexpected = {k: f for k, f in failures.items() if (name, k) not in SAMPLE_GAPS}
        if unexpected and not gap:
            listed = [f"sample {k}: {f}" for k, f in list(unexpected.items())[:5]]
            failing = f"{dtype_name(dtype)}: {len(unexpected)}/{total} samples fail"
            problems.append(failing + "\n    " + "\n    ".join(listed))
        if gap and not failures:
            problems.append(f"{dtype_name(dtype)}: listed as a known gap ({gap}) but every sample passes; remove it")
        for (gap_name, k), reason in SAMPLE_GAPS.items():
            if gap_name == name and k < total and k not in failures:
                problems.append(
                    f"{dtype_name(dtype)}: sample {k} is listed as a known gap ({reason}) but passes; remove it"
                )
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


@pytest.mark.slow
def test_zz_pass_rate():
    """Prints the sample pass rate per dtype over the OpInfos run above (run with -s)."""
    for dtype, (passed, total) in sorted(PASS_RATE.items()):
        print(f"OpInfo {dtype}: {passed}/{total} samples pass ({100.0 * passed / max(total, 1):.1f}%)")
