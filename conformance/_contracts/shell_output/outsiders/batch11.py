"""Seven plausible broken variants of ``base11``: each has exactly one bug.

Outsider batch 11 (soo11), written before any of them was run against the suite (the
original ``b11soo_variants.py`` had sha256
f62a085910133e60d0806691f5008e457d360ab47a7bf35afdb017db572db763). Kept as written: only
imports, typing, the linter's layout and the catalogue at the end (``OutsiderMutant``
records a spec instead of a ``VARIANTS`` list of triples with ``V_*`` adapter factories
built at import) changed. Labels changed after triage are in ``RELABELLED``, variants
found not to be bugs in ``REJECTED``, variants no scenario catches yet in ``PENDING``
(with why) and real bugs no scenario can catch deterministically in ``UNSEEN``; only the
rest are registered as mutants (``MUTANTS``).

First try, against the suite of main 83f2bad (130 scenarios), judged by the lead by the
meta-test's standard (a scenario citing the rule fails it at MUST level and the oracle
names the rule): one killed properly (``out-soo11-cancelled-silent-gives-id-back``, by
soo-ids-not-executable-between, soo-ids-spawn-failure-overlapping and
soo-ids-with-spawn-failure-between); six survived (``out-soo11-observed-keeps-stdin``,
``out-soo11-timeout-ceil-seconds``, ``out-soo11-full-read-gathers-more``,
``out-soo11-strip-ansi-for-pane``, ``out-soo11-queue-byte-bound-both-streams``,
``out-soo11-budget-per-observer``). See docs/contracts/shell-output-observer.md,
"Outsider mutants", batch 11, for what kills each now; after triage all seven are
registered (``PENDING`` is empty).

(The outsider's module docstring: "b11soo variants: the base runner with exactly one
plausible bug each.")
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from seamspec.conformance._contracts.shell_output.outsiders import base11 as base
from seamspec.conformance._contracts.shell_output.outsiders.base11 import (
    ACTIVE,
    READ_SIZE,
    Implementation,
    ObservationSession,
    ShellOutputStream,
    ShellRunner,
    _stream,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter


def _register(runner: ShellRunner, session: ObservationSession) -> ObservationSession:
    with runner._lock:
        runner._sessions = [s for s in runner._sessions if not s._ended]
        runner._sessions.append(session)
    return session


# --------------------------------------------------------------------------------------
# 1. SOO-TIMEOUT: the limit is rounded up to whole seconds ("never fires early")
# --------------------------------------------------------------------------------------
class CeilTimeoutRunner(ShellRunner):
    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> base.ShellResult:
        # The page warns that a limit taken as whole seconds must never fire before it is
        # reached, so round *up*: 0.3 s becomes 1 s (0 stays 0, a limit that fires at once).
        if timeout is not None:
            timeout = math.ceil(timeout)
        return await super().run(
            argv, observer=observer, timeout=timeout, on_invocation=on_invocation
        )


# --------------------------------------------------------------------------------------
# 2. SOO-ENVELOPE: an observed command keeps the runner's stdin (for prompts in the pane)
# --------------------------------------------------------------------------------------
_observed: contextvars.ContextVar[bool] = contextvars.ContextVar("b11soo_observed", default=False)


class ObservedStdinRunner(ShellRunner):
    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> base.ShellResult:
        token = _observed.set(observer is not None)
        try:
            return await super().run(
                argv, observer=observer, timeout=timeout, on_invocation=on_invocation
            )
        finally:
            _observed.reset(token)

    def _spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        if not _observed.get():
            return super()._spawn(argv)
        # A watched command may show a prompt ("Password: ") in the pane, so let the user
        # answer it: keep the runner's own stdin instead of /dev/null.
        return subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )


# --------------------------------------------------------------------------------------
# 3. SOO-LIVE: a full read is assumed to have more behind it, and read again at once
# --------------------------------------------------------------------------------------
class FullReadGatherRunner(ShellRunner):
    def _drain(
        self,
        fd: int,
        stream: ShellOutputStream,
        capture: base._Capture,
        session: ObservationSession | None,
        done: threading.Event,
    ) -> None:
        try:
            if self.thread_hook is not None:
                self.thread_hook("drain", None if session is None else session.invocation)
            while True:
                try:
                    chunk = os.read(fd, READ_SIZE)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                # A read that filled the buffer means the pipe had more: take that too, so
                # the pane gets one large chunk instead of many (at most 16 reads).
                reads = 1
                while len(chunk) == reads * READ_SIZE and reads < 16:
                    try:
                        more = os.read(fd, READ_SIZE)
                    except OSError:
                        more = b""
                    if not more:
                        break
                    chunk += more
                    reads += 1
                capture.add(chunk)
                if session is not None:
                    session.offer(stream, chunk)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            done.set()


# --------------------------------------------------------------------------------------
# 4. SOO-RAW: terminal control sequences are stripped before the pane sees the bytes
# --------------------------------------------------------------------------------------
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


class StripAnsiRunner(ShellRunner):
    def _drain(
        self,
        fd: int,
        stream: ShellOutputStream,
        capture: base._Capture,
        session: ObservationSession | None,
        done: threading.Event,
    ) -> None:
        try:
            if self.thread_hook is not None:
                self.thread_hook("drain", None if session is None else session.invocation)
            while True:
                try:
                    chunk = os.read(fd, READ_SIZE)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                capture.add(chunk)
                if session is not None:
                    # colours and cursor moves would garble a log pane: show the text only
                    shown = _ANSI.sub(b"", chunk) if b"\x1b" in chunk else chunk
                    if shown:
                        session.offer(stream, shown)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            done.set()


# --------------------------------------------------------------------------------------
# 5. SOO-NO-STALL: the queue is bounded by one budget in bytes, both streams together
# --------------------------------------------------------------------------------------
class ByteBoundSession(ObservationSession):
    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self._bound = budget  # "at most one budget can ever be queued"
        self._queued_bytes = 0
        super().__init__(invocation, observer, budget)
        with self._cond:  # nothing can have been offered yet: observe() has not returned
            self._queue = _CountingDeque(self)

    def offer(self, stream: Any, chunk: bytes | bytearray | memoryview) -> None:
        stream = _stream(stream)
        if not chunk:
            return
        with self._cond:
            if self._phase != ACTIVE or self._disabled:
                return
            left = self._budget[stream]
            if left <= 0:
                return
            piece = bytes(chunk[:left])
            if not piece:
                return
            self._budget[stream] = left - len(piece)
            # the budget bounds the queue; make sure of it, without dropping anything
            while (
                self._queued_bytes + len(piece) > self._bound
                and self._phase == ACTIVE
                and not self._disabled
            ):
                self._cond.wait()
            if self._phase != ACTIVE or self._disabled:
                return
            self._queued_bytes += len(piece)
            self._queue.append((stream, piece))
            self._cond.notify_all()


class _CountingDeque(base.deque):  # type: ignore[misc,name-defined]
    def __init__(self, session: ByteBoundSession) -> None:
        super().__init__()
        self._session = session

    def popleft(self) -> Any:  # called with the session's condition held
        item = super().popleft()
        if item is not base._FINISH:
            self._session._queued_bytes -= len(item[1])
            self._session._cond.notify_all()
        return item

    def clear(self) -> None:
        super().clear()
        self._session._queued_bytes = 0
        self._session._cond.notify_all()


class ByteBoundRunner(ShellRunner):
    def observe(self, observer: Any) -> ObservationSession:
        invocation = self.ids.take()
        return _register(self, ByteBoundSession(invocation, observer, self.live_budget))


# --------------------------------------------------------------------------------------
# 6. SOO-BUDGET: the live budget is kept per observer object, not per invocation
# --------------------------------------------------------------------------------------
class SharedBudgetRunner(ShellRunner):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # one state per observer, so a plain function is wrapped once and the pane's
        # budget is tracked where the pane is
        self._observer_budgets: dict[int, dict[ShellOutputStream, int]] = {}

    def observe(self, observer: Any) -> ObservationSession:
        invocation = self.ids.take()
        session = ObservationSession(invocation, observer, self.live_budget)
        with self._lock:
            budgets = self._observer_budgets.setdefault(
                id(observer),
                {
                    ShellOutputStream.STDOUT: self.live_budget,
                    ShellOutputStream.STDERR: self.live_budget,
                },
            )
        session._budget = budgets
        return _register(self, session)


# --------------------------------------------------------------------------------------
# 7. SOO-IDS: a session cancelled before it was offered anything gives its ID back
# --------------------------------------------------------------------------------------
class GiveBackIds(base.InvocationIds):
    def give_back(self, value: int) -> None:
        with self._lock:
            if self._next == value + 1:  # nobody took a later one: safe to step back
                self._next = value


class GiveBackSession(ObservationSession):
    def __init__(self, invocation: int, observer: Any, budget: int, ids: GiveBackIds) -> None:
        self._ids = ids
        self._offered = False
        super().__init__(invocation, observer, budget)

    def offer(self, stream: Any, chunk: bytes | bytearray | memoryview) -> None:
        if chunk:
            self._offered = True
        super().offer(stream, chunk)

    def cancel(self) -> None:
        with self._cond:
            was_active = self._phase == ACTIVE
        super().cancel()
        if was_active and not self._offered:
            # nothing was ever shown under this ID: keep the IDs dense, as for a failed spawn
            self._ids.give_back(self.invocation)


class GiveBackRunner(ShellRunner):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("ids", GiveBackIds())
        super().__init__(**kwargs)

    def observe(self, observer: Any) -> ObservationSession:
        invocation = self.ids.take()
        assert isinstance(self.ids, GiveBackIds)
        return _register(self, GiveBackSession(invocation, observer, self.live_budget, self.ids))


# --------------------------------------------------------------------------------------
def _impl(runner: type[ShellRunner]) -> Implementation:
    impl = Implementation()
    impl.runner_class = runner
    return impl


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo11-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    runner_class: type[ShellRunner]


#: name, rule and statement as the outsider wrote them, and the runner with the bug.
_SPECS = [
    OutsiderMutant(
        "out-soo11-timeout-ceil-seconds",
        "SOO-TIMEOUT",
        "The time limit is rounded up to whole seconds (math.ceil), so a 0.3 s limit "
        "fires at 1 s and a 1.5 s limit at 2 s: the call does not return at its limit.",
        CeilTimeoutRunner,
    ),
    OutsiderMutant(
        "out-soo11-observed-keeps-stdin",
        "SOO-ENVELOPE",
        "An observed command is spawned with the runner's own stdin (so a prompt shown in "
        "the pane could be answered), an unobserved one with /dev/null: the command is "
        "spawned differently with and without an observer.",
        ObservedStdinRunner,
    ),
    OutsiderMutant(
        "out-soo11-full-read-gathers-more",
        "SOO-LIVE",
        "A read that fills the 64 KiB buffer is taken to mean more is waiting and the "
        "drain reads again before offering, so output that is an exact multiple of 64 KiB "
        "is held back while the child waits.",
        FullReadGatherRunner,
    ),
    OutsiderMutant(
        "out-soo11-strip-ansi-for-pane",
        "SOO-RAW",
        "Terminal escape sequences (colours, cursor moves) are stripped from the chunks "
        "before they are offered, so the observer is shown bytes that are not a prefix of "
        "what the child wrote.",
        StripAnsiRunner,
    ),
    OutsiderMutant(
        "out-soo11-queue-byte-bound-both-streams",
        "SOO-NO-STALL",
        "The queue is bounded to one live budget of bytes for both streams together and "
        "an offer waits for room, so behind a blocked observer a stream that fills its "
        "budget stalls the other stream's draining thread.",
        ByteBoundRunner,
    ),
    OutsiderMutant(
        "out-soo11-budget-per-observer",
        "SOO-BUDGET",
        "The live budget is kept per observer object (shared by all its invocations and "
        "never reset), so an observer that watches several commands gets one budget in "
        "total instead of one per invocation.",
        SharedBudgetRunner,
    ),
    OutsiderMutant(
        "out-soo11-cancelled-silent-gives-id-back",
        "SOO-IDS",
        "A session cancelled before it was offered any output steps the ID counter back "
        "(if nobody took a later ID), so the next invocation repeats the cancelled one's ID.",
        GiveBackRunner,
    ),
]

#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}

#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {}

#: Variants triage found not to be bugs, with the reason (kept here, never registered).
REJECTED: dict[str, str] = {}

#: Variants kept but not registered as mutants yet (no scenario catches them), with why.
PENDING: dict[str, str] = {}

#: Variants that are real bugs the suite cannot see deterministically (none so far).
UNSEEN: dict[str, str] = {}

#: The variants registered as mutants.
MUTANTS: dict[str, OutsiderMutant] = {
    name: v
    for name, v in VARIANTS.items()
    if name not in PENDING and name not in REJECTED and name not in UNSEEN
}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    return _impl(VARIANTS[name].runner_class)


def build(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named variant as an adapter (the outsider's ``V_*`` attributes, either backend)."""
    return make_adapter(implementation(name), name=name, backend=backend)
