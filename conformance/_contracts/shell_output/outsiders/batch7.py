"""Seven plausible broken variants of ``base7``: each has exactly one bug.

Outsider batch 7 (soo7), written before any of them was run against the suite (the
original ``b7soo_variants.py`` had sha256
9b75ac3c132e4368e0599a0d163a2fa6bd9736837aa6abeb1a613e2e8151f4ad). Kept as written: only
imports, typing, the linter's layout and the catalogue at the end (``OutsiderMutant``
records a spec instead of a ``VARIANTS`` list of adapter factories) changed.

First try, against the suite of main 9c7b1af (99 scenarios), judged by the lead on a
heavily loaded machine by the meta-test's standard (a scenario citing the rule fails it
at MUST level and the oracle names the rule): one killed properly
(``out-soo7-raised-observer-banned``, by ``soo-panic-observer-called-again-next-command``);
two killed with the rule cited or named but not both (``out-soo7-session-ids-own-counter``:
no scenario mixed ``open`` and ``run``; ``out-soo7-bounded-queue-blocks``: only named, by
scenarios citing other rules, and under load); one killed only by another rule's scenario
(``out-soo7-idle-timeout``); two survived (``out-soo7-pipe-grace-after-exit``: every
grandchild scenario had a limit shorter than the 2 s grace; ``out-soo7-cut-at-char-boundary``:
no budget ended inside a UTF-8 sequence). ``out-soo7-stderr-by-lines`` is missing from
the first try's log; main's ``soo-live-partial-line`` (a stderr ``50%\r``) already kills
it as the meta-test demands. See docs/contracts/shell-output-observer.md, "Outsider mutants",
batch 7, for what kills each now.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.outsiders.base7 import (
    ACTIVE,
    Implementation,
    Session,
    Shell,
    ShellOutputStream,
)


# --- 1. SOO-IDS: the session API has a counter of its own --------------------------------
class _OwnCounterShell(Shell):
    """observe() was added later for embedders, with its own itertools counter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._session_ids = itertools.count(1)

    def observe(self, observer: Any) -> Session:
        session = self.session_class(next(self._session_ids), observer, self.live_budget, self)
        with self._sessions_lock:
            self._sessions.append(session)
        return session


# --- 2. SOO-NO-STALL: a bounded queue whose put waits for room ---------------------------
QUEUE_LIMIT = 1024


class _BoundedQueueSession(Session):
    """A memory guard: at most QUEUE_LIMIT entries queued; offer waits for room."""

    def _enqueue(self, stream: ShellOutputStream, piece: bytes) -> None:
        while len(self._queue) >= QUEUE_LIMIT and self._phase == ACTIVE and not self._disabled:
            self._cond.wait()
        if self._phase != ACTIVE or self._disabled:
            return
        self._queue.append((stream, piece))
        self._cond.notify_all()


class _BoundedQueueShell(Shell):
    session_class = _BoundedQueueSession


# --- 3. SOO-PANIC: an observer that raised is banned from the whole shell ----------------
class _BanningSession(Session):
    def __init__(self, invocation: int, observer: Any, budget: int, shell: Any = None) -> None:
        super().__init__(invocation, observer, budget, shell)
        if shell is not None and id(observer) in shell.banned:
            with self._cond:
                self._disabled = True
                self._cond.notify_all()

    def _raised(self) -> None:
        if self.shell is not None:
            self.shell.banned.add(id(self.observer))
        super()._raised()


class _BanningShell(Shell):
    session_class = _BanningSession

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.banned: set[int] = set()


# --- 4. SOO-FINISH: after the child exits, the pipes get a 2 s grace, then "complete" ----
PIPE_GRACE = 2.0


class _PipeGraceShell(Shell):
    """Does not hang on a backgrounded process holding the pipes: once the child has
    exited, the drains get PIPE_GRACE seconds, then the call counts as completed."""

    def _waiter(self, call: Any) -> None:
        call.exit_code = call.proc.wait()
        deadline = time.monotonic() + PIPE_GRACE
        for d in call.drains:
            d.join(max(0.0, deadline - time.monotonic()))
        call.done.set()


