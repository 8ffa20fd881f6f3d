"""Runs one benchmark subprocess with a timeout; a crash or timeout is a result, never an exception."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

RESULT_PREFIX = "BENCH_RESULT "
STAGE_PREFIX = "BENCH_STAGE "


@dataclass
class Outcome:
    results: list[dict]  # every BENCH_RESULT json, in order (the kernel worker reports one per kernel)
    returncode: int | None  # None when killed on timeout
    timed_out: str | None  # why it was killed ("timed out after N s ..."), None when it exited
    last_stage: str
    stderr_tail: list[str] = field(default_factory=list)
    other_cpu_pct: float | None = None  # see busy_cpu_seconds
    wall_s: float = 0.0

    @property
    def result(self) -> dict | None:
        return self.results[-1] if self.results else None

    def error(self) -> str | None:
        """The text for the row's error column, or None when the run succeeded."""
        if self.timed_out:
            return f"{self.timed_out} during '{self.last_stage}'"
        if self.result is not None and self.result.get("error"):
            return self.result["error"]
        if self.returncode != 0 or self.result is None:
            how = f"signal {-self.returncode}" if self.returncode and self.returncode < 0 else f"code {self.returncode}"
            tail = " | ".join(self.stderr_tail[-5:])
            return f"exited with {how} during '{self.last_stage}' without a result: {tail}"[:2000]
        return None


def busy_cpu_seconds() -> float | None:
    """Machine-wide non-idle CPU seconds so far (/proc/stat). With the children's own CPU time this
    gives how busy *other* processes kept the machine during a measurement: the harness cannot stop
    them, so it records them next to the numbers they skew."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_until_quiet(max_wait_s: float, threshold_pct: float = 10.0, window_s: float = 5.0) -> float | None:
    """Waits (up to max_wait_s) until other processes use under threshold_pct of the machine over a
    window_s window; returns the last window's busy %. For machines shared with other work."""
    deadline = time.monotonic() + max_wait_s
    while True:
        before = busy_cpu_seconds()
        time.sleep(window_s)
        after = busy_cpu_seconds()
        if before is None or after is None:
            return None
        pct = 100 * (after - before) / (window_s * os.cpu_count())
        if pct < threshold_pct or time.monotonic() > deadline:
            return pct


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    cmd: list[str],
    timeout: float,
    env: dict[str, str],
    on_stage: Callable[[str], None],
    stage_timeout: float | None = None,
) -> Outcome:
    """Kills the process after `timeout` seconds in all, or `stage_timeout` seconds in one stage."""
    busy_before, children_before, wall_before = busy_cpu_seconds(), _children_cpu_seconds(), time.monotonic()
    # Own process group, so a timeout kills the compile workers inductor forks as well.
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env}, start_new_session=True
    )
    stdout_lines: list[str] = []
    stderr_tail: list[str] = []
    last_stage = ["start"]
    stage_start = [time.monotonic()]

    def read_stderr() -> None:
        for line in proc.stderr:
            line = line.rstrip("\n")
            if line.startswith(STAGE_PREFIX):
                last_stage[0] = line[len(STAGE_PREFIX) :]
                stage_start[0] = time.monotonic()
                on_stage(last_stage[0])
            elif line.strip():
                stderr_tail.append(line)
                del stderr_tail[:-40]

    readers = [
        threading.Thread(target=read_stderr, daemon=True),
        threading.Thread(target=lambda: stdout_lines.extend(proc.stdout), daemon=True),
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    timed_out = None
    try:
        while proc.poll() is None:
            now = time.monotonic()
            if now > deadline:
                timed_out = f"timed out after {timeout:g} s"
            elif stage_timeout is not None and now - stage_start[0] > stage_timeout:
                timed_out = f"timed out after {stage_timeout:g} s in one stage"
            if timed_out:
                break
            time.sleep(0.05)
    finally:
        # On a timeout, and when the orchestrator itself is interrupted: leave no benchmark behind.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for reader in readers:
        reader.join(timeout=10)
    other_cpu_pct = None
    busy_after, wall = busy_cpu_seconds(), time.monotonic() - wall_before
    if busy_before is not None and busy_after is not None and wall > 0:
        others = (busy_after - busy_before) - (_children_cpu_seconds() - children_before)
        other_cpu_pct = max(0.0, 100 * others / (wall * os.cpu_count()))
    results = [json.loads(line[len(RESULT_PREFIX) :]) for line in stdout_lines if line.startswith(RESULT_PREFIX)]
    return Outcome(results, None if timed_out else proc.returncode, timed_out, last_stage[0], stderr_tail, other_cpu_pct, wall)
