"""The kit's own standard input, while a scenario compares what its children's stdin is.

``{stdin_save}`` / ``{stdin_check}`` (the emitter's probes) tell whether two calls of a
scenario gave their child the same standard input (SOO-ENVELOPE: a command is spawned the
same way with and without an observer). A runner that hands one call ``/dev/null`` and
lets the other inherit the runner's own stdin is only seen if the runner's own stdin is
not ``/dev/null`` itself, and under a test runner, in CI or behind ``nohup`` it often is.
So while such a scenario runs, the Python driver puts the read end of a pipe that nobody
writes to on descriptor 0 of its own process, and puts the old one back afterwards.

Only a runner that lets a child inherit the runner's stdin sees the swap: every runner
that spawns with an explicit stdin (``/dev/null``, as upstream: shell_tool.rs:1714-1717)
gives its children the same thing before, during and after. Scenarios that probe stdin
at the same time share one swap (a count under a lock).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["distinct_stdin", "probes_stdin"]


class _Swap:
    """Descriptor 0 swapped for a pipe while anyone needs it (a count under a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        #: The descriptor 0 the process had before the swap (None: it was closed).
        self._saved: int | None = None
        #: The write end of the pipe on descriptor 0, kept open so a read waits, not ends.
        self._write: int | None = None

    def enter(self) -> None:
        with self._lock:
            self._users += 1
            if self._users > 1:
                return
            try:
                self._saved = os.dup(0)
            except OSError:
                self._saved = None
            read, self._write = os.pipe()
            os.dup2(read, 0)  # inheritable, as a descriptor 0 is
            os.close(read)

    def leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users > 0:
                return
            if self._saved is not None:
                os.dup2(self._saved, 0)
                os.close(self._saved)
            else:
                os.close(0)
            if self._write is not None:
                os.close(self._write)
            self._saved = self._write = None


_SWAP = _Swap()


def probes_stdin(when: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a call of the scenario compares its standard input with another's."""
    for step in when:
        for verb in ("run", "start"):
            body = step.get(verb)
            if isinstance(body, Mapping):
                script = body.get("script", [])
                if any("stdin_save" in s or "stdin_check" in s for s in script):
                    return True
    return False


@contextlib.contextmanager
def distinct_stdin(needed: bool) -> Iterator[None]:
    """While inside, descriptor 0 of this process is a pipe of its own (if ``needed``)."""
    if not needed:
        yield
        return
    _SWAP.enter()
    try:
        yield
    finally:
        _SWAP.leave()