# --- 5. SOO-TIMEOUT: the time limit is an inactivity limit, restarted by every read ------
class _IdleTimeoutShell(Shell):
    async def _wait(self, call: Any, timeout: float | None) -> bool:
        while not call.done.is_set():
            if timeout is not None and time.monotonic() - call.last_read >= timeout:
                return True
            await anyio.sleep(0.005)
        return False


# --- 6. SOO-BUDGET: the crossing chunk is cut back to a UTF-8 character boundary --------
def _complete_utf8_prefix(data: bytes) -> bytes:
    """``data`` without a trailing incomplete UTF-8 sequence."""
    i = len(data) - 1
    back = 0
    while i >= 0 and back < 3 and 0x80 <= data[i] <= 0xBF:
        i -= 1
        back += 1
    if i < 0:
        return data
    lead = data[i]
    need = (
        2
        if 0xC0 <= lead <= 0xDF
        else 3
        if 0xE0 <= lead <= 0xEF
        else 4
        if 0xF0 <= lead <= 0xF7
        else 1
    )
    if len(data) - i < need:
        return data[:i]
    return data


class _CharBoundarySession(Session):
    """Nothing will ever complete a character cut at the budget, so the pane is not
    handed the broken half of it."""

    def _cut(self, chunk: bytes, left: int) -> bytes:
        if len(chunk) <= left:
            return chunk
        return _complete_utf8_prefix(chunk[:left])


class _CharBoundaryShell(Shell):
    session_class = _CharBoundarySession


# --- 7. SOO-LIVE: stderr is drained line by line -------------------------------------------
class _StderrLinesShell(Shell):
    """Warnings reach the pane as whole lines: stderr is read with readline()."""

    def _reader(self, fd: int, stream: ShellOutputStream) -> Iterator[bytes]:
        if stream is not ShellOutputStream.STDERR:
            yield from super()._reader(fd, stream)
            return
        with open(fd, "rb", closefd=False) as pipe:
            yield from iter(pipe.readline, b"")


# --- the catalogue (the outsider's VARIANTS list: name, rule, statement, shell) --------

__all__ = ["MUTANTS", "OutsiderMutant", "implementation"]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo7-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    shell_class: type[Shell]


_SPECS = [
    OutsiderMutant(
        "out-soo7-session-ids-own-counter",
        "SOO-IDS",
        "observe() draws invocation IDs from a counter of its own, so a session and a run of "
        "the same runner can get the same ID.",
        _OwnCounterShell,
    ),
    OutsiderMutant(
        "out-soo7-bounded-queue-blocks",
        "SOO-NO-STALL",
        "the per-invocation queue holds at most 1024 entries and offer() waits for room, so a "
        "blocked observer stalls the drain thread, the pipes and the child once 1024 small "
        "chunks are queued within the budget.",
        _BoundedQueueShell,
    ),
    OutsiderMutant(
        "out-soo7-raised-observer-banned",
        "SOO-PANIC",
        "an observer whose on_output raised is banned for the rest of the runner's life, so "
        "later invocations watched by the same observer object get no callbacks and no "
        "on_finish.",
        _BanningShell,
    ),
    OutsiderMutant(
        "out-soo7-pipe-grace-after-exit",
        "SOO-FINISH",
        "once the child has exited the drains get 2 s, after which the call counts as "
        "completed (exit code, on_finish) although a descendant still holds the pipes.",
        _PipeGraceShell,
    ),
    OutsiderMutant(
        "out-soo7-idle-timeout",
        "SOO-TIMEOUT",
        "the time limit is measured from the last read instead of the start of the call, so "
        "a command that keeps printing is never timed out.",
        _IdleTimeoutShell,
    ),
    OutsiderMutant(
        "out-soo7-cut-at-char-boundary",
        "SOO-BUDGET",
        "the chunk that crosses the live budget is cut back to a complete UTF-8 character, so "
        "up to 3 bytes the budget allows are never delivered.",
        _CharBoundaryShell,
    ),
    OutsiderMutant(
        "out-soo7-stderr-by-lines",
        "SOO-LIVE",
        "stderr is drained with readline(), so a partial stderr line (a prompt, a progress "
        "text ending in \\r) is offered only at its newline or at end of file.",
        _StderrLinesShell,
    ),
]

#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    impl = Implementation()
    impl.shell_class = MUTANTS[name].shell_class
    return impl
