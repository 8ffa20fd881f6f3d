"""A plain-text progress bar on stderr: one line per update, so it also reads well in CI logs."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, width: int = 24) -> None:
        self.total, self.width, self.done = total, width, 0
        self.start = time.monotonic()
        self._last = ""

    def update(self, label: str, detail: str = "") -> None:
        filled = self.width * self.done // max(self.total, 1)
        elapsed = time.monotonic() - self.start
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {elapsed:6.0f}s {label}"
        if detail:
            line += f": {detail}"
        if line != self._last:  # stage lines repeat; print each state once
            print(line, file=sys.stderr, flush=True)
            self._last = line

    def advance(self, label: str, detail: str = "") -> None:
        self.done += 1
        self.update(label, detail)
