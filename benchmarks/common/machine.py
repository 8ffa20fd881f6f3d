"""Where and with what a run happened: stored with every run so numbers stay interpretable."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parents[2]


def new_run_id() -> str:
    """Microsecond resolution, so two runs started in the same second never collide."""
    return datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S-%f")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def ram_gb() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def machine_info(threads: int) -> dict[str, object]:
    try:
        import transformers

        transformers_version = transformers.__version__
    except ImportError:
        transformers_version = ""
    commit = _git("rev-parse", "--short=12", "HEAD")
    # A dirty tree means the numbers belong to uncommitted code: say so next to the commit.
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return {
        "timestamp": datetime.datetime.now().isoformat(timespec="seconds"),
        "git_commit": commit + ("-dirty" if dirty else ""),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "ram_gb": round(ram_gb(), 1),
        "os": platform.platform(),
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "transformers_version": transformers_version,
        "threads": threads,
    }
