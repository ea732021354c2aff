"""Seven plausible broken variants of ``base2``: each has exactly one bug.

Outsider batch 2, written before any of them was run against the suite (the original
``variants.py`` had sha256 06053c3ce0e7b9cf7c317e43aa4b1a8be14265312038e420516c732641d24b02).
Kept as written: only imports, typing, the names (``merge_uncut`` became
``out-soo-merge-appends-uncut``...) and the registration (``_variant`` records a spec
instead of building an adapter) changed. Against the suite of their time (77 scenarios),
one was caught properly (``out-soo-timeout-kills-live-leader-only``), five survived, and
``out-soo-finish-on-child-exit`` was caught only by a scenario about another rule; the
scenarios named in ``docs/contracts/shell-output-observer.md`` ("Outsider mutants") now
catch all seven at MUST level under their rule.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seamspec.conformance._contracts.shell_output.outsiders.base2 import (
    _FINISH,
    ACTIVE,
    CANCELLED,
    MERGE_BEHIND,
    MERGE_MAX,
    MERGE_SMALL,
    Implementation,
    Session,
    Shell,
    _stream,
    log,
)

__all__ = ["MUTANTS", "OutsiderMutant", "implementation"]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    shell_class: type[Shell]


_SPECS: list[OutsiderMutant] = []


def _variant(name: str, rule: str, statement: str, shell_class: type[Shell]) -> None:
    _SPECS.append(OutsiderMutant(name, rule, statement, shell_class))


# --- 1. SOO-BUDGET: the coalescing fast path appends the uncut chunk --------------------


class _MergeUncutSession(Session):
    def offer(self, stream: Any, chunk: bytes | memoryview) -> None:
        stream = _stream(stream)
        if not chunk:
            return
        with self._cond:
            if self.phase != ACTIVE or self._disabled:
                return
            left = self._left[stream]
            if left <= 0:
                return
            # fast path first: a small chunk behind a busy observer joins the newest entry
            if len(self._queue) >= MERGE_BEHIND and len(chunk) < MERGE_SMALL:
                last = self._queue[-1]
                if (
                    last is not _FINISH
                    and last[0] is stream
                    and len(last[1]) + len(chunk) <= MERGE_MAX
                ):
                    if not isinstance(last[1], bytearray):
                        last[1] = bytearray(last[1])
                    last[1] += chunk  # BUG: the whole chunk, not the part within the budget
                    self._left[stream] = max(0, left - len(chunk))
                    self._cond.notify()
                    return
            piece = self._keep(chunk, left)
            self._left[stream] = left - len(piece)
            self._queue.append([stream, piece])
            self._cond.notify()


class _MergeUncutShell(Shell):
    session_class = _MergeUncutSession


_variant(
    "out-soo-merge-appends-uncut",
    "SOO-BUDGET",
    "when a small chunk is coalesced into a queued entry (observer 16+ entries behind), the "
    "whole chunk is appended instead of the part left in the budget",
    _MergeUncutShell,
)


# --- 2. SOO-CANCEL: the presentation thread delivers whole batches ----------------------


class _BatchSession(Session):
    def _next_batch(self) -> list[Any] | None:
        with self._cond:
            while True:
                if self._disabled or self.phase == CANCELLED:
                    return None
                if self._queue:
                    self._busy = True
                    batch = list(self._queue)
                    self._queue.clear()
                    return batch
                if self.phase != ACTIVE:
                    return None
                self._cond.wait()

    def _present(self) -> None:
        try:
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                try:
                    # BUG: the phase is not looked at again between the items of a batch,
                    # so a cancel during one callback still lets the rest of it through
                    for item in batch:
                        if item is _FINISH:
                            finish = getattr(self._observer, "on_finish", None)
                            if finish is not None:
                                try:
                                    finish(self.invocation)
                                except Exception:
                                    log.exception("on_finish raised")
                            return
                        stream, chunk = item
                        if isinstance(chunk, bytearray):
                            chunk = bytes(chunk)
                        try:
                            self._observer.on_output(self.invocation, stream, chunk)
                        except Exception:
                            log.exception("on_output raised")
                            with self._cond:
                                self._disabled = True
                                self._queue.clear()
                            self._failed()
                            return
                finally:
                    with self._cond:
                        self._busy = False
        finally:
            with self._cond:
                self._ended = True
                self._queue.clear()


class _BatchShell(Shell):
    session_class = _BatchSession


_variant(
    "out-soo-batch-ignores-cancel",
    "SOO-CANCEL",
    "the presentation thread takes everything queued as one batch and delivers it without "
    "re-checking the phase, so chunks queued before a cancel are still delivered after it",
    _BatchShell,
)


# --- 3. SOO-IDS: the session (and its ID) is created on the first output ----------------


class _LazySink:
    """Opens the real session only when the command first prints (or completes)."""

    def __init__(
        self, shell: Shell, observer: Any, on_invocation: Callable[[int], None] | None
    ) -> None:
        self._shell = shell
        self._observer = observer
        self._on_invocation = on_invocation
        self._lock = threading.Lock()
        self._session: Session | None = None
        self._stopped = False

    @property
    def invocation(self) -> int | None:
        return None if self._session is None else self._session.invocation

    def _get(self) -> Session | None:
        if self._session is None and not self._stopped:
            self._session = self._shell._open(self._observer)
            if self._on_invocation is not None:
                self._on_invocation(self._session.invocation)
        return self._session

    def offer(self, stream: Any, chunk: bytes) -> None:
        if not chunk:
            return
        with self._lock:
            session = self._get()
        if session is not None:
            session.offer(stream, chunk)

    def finish(self) -> None:
        with self._lock:
            session = self._get()
            self._stopped = True
        if session is not None:
            session.finish()

    def cancel(self) -> None:
        with self._lock:
            self._stopped = True
            session = self._session
        if session is not None:
            session.cancel()


class _LazyShell(Shell):
    def _attach(self, observer: Any, on_invocation: Callable[[int], None] | None) -> Any:
        if observer is None:
            return None
        # BUG: the ID is drawn when the command first prints, not when it is created
        return _LazySink(self, observer, on_invocation)


_variant(
    "out-soo-ids-at-first-output",
    "SOO-IDS",
    "a run's session (and so its ID) is opened lazily at its first output or completion, so "
    "IDs follow first-output order, not creation order",
    _LazyShell,
)


# --- 4. SOO-PANIC: an observer that raised is quarantined for later invocations ---------


class _QuarantineSession(Session):
    broken: set[int]

    def _failed(self) -> None:
        # BUG: remembered per observer object, for every later invocation of this shell
        self.broken.add(id(self.source))


class _QuarantineShell(Shell):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        broken: set[int] = set()

        class _S(_QuarantineSession):
            pass

        _S.broken = broken
        self.session_class = _S
        self._broken = broken

    def _open(self, observer: Any) -> Session:
        session = super()._open(observer)
        if id(observer) in self._broken:
            with session._cond:
                session._disabled = True
        return session


_variant(
    "out-soo-panicked-observer-quarantined",
    "SOO-PANIC",
    "an observer whose on_output raised is remembered as broken and silently gets nothing in "
    "every later invocation (its IDs are still taken)",
    _QuarantineShell,
)


# --- 5. SOO-TIMEOUT-GROUP: the group is killed only while the leader is alive -----------


class _KillIfAliveShell(Shell):
    def _end_group_on_timeout(self, proc: subprocess.Popen[bytes]) -> None:
        # BUG: a guard against PID reuse; once the leader has exited (poll() reaps it),
        # its group is not killed, and a grandchild holding the pipes lives on
        if proc.poll() is None:
            self._kill_group(proc)


_variant(
    "out-soo-timeout-kills-live-leader-only",
    "SOO-TIMEOUT-GROUP",
    "at the time limit the process group is killed only if the leader has not exited yet, "
    "so a grandchild that outlived its leader keeps running and holds the pipes",
    _KillIfAliveShell,
)


# --- 6. SOO-FINISH: completion is the child's exit, not end of file on both pipes -------


class _FinishOnExitShell(Shell):
    @staticmethod
    def _waiter(
        proc: subprocess.Popen[bytes], drains: list[threading.Thread], done: threading.Event
    ) -> None:
        # BUG: completion signalled when the child is reaped; the drains may still hold
        # its last output, which is then offered after finish() and dropped as late
        proc.wait()
        done.set()


_variant(
    "out-soo-finish-on-child-exit",
    "SOO-FINISH",
    "the session is finished as soon as the child has exited, before the drains reach end "
    "of file, so output still in the pipes is dropped as late and on_finish claims all",
    _FinishOnExitShell,
)


# --- 7. SOO-RAW: the chunk cut at the budget aliases the drain's reused buffer ----------


class _AliasSession(Session):
    @staticmethod
    def _keep(chunk: Any, left: int) -> Any:
        if len(chunk) <= left:
            return bytes(chunk)
        return chunk[:left]  # BUG: a view into the drain's reused read buffer, not a copy


class _AliasShell(Shell):
    session_class = _AliasSession


_variant(
    "out-soo-cut-chunk-aliases-buffer",
    "SOO-RAW",
    "the chunk cut at the budget is kept as a slice of the drain's reused read buffer, not "
    "a copy, so the next read can overwrite it before it is delivered",
    _AliasShell,
)


#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    return Implementation(MUTANTS[name].shell_class)
