"""Progress of the long commands (``mutants``, ``fuzz``): a counter and an estimate.

Plain lines, not a live bar: both commands run mostly in CI, where a log keeps every
line and a redrawn bar turns into noise. The estimate is the mean time per finished
item times the items left, which is honest enough once a few are done.
"""

from __future__ import annotations

import time

__all__ = ["Counter", "duration"]


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: short, and never a misleading fraction."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Counter:
    """Counts finished items out of ``total`` and estimates the time left."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.started = time.monotonic()

    def step(self, done: int | None = None) -> str:
        """Count one more finished item (or ``done`` in all); return ``[ 3/40]``."""
        self.done = self.done + 1 if done is None else done
        width = len(str(self.total))
        return f"[{self.done:>{width}}/{self.total}]"

    def eta(self) -> str:
        """``ETA 1 min 05 s`` from the pace so far, or ``done``."""
        left = self.total - self.done
        if left <= 0:
            return "done"
        if self.done == 0:
            return "ETA unknown"
        elapsed = time.monotonic() - self.started
        return f"ETA {duration(elapsed / self.done * left)}"

    def elapsed(self) -> str:
        return duration(time.monotonic() - self.started)
