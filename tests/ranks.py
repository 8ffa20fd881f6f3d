"""Runs a function in several processes joined by a gloo process group on 127.0.0.1.

Bounded in time: processes still running at the deadline are killed and the test fails. Each
rank's return value (picklable) comes back in rank order; a rank's exception comes back as its
traceback text.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
import traceback
from typing import Any, Callable

import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world_size: int, port: int, fn: Callable, args: tuple, results, pg_timeout_s: float) -> None:
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # What torchrun sets, and what transformers' tp_plan reads.
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size))
    torch.set_num_threads(1)
    try:
        dist.init_process_group(
            "gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=pg_timeout_s)
        )
        value = fn(rank, world_size, *args)
        results.put((rank, True, value))
    except BaseException:  # noqa: BLE001 - the parent reports it
        results.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_ranks(
    fn: Callable, *args: Any, world_size: int = 2, timeout_s: float = 240, pg_timeout_s: float = 60
) -> list[Any]:
    """fn(rank, world_size, *args) in world_size processes; their results, or AssertionError."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(target=_rank_main, args=(r, world_size, port, fn, args, results, pg_timeout_s), daemon=True)
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    got: dict[int, tuple[bool, Any]] = {}
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout_s)
    try:
        while len(got) < world_size:
            left = (deadline - datetime.datetime.now()).total_seconds()
            if left <= 0:
                raise AssertionError(f"ranks {sorted(set(range(world_size)) - set(got))} still running after {timeout_s} s")
            try:
                rank, ok, value = results.get(timeout=min(left, 1.0))
                got[rank] = (ok, value)
            except queue.Empty:
                dead = [r for r, p in enumerate(procs) if not p.is_alive() and r not in got and p.exitcode != 0]
                if dead:
                    raise AssertionError(f"rank {dead[0]} died with exit code {procs[dead[0]].exitcode}")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    failures = [f"rank {r}:\n{v}" for r, (ok, v) in sorted(got.items()) if not ok]
    if failures:
        raise AssertionError("\n".join(failures))
    return [got[r][1] for r in range(world_size)]
