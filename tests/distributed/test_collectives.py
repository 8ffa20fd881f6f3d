"""torch.distributed's functional collectives compiled by luminal: each a runtime step, issued
asynchronously and waited for before its result is read, equal to eager on every rank."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc

import luminal
from ranks import run_ranks

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not built in")


def _compile(fn, runtime: str = "cpu", **options):
    return torch.compile(fn, backend="luminal", fullgraph=True, options={"runtime": runtime, **options})


def _max_error(actual, expected) -> float:
    if not expected.is_floating_point():
        return 0.0 if torch.equal(actual, expected) else float("inf")
    return (actual.float() - expected.float()).abs().max().item()


# ---- the row-parallel pair: each rank holds half the hidden dim ----


def _row_parallel(rank: int, world: int, runtime: str, dtype: torch.dtype) -> dict:
    torch.manual_seed(0)
    hidden, ffn = 16, 32
    w1, b1 = torch.randn(ffn, hidden, dtype=dtype), torch.randn(ffn, dtype=dtype)
    w2, b2 = torch.randn(hidden, ffn, dtype=dtype), torch.randn(hidden, dtype=dtype)
    x = torch.randn(4, hidden, dtype=dtype)
    w1_part = w1.chunk(world, 0)[rank].contiguous()
    b1_part = b1.chunk(world)[rank].contiguous()
    w2_part = w2.chunk(world, 1)[rank].contiguous()

    def tp(x):
        part = torch.relu(x @ w1_part.T + b1_part) @ w2_part.T
        return fc.all_reduce(part, "sum", dist.group.WORLD) + b2

    eager = tp(x)
    compiled = _compile(tp, runtime)
    first, second = compiled(x), compiled(x + 1)
    return {"first": _max_error(first, eager), "second": _max_error(second, tp(x + 1))}


@pytest.mark.parametrize("runtime", ["cpu", "reference"])
def test_row_parallel_all_reduce_equals_eager(runtime):
    # Regression: the ATen fallback copied all_reduce's result before the collective finished
    # and waited on a tensor torch had never issued, so every rank got a wrong sum, silently.
    for errors in run_ranks(_row_parallel, runtime, torch.float32):
        assert errors["first"] < 1e-4 and errors["second"] < 1e-4, errors


def test_row_parallel_all_reduce_bf16():
    for errors in run_ranks(_row_parallel, "cpu", torch.bfloat16):
        assert errors["first"] < 0.25 and errors["second"] < 0.25, errors


# ---- every collective, every rank, against eager ----


def _cases(rank: int, world: int):
    group = dist.group.WORLD
    g = torch.Generator().manual_seed(100 + rank)  # each rank contributes its own values
    f = torch.randn(6, 4, generator=g)
    i = torch.randint(-50, 50, (8, 3), generator=g)
    b = torch.randn(4, 6, generator=g).to(torch.bfloat16)
    big = torch.randn(600, 600, generator=g)  # 1.4 MB: more than a shared-memory slot, so through gloo
    return {
        "all_reduce_large": (lambda x: fc.all_reduce(x, "sum", group) + 1, big),
        "all_gather_large": (lambda x: fc.all_gather_tensor(x.t(), 0, group), big),
        "all_reduce_f16_min": (lambda x: fc.all_reduce(x.half(), "min", group), f),
        "all_reduce_f32": (lambda x: fc.all_reduce(x * 2, "sum", group), f),
        "all_reduce_i64_max": (lambda x: fc.all_reduce(x + 1, "max", group), i),
        "all_reduce_noncontiguous": (lambda x: fc.all_reduce(x.t(), "sum", group) - 1, f),
        "all_reduce_bf16": (lambda x: fc.all_reduce(x, "sum", group), b),
        "all_gather_dim0": (lambda x: fc.all_gather_tensor(x + 1, 0, group), f),
        "all_gather_dim1_noncontiguous": (lambda x: fc.all_gather_tensor(x.t(), 1, group), f),
        "all_gather_i64": (lambda x: fc.all_gather_tensor(x, 0, group), i),
        "reduce_scatter_sum": (lambda x: fc.reduce_scatter_tensor(x * 3, "sum", 0, group), f),
        "reduce_scatter_i64_min": (lambda x: fc.reduce_scatter_tensor(x, "min", 0, group), i),
        "all_to_all_equal": (lambda x: fc.all_to_all_single(x + 0, None, None, group), f),
        "all_to_all_splits": (
            # rank 0 sends 2 rows to itself and 6 to rank 1; rank 1 sends 3 to rank 0 and keeps 5
            lambda x: fc.all_to_all_single(x * 1, [2, 3] if rank == 0 else [6, 5], [2, 6] if rank == 0 else [3, 5],
                                           group),
            i,
        ),
        "broadcast_from_1": (lambda x: fc.broadcast(x - 1, 1, group), f),
        "all_reduce_coalesced": (
            lambda x: sum(t.sum() for t in fc.all_reduce_coalesced([x, x * 2, x[:2]], "sum", group)),
            f,
        ),
    }


def _every_collective(rank: int, world: int, runtime: str) -> dict:
    errors = {}
    for name, (fn, x) in _cases(rank, world).items():
        torch._dynamo.reset()
        eager = fn(x)
        errors[name] = _max_error(_compile(fn, runtime)(x), eager)
    return errors


@pytest.mark.parametrize("runtime", ["cpu", "reference"])
def test_every_collective_equals_eager(runtime):
    for errors in run_ranks(_every_collective, runtime):
        assert all(e < 1e-2 for e in errors.values()), errors


def _no_fallback(rank: int, world: int) -> list[str]:
    backend_calls = []

    def fn(x):
        return fc.all_reduce(x, "sum", dist.group.WORLD) + fc.all_gather_tensor(x, 0, dist.group.WORLD).sum(0)

    captured: list[luminal.CompiledModel] = []

    def backend(gm, example_inputs):
        model = luminal.luminal_backend(gm, example_inputs, options={"fallback": "error"})
        captured.append(model)
        return model

    x = torch.randn(3)
    out = torch.compile(fn, backend=backend, fullgraph=True)(x)
    backend_calls.append(str(_max_error(out, fn(x)) < 1e-5))
    return backend_calls + captured[0].stats["fallback_ops"]


def test_collectives_never_take_the_aten_fallback():
    for result in run_ranks(_no_fallback):
        assert result == ["True"], result


# ---- one process, a group of one: the schedule and the errors ----


@pytest.fixture
def group_of_one():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield dist.group.WORLD
    if dist.is_initialized():
        dist.destroy_process_group()


def test_compute_runs_while_a_collective_is_in_flight(group_of_one, tmp_path):
    weight = torch.randn(8, 8)

    def fn(x, y):
        reduced = fc.all_reduce(x @ weight, "sum", group_of_one)
        independent = torch.tanh(y @ weight)  # reads nothing the collective writes
        return reduced + independent

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    out = _compile(fn, debug_dir=str(tmp_path))(x, y)
    torch.testing.assert_close(out, fn(x, y))
    steps = [line for line in (tmp_path / "cpu_stats.txt").read_text().splitlines() if "from " in line]
    start = next(i for i, s in enumerate(steps) if s.startswith("collective start"))
    wait = next(i for i, s in enumerate(steps) if s.startswith("collective wait"))
    between = steps[start + 1 : wait]
    assert any("tanh" in s.lower() or "mm" in s for s in between), steps


def test_a_destroyed_process_group_is_a_clear_error(group_of_one):
    compiled = _compile(lambda x: fc.all_reduce(x, "sum", group_of_one) * 2)
    x = torch.randn(5)
    torch.testing.assert_close(compiled(x), x * 2)
    dist.destroy_process_group()
    with pytest.raises(luminal.errors.UserError, match="process group"):
        compiled(x)


def _peer_leaves(rank: int, world: int) -> str:
    import time

    compiled = _compile(lambda x: fc.all_reduce(x, "sum", dist.group.WORLD) + 1)
    x = torch.ones(3)
    torch.testing.assert_close(compiled(x), x * world + 1)  # both ranks: compiled and run once
    dist.barrier()
    if rank == 1:
        return "left"  # and its process group goes with it, mid-conversation for rank 0
    time.sleep(1)
    begin = time.monotonic()
    try:
        compiled(x)
    except luminal.errors.UserError as e:
        return f"{time.monotonic() - begin:.1f} s: {e}"
    return "no error"


def test_a_peer_that_leaves_is_an_error_not_a_hang():
    message, left = run_ranks(_peer_leaves, pg_timeout_s=10, timeout_s=120)
    assert left == "left"
    assert "all_reduce" in message and "failed" in message, message


def _world_changes(rank: int, world: int) -> str:
    gather = _compile(lambda x: fc.all_gather_tensor(x, 0, dist.group.WORLD) * 2)
    x = torch.full((2,), float(rank))
    assert gather(x).shape == (4,)
    dist.destroy_process_group()
    # The same process, now alone in a group of one.
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        out = gather(x)
    except luminal.errors.UserError as e:
        return f"error: {e}"
    eager = fc.all_gather_tensor(x, 0, dist.group.WORLD) * 2
    return "recompiled" if torch.equal(out, eager) else f"wrong: {out} vs {eager}"


def test_a_group_that_changed_size_recompiles_or_is_a_clear_error():
    for result in run_ranks(_world_changes):
        assert result == "recompiled" or ("group" in result and result.startswith("error")), result


def test_a_collective_without_a_process_group_is_a_clear_error():
    assert not dist.is_initialized()

    def fn(x):
        reduced = torch.ops._c10d_functional.all_reduce(x * 2, "sum", "0")
        return torch.ops._c10d_functional.wait_tensor(reduced) + 1

    with pytest.raises(luminal.errors.UserError, match=r"all_reduce on group '0'.*no process group named '0'"):
        _compile(fn)(torch.ones(3))


def test_a_collective_without_a_translation_is_refused_not_run_through_the_fallback(group_of_one):
    # irecv's result arrives after the call: the ATen fallback would copy it before it does.
    def fn(x):
        received = torch.ops._c10d_functional.irecv(x.clone(), 0, 0, "0")
        return torch.ops._c10d_functional.wait_tensor(received) + x

    with pytest.raises(luminal.errors.UnsupportedError, match="irecv.*is a collective luminal does not run yet"):
        _compile(fn)(torch.ones(3))
