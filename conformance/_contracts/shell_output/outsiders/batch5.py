"""Seven plausible broken variants of ``base5``: each has exactly one bug.

Outsider batch 5 (soo5), written before any of them was run against the suite (the
original ``b5soo_variants.py`` had sha256
c6e5fc310b4456a46e4c346156eeb3524868107edd123b281feb8f46ae57e8d4). Kept as written: only
imports, typing, the linter's layout and the catalogue at the end (``_variant`` records a
spec instead of a ``VARIANTS`` list of adapters) changed. The outsider's own summary: the
base runner with exactly one plausible bug each. Against the suite of main b859591 (92
scenarios) all seven were killed properly on the first try, under both profiles, each by
a scenario citing its rule with the oracle naming it (the outsider's predicted escape,
``out-soo5-batch-delivered-after-cancel``, was caught by batch 2's
``session-cancel-during-second-callback``); see docs/contracts/shell-output-observer.md,
"Outsider mutants".
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.outsiders import base5 as base
from seamspec.conformance._contracts.shell_output.outsiders.base5 import (
    CANCELLED,
    COALESCE_BEHIND,
    COALESCE_MAX,
    COALESCE_SMALL,
    KILL_GRACE,
    POLL,
    READ_SIZE,
    Implementation,
    Result,
    Session,
    Shell,
    Stream,
    _stream,
    log,
)

# --- 1. SOO-CANCEL: the presentation thread swaps the whole queue out as a batch -------


class _BatchSession(Session):
    """Takes everything queued in one lock round trip, then delivers the batch.

    The bug: the batch is delivered without looking at the phase again, so chunks that
    were queued when ``cancel()`` came are still delivered once the in-flight callback
    returns (cancel only cleared the shared queue, which the batch had already left).
    """

    def _present(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and self._phase != CANCELLED and not self._stopped:
                        self._cond.wait()
                    if self._phase == CANCELLED or self._stopped:
                        return
                    batch = list(self._queue)
                    self._queue.clear()
                for entry in batch:
                    if entry[0] == "finish":
                        self._call_finish()
                        return
                    try:
                        self._on_output(self.invocation, entry[1], bytes(entry[2]))
                    except Exception:
                        log.warning("on_output raised", exc_info=True)
                        self._stop()
                        return
        finally:
            with self._cond:
                self._stopped = True
                self._queue.clear()
            self.shell._ended(self)


class _BatchShell(Shell):
    session_class = _BatchSession


# --- 2. SOO-TIMEOUT-GROUP: the group is killed only while the leader still runs ------


class _KillIfRunningShell(Shell):
    """Guards the kill with ``proc.poll() is None`` (no signal to a finished process).

    The bug: a leader that exited while a grandchild holds the pipes is "not running",
    so the group is never killed; the grandchild survives and the call waits for pipes.
    """

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


# --- 3. SOO-LIVE: the drain reads through a buffered file object -------------------------


class _BufferedReadShell(Shell):
    """Reads each pipe with ``BufferedReader.read(READ_SIZE)``.

    The bug: ``read(n)`` on a buffered pipe blocks until n bytes or end of file, so a
    command printing a little progress is observed only when it ends.
    """

    def _drain(
        self,
        fd: int,
        stream: Stream,
        capture: base._Capture,
        session: Session | None,
        invocation: int | None,
    ) -> None:
        self.thread_hook("drain", invocation)
        pipe = open(fd, "rb", closefd=False)  # noqa: SIM115
        try:
            while True:
                chunk = pipe.read(READ_SIZE)
                if not chunk:
                    return
                capture.add(chunk)
                if session is not None:
                    session.offer(stream, chunk)
        except (OSError, ValueError):
            return


# --- 4. SOO-ERROR-NO-FINISH: a failed spawn closes the session with finish() ----------


class _FinishOnSpawnErrorShell(Shell):
    """Ends the session after a spawn failure with ``finish()``, "so its thread exits".

    The bug: finish() is normal completion, so the observer gets on_finish for a command
    that never ran.
    """

    def _on_spawn_error(self, session: Session | None) -> None:
        if session is not None:
            session.finish()


# --- 5. SOO-BUDGET: the coalescing fast path merges before the cut ----------------------


class _CoalesceBeforeCutSession(Session):
    """When the observer is behind, a small chunk joins its stream's newest entry.

    The bug: that fast path runs before the budget cut and merges the whole chunk, so
    the chunk that crosses the budget is delivered in full while the observer is behind.
    """

    def offer(self, stream: Any, chunk: bytes) -> None:
        s = _stream(stream)
        with self._cond:
            if self._phase != "active" or self._stopped:
                return
            left = self._left[s]
            if left <= 0 or not chunk:
                return
            if len(self._queue) >= COALESCE_BEHIND and len(chunk) <= COALESCE_SMALL:
                for entry in reversed(self._queue):
                    if entry[0] == "out" and entry[1] is s:
                        if len(entry[2]) + len(chunk) <= COALESCE_MAX:
                            entry[2] += chunk
                            self._left[s] = max(0, left - len(chunk))
                            self._cond.notify()
                            return
                        break
            piece = bytes(chunk[:left])
            self._left[s] = left - len(piece)
            self._queue.append(["out", s, bytearray(piece)])
            self._cond.notify()


class _CoalesceBeforeCutShell(Shell):
    session_class = _CoalesceBeforeCutSession


# --- 6. SOO-FINISH-PANIC: an observer whose on_finish raised is detached -----------------


class _DetachSession(Session):
    def _call_finish(self) -> None:
        if self._on_finish is None:
            return
        try:
            self._on_finish(self.invocation)
        except Exception:
            log.warning("on_finish raised; observer detached", exc_info=True)
            with self.shell._lock:
                self.shell._broken.add(id(self.observer))  # type: ignore[attr-defined]


class _DetachShell(Shell):
    """Remembers observers whose on_finish raised and runs later commands unobserved.

    The bug: borrowed from the write-observer chain's "disable a failing observer", it
    makes one failed on_finish change later invocations (no output, no finish).
    """

    session_class = _DetachSession

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._broken: set[int] = set()

    def _begin_observation(self, observer: Any, on_invocation: Any) -> Session | None:
        if observer is not None and id(observer) in self._broken:
            return None
        return super()._begin_observation(observer, on_invocation)


# --- 7. SOO-TIMEOUT: completion found on the waiter; the timeout kills, then cancels ----


class _KillThenCancelShell(Shell):
    """Finishes the session on the waiter thread once the pipes close and the child is
    reaped (a sound place for it), and on a time limit kills the group first "so no more
    output arrives" and cancels the session after the pipes have closed.

    The bug: the kill itself closes the pipes, the waiter then finishes the session, and
    the later cancel is a no-op (first one wins): a timed-out command gets on_finish and
    every queued chunk.
    """

    def _on_pipes_closed(self, session: Session | None) -> None:
        if session is not None:
            session.finish()

    async def _timed_out(
        self,
        proc: subprocess.Popen[bytes],
        session: Session | None,
        done: threading.Event,
        out: base._Capture,
        err: base._Capture,
    ) -> Result:
        self._kill_group(proc)
        limit = time.monotonic() + KILL_GRACE
        while not done.is_set() and time.monotonic() < limit:
            await anyio.sleep(POLL)
        if session is not None:
            session.cancel()
        stdout, out_t = out.snapshot()
        stderr, err_t = err.snapshot()
        return Result(None, stdout, stderr, out_t, err_t, True)


__all__ = ["MUTANTS", "OutsiderMutant", "implementation"]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo5-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    shell_class: type[Shell]


# --- the catalogue (the outsider's VARIANTS list: name, rule, statement, shell) --------

_SPECS = [
    OutsiderMutant(
        "out-soo5-batch-delivered-after-cancel",
        "SOO-CANCEL",
        "The presentation thread takes the whole queue in one lock round trip and delivers "
        "that batch without re-checking the phase, so chunks queued when cancel() came are "
        "still delivered; an author cutting lock traffic per chunk writes exactly this.",
        _BatchShell,
    ),
    OutsiderMutant(
        "out-soo5-kill-only-if-leader-running",
        "SOO-TIMEOUT-GROUP",
        "The time-limit kill is guarded by `proc.poll() is None` to avoid signalling a "
        "finished process, so when the leader has exited but a grandchild holds the pipes "
        "the group is never killed and the call waits past its limit.",
        _KillIfRunningShell,
    ),
    OutsiderMutant(
        "out-soo5-buffered-pipe-read",
        "SOO-LIVE",
        "The drain reads with BufferedReader.read(65536), which blocks until 64 KiB or EOF, "
        "so short progress output reaches the observer only when the command ends; the "
        "usual `proc.stdout.read(n)` mistake.",
        _BufferedReadShell,
    ),
    OutsiderMutant(
        "out-soo5-finish-on-spawn-error",
        "SOO-ERROR-NO-FINISH",
        "After a spawn failure the already-open session is closed with finish() (to let "
        "its presentation thread exit) instead of cancel(), so the observer is told a "
        "command that never ran completed.",
        _FinishOnSpawnErrorShell,
    ),
    OutsiderMutant(
        "out-soo5-coalesce-before-cut",
        "SOO-BUDGET",
        "The coalescing fast path (merge a small chunk into its stream's newest queued "
        "entry once the observer is 16 behind) runs before the budget cut and merges the "
        "whole chunk, so the crossing chunk is delivered uncut when the observer is behind.",
        _CoalesceBeforeCutShell,
    ),
    OutsiderMutant(
        "out-soo5-finish-panic-detaches-observer",
        "SOO-FINISH-PANIC",
        "An observer whose on_finish raised is remembered as broken and later commands run "
        "unobserved, copying the write-observer chain's disable-on-failure; one failed "
        "on_finish then changes other invocations.",
        _DetachShell,
    ),
    OutsiderMutant(
        "out-soo5-timeout-kills-then-cancels",
        "SOO-TIMEOUT",
        "With completion detected on the waiter thread, the time-limit path kills the group "
        "first and cancels the session only after the pipes closed, so the kill's EOF "
        "completes the session and a timed-out command gets on_finish.",
        _KillThenCancelShell,
    ),
]

#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    impl = Implementation()
    impl.shell_class = MUTANTS[name].shell_class
    return impl
