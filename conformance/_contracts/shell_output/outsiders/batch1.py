"""Sixteen plausible broken variants of ``base``: each has exactly one bug.

Outsider batch 1, written before any of them was run against the suite (the original
``variants.py`` had sha256 aea7be2e1c795790c41fd3633c7fee3b898975c36abe26d816cd2af946ba803e).
Kept as written: only imports, typing, the names (``vNN_x_y`` became ``out-soo-x-y``) and
the registration (``variant`` records a spec instead of building an adapter) changed.
Against the suite of their time, thirteen were caught properly, ``out-soo-late-chunk-
after-finish`` survived, ``out-soo-budget-zero-is-unset`` was only a strict-profile
recommendation and ``out-soo-result-capped-by-budget`` was caught only by scenarios citing
other rules; the scenarios named in ``docs/contracts/shell-output-observer.md`` ("Outsider
mutants") now catch all sixteen at MUST level under their rule.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.outsiders.base import (
    _FINISH,
    PIPE_CLOSE_LIMIT,
    CommandRefused,
    Implementation,
    ObservationSession,
    Phase,
    ShellOutputStream,
    ShellResult,
    ShellRunner,
    _Invocation,
    _stream,
    log,
)

__all__ = ["MUTANTS", "OutsiderMutant", "implementation"]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    shell_class: type[ShellRunner]


_SPECS: list[OutsiderMutant] = []


def variant(name: str, rule: str, statement: str, shell_class: type[ShellRunner]) -> None:
    _SPECS.append(OutsiderMutant(name, rule, statement, shell_class))


def with_session(session_class: type[ObservationSession]) -> type[ShellRunner]:
    return type(f"Shell_{session_class.__name__}", (ShellRunner,), {"session_class": session_class})


# --- v01 SOO-BUDGET: all-or-nothing accounting -------------------------------------------


class AllOrNothingBudget(ObservationSession):
    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes:
        left = self._left[stream]
        if len(chunk) > left:  # BUG: the crossing chunk is dropped, not cut to what remains
            return b""
        self._left[stream] = left - len(chunk)
        return bytes(chunk)


variant(
    "out-soo-budget-drops-crossing",
    "SOO-BUDGET",
    "a chunk that does not fit the remaining budget is dropped whole (and later smaller ones still pass) instead of cut to the remaining prefix",
    with_session(AllOrNothingBudget),
)


# --- v02 SOO-BUDGET-ZERO: 0 treated as "not set" -------------------------------------------


class FalsyBudgetShell(ShellRunner):
    def __init__(
        self, *, output_cap: int = 1024 * 1024, live_budget: int | None = None, **kw: Any
    ) -> None:
        super().__init__(output_cap=output_cap, live_budget=live_budget, **kw)
        self.live_budget = live_budget or output_cap  # BUG: a budget of 0 falls back to the cap


variant(
    "out-soo-budget-zero-is-unset",
    "SOO-BUDGET-ZERO",
    "`live_budget or output_cap`: a live budget of 0 is taken as unset and the cap is used, so output is delivered",
    FalsyBudgetShell,
)


# --- v03 SOO-NONEMPTY: off-by-one exhaustion test -------------------------------------------


class EmptyAtLimit(ObservationSession):
    def offer(self, stream: object, chunk: bytes) -> None:
        name = _stream(stream)
        with self._cond:
            if self._phase is not Phase.ACTIVE or self._disabled:
                return
            if self._left[name] < 0:  # BUG: exhausted is 0, not negative; the cut b"" is queued
                return
            part = bytes(chunk[: self._left[name]])
            self._left[name] -= len(part)
            self._queue.append((name, part))
            self._cond.notify()


variant(
    "out-soo-empty-chunk-at-limit",
    "SOO-NONEMPTY",
    "exhaustion is tested with `< 0` and the cut is queued unchecked, so after the budget is used up (or for an empty offer) on_output gets b''",
    with_session(EmptyAtLimit),
)


# --- v04 SOO-THREAD: inline fast path --------------------------------------------------------


class InlineFastPath(ObservationSession):
    def offer(self, stream: object, chunk: bytes) -> None:
        name = _stream(stream)
        with self._cond:
            if self._phase is not Phase.ACTIVE or self._disabled:
                return
            part = self._accept(name, chunk)
            if not part:
                return
            if self._queue or self._busy:
                self._queue.append((name, part))
                self._cond.notify()
                return
            # BUG: nothing queued and the presenter idle: deliver right here, on the offering
            # (drain / caller) thread, to save a thread wake-up
            self._busy = True
        try:
            self._on_output(self.invocation, name, part)
        except Exception:
            log.exception("observer failed")
            with self._cond:
                self._disabled = True
                self._queue.clear()
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _next(self) -> Any:
        with self._cond:
            while (
                (not self._queue or self._busy)
                and self._phase is Phase.ACTIVE
                and not self._disabled
            ):
                self._cond.wait()
            while self._busy and not self._disabled and self._phase is not Phase.CANCELLED:
                self._cond.wait()
            if self._phase is Phase.CANCELLED or self._disabled or not self._queue:
                return None
            self._busy = True
            return self._queue.popleft()


variant(
    "out-soo-inline-fast-path",
    "SOO-THREAD",
    "when the queue is empty and the presenter idle, offer() calls on_output directly on the offering thread (drain thread or caller)",
    with_session(InlineFastPath),
)


# --- v05 SOO-ISOLATION: one presentation thread per runner ---------------------------------


class SharedPresenter:
    """One 'UI thread' for every invocation of a runner."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.queue: list[tuple[ObservationSession, Any]] = []
        self.busy = False
        self.thread = threading.Thread(target=self._loop, daemon=True, name="soo-presenter")
        self.thread.start()

    def push(self, session: ObservationSession, item: Any) -> None:
        with self.cond:
            self.queue.append((session, item))
            self.cond.notify()

    def drop(self, session: ObservationSession) -> None:
        with self.cond:
            self.queue = [e for e in self.queue if e[0] is not session]

    def pending(self, session: ObservationSession) -> bool:
        with self.cond:
            return any(e[0] is session for e in self.queue)

    def idle(self) -> bool:
        with self.cond:
            return not self.busy and not self.queue

    def _loop(self) -> None:
        while True:
            with self.cond:
                while not self.queue:
                    self.cond.wait()
                session, item = self.queue.pop(0)
                if session._phase is Phase.CANCELLED or session._disabled:
                    continue
                self.busy = True
            try:
                if item is _FINISH:
                    session._deliver_finish()
                    continue
                stream, chunk = item
                try:
                    session._on_output(session.invocation, stream, chunk)
                except Exception:
                    log.exception("observer failed")
                    session._disabled = True
                    self.drop(session)
            finally:
                with self.cond:
                    self.busy = False


class SharedPresenterSession(ObservationSession):
    presenter: SharedPresenter

    def _start(self) -> None:
        pass  # BUG: no thread of its own: the runner's single presenter serves everyone

    def offer(self, stream: object, chunk: bytes) -> None:
        name = _stream(stream)
        with self._cond:
            if self._phase is not Phase.ACTIVE or self._disabled:
                return
            part = self._accept(name, chunk)
            if not part:
                return
        self.presenter.push(self, (name, part))

    def finish(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.FINISHED
            if self._disabled:
                return
        self.presenter.push(self, _FINISH)

    def cancel(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.CANCELLED
        self.presenter.drop(self)

    abort = cancel

    def idle(self) -> bool:
        return self.presenter.idle()


class SharedPresenterShell(ShellRunner):
    session_class: type[ObservationSession] = SharedPresenterSession

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        presenter = SharedPresenter()
        self.session_class = type(
            "BoundSession", (SharedPresenterSession,), {"presenter": presenter}
        )


variant(
    "out-soo-shared-presenter",
    "SOO-ISOLATION",
    "one presentation thread per runner serves every invocation, so a blocked callback of one delays the others (and they share a thread)",
    SharedPresenterShell,
)


# --- v06 SOO-PIPE-ORDER: coalescing into the oldest entry ---------------------------------


class CoalesceOldest(ObservationSession):
    BEHIND = 2
    SMALL = 4096

    def offer(self, stream: object, chunk: bytes) -> None:
        name = _stream(stream)
        with self._cond:
            if self._phase is not Phase.ACTIVE or self._disabled:
                return
            part = self._accept(name, chunk)
            if not part:
                return
            if len(self._queue) >= self.BEHIND and len(part) <= self.SMALL:
                # observer is behind: append small chunks to a queued entry of this stream
                for (
                    entry
                ) in self._queue:  # BUG: finds the OLDEST entry of the stream, not the newest
                    if entry is not _FINISH and entry[0] == name:
                        entry[1] += part
                        return
            self._queue.append([name, part])
            self._cond.notify()


variant(
    "out-soo-coalesce-into-oldest",
    "SOO-PIPE-ORDER",
    "when the observer is 2+ entries behind, a small chunk is merged into the oldest queued entry of its stream instead of the newest, reordering that pipe's bytes",
    with_session(CoalesceOldest),
)


# --- v07 SOO-FINISH: finish() copied from cancel() ------------------------------------------


class FinishClearsQueue(ObservationSession):
    def finish(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.FINISHED
            self._queue.clear()  # BUG: left over from cancel(): chunks still queued are dropped
            if not self._disabled:
                self._queue.append(_FINISH)
            self._cond.notify()


variant(
    "out-soo-finish-drops-queued",
    "SOO-FINISH",
    "finish() (written from cancel()) clears the queue before queueing the finish, so chunks not yet delivered at completion are lost though on_finish comes",
    with_session(FinishClearsQueue),
)


# --- v08 SOO-PANIC: log and carry on ----------------------------------------------------------


class PanicContinues(ObservationSession):
    def _present(self) -> None:
        while True:
            item = self._next()
            if item is None:
                return
            if item is _FINISH:
                self._deliver_finish()
                self._done_one()
                return
            stream, chunk = item
            try:
                self._on_output(self.invocation, stream, chunk)
            except Exception:  # BUG: logged and ignored; observation goes on, on_finish still comes
                log.exception("shell-output observer failed (ignored)")
            self._done_one()


variant(
    "out-soo-panic-keeps-observing",
    "SOO-PANIC",
    "an exception from on_output is logged and ignored: later chunks and on_finish are still delivered",
    with_session(PanicContinues),
)


# --- v09 SOO-CANCEL: cancel lets queued chunks drain -----------------------------------------


class CancelDrains(ObservationSession):
    def cancel(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.CANCELLED  # BUG: the queue is kept and delivered
            self._cond.notify()

    abort = cancel

    def _next(self) -> Any:
        with self._cond:
            while not self._queue and self._phase is Phase.ACTIVE and not self._disabled:
                self._cond.wait()
            if self._disabled or not self._queue:
                return None
            self._busy = True
            return self._queue.popleft()


variant(
    "out-soo-cancel-delivers-queued",
    "SOO-CANCEL",
    "cancel() stops accepting but lets the presenter deliver the chunks already queued (a 'graceful' close)",
    with_session(CancelDrains),
)


# --- v10 SOO-TIMEOUT: timeout falls through to the normal tail -------------------------------


class TimeoutFinishes(ShellRunner):
    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> ShellResult:
        reason = self.policy(argv)
        if reason is not None:
            raise CommandRefused(reason)
        session = self._open(observer, on_invocation)
        try:
            proc = self._spawn(argv)
        except BaseException:
            self._spawn_failed(session)
            raise
        inv = _Invocation(self, proc, session)
        inv.start()
        timed_out = False
        try:
            if timeout is None:
                await self._wait_event(inv.done)
            else:
                with anyio.move_on_after(timeout) as scope:
                    await self._wait_event(inv.done)
                timed_out = scope.cancelled_caught and not inv.done.is_set()
        except BaseException:
            self._stop(inv)
            raise
        if timed_out:
            inv.kill()  # BUG: only the child is stopped; the session is not cancelled ...
            await self._wait_event(inv.pipes_closed, PIPE_CLOSE_LIMIT)
        if session is not None:
            session.finish()  # ... and the shared tail tells the observer it saw everything
        return inv.result(timed_out=timed_out)


variant(
    "out-soo-timeout-finishes",
    "SOO-TIMEOUT",
    "on a time limit the child is killed but the session is not cancelled; the common tail calls finish(), so on_finish follows a timeout",
    TimeoutFinishes,
)


# --- v11 SOO-IDS: every run takes an ID ---------------------------------------------------------


class IdForEveryRun(ShellRunner):
    def _open(
        self, observer: Any, on_invocation: Callable[[int], None] | None
    ) -> ObservationSession | None:
        invocation = self.ids.take()  # BUG: taken before knowing whether anyone observes
        if observer is None:
            return None
        session = self._new_session(invocation, observer)
        if on_invocation is not None:
            on_invocation(invocation)
        return session


variant(
    "out-soo-unobserved-take-ids",
    "SOO-IDS",
    "every run takes an invocation ID, observed or not, so unobserved commands leave gaps",
    IdForEveryRun,
)


# --- v12 SOO-ENVELOPE: result capped by the live budget when observed -------------------------


class EnvelopeUsesBudget(ShellRunner):
    def _result_cap(self, session: ObservationSession | None) -> int:
        if session is None:
            return self.output_cap
        return min(self.output_cap, self.live_budget)  # BUG: the pane's budget caps the result too


variant(
    "out-soo-result-capped-by-budget",
    "SOO-ENVELOPE",
    "when observed, the result's capture uses min(cap, live budget), so the result depends on the observer",
    EnvelopeUsesBudget,
)


# --- v13 SOO-ERROR-NO-FINISH: spawn failure "closes" the session normally ------------------------


class SpawnFailureFinishes(ShellRunner):
    def _spawn_failed(self, session: ObservationSession | None) -> None:
        if session is not None:
            session.finish()  # BUG: finish() instead of abort(): on_finish after a failed spawn


variant(
    "out-soo-spawn-error-finishes",
    "SOO-ERROR-NO-FINISH",
    "when spawning fails after the ID was taken, the session is closed with finish() and the observer gets on_finish",
    SpawnFailureFinishes,
)


# --- v14 SOO-NO-STALL: bounded queue ----------------------------------------------------------


class BoundedQueue(ObservationSession):
    MAX_ENTRIES = 8

    def offer(self, stream: object, chunk: bytes) -> None:
        name = _stream(stream)
        with self._cond:
            # BUG: back-pressure: the offering (drain) thread waits while the queue is full
            while (
                len(self._queue) >= self.MAX_ENTRIES
                and self._phase is Phase.ACTIVE
                and not self._disabled
            ):
                self._cond.wait()
            if self._phase is not Phase.ACTIVE or self._disabled:
                return
            part = self._accept(name, chunk)
            if not part:
                return
            self._queue.append((name, part))
            self._cond.notify_all()

    def cancel(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.CANCELLED
            self._queue.clear()
            self._cond.notify_all()

    abort = cancel

    def _next(self) -> Any:
        with self._cond:
            while not self._queue and self._phase is Phase.ACTIVE and not self._disabled:
                self._cond.wait()
            if self._phase is Phase.CANCELLED or self._disabled or not self._queue:
                self._cond.notify_all()
                return None
            self._busy = True
            item = self._queue.popleft()
            self._cond.notify_all()
            return item


variant(
    "out-soo-bounded-queue-backpressure",
    "SOO-NO-STALL",
    "the queue holds at most 8 entries and offer() waits for room, so a stuck observer blocks the drain thread and the child",
    with_session(BoundedQueue),
)


# --- v15 SOO-NO-WAIT: run waits for the pane --------------------------------------------------


class WaitsForPane(ShellRunner):
    async def _after_finish(self, session: ObservationSession) -> None:
        # BUG: "so the transcript is complete when the result is shown"
        await anyio.to_thread.run_sync(session._thread.join, abandon_on_cancel=True)


variant(
    "out-soo-run-waits-for-presenter",
    "SOO-NO-WAIT",
    "run() joins the presentation thread after finish(), so it returns only once the observer has drawn everything",
    WaitsForPane,
)


# --- v16 SOO-LATE: phase-only finish, guard forgets FINISHED ----------------------------------


class LateAfterFinish(ObservationSession):
    """Finish is a phase, not a queue entry: the presenter calls on_finish once drained."""

    def offer(self, stream: object, chunk: bytes) -> None:
        name = _stream(stream)
        with self._cond:
            if self._phase is Phase.CANCELLED or self._disabled:  # BUG: FINISHED not refused
                return
            part = self._accept(name, chunk)
            if not part:
                return
            self._queue.append((name, part))
            self._cond.notify()

    def finish(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.FINISHED
            self._cond.notify()

    def _next(self) -> Any:
        with self._cond:
            while not self._queue and self._phase is Phase.ACTIVE and not self._disabled:
                self._cond.wait()
            if self._phase is Phase.CANCELLED or self._disabled:
                return None
            self._busy = True
            if self._queue:
                return self._queue.popleft()
            return _FINISH

    def idle(self) -> bool:
        with self._cond:
            if not self._thread.is_alive():
                return True
            if self._phase is Phase.FINISHED and not self._disabled:
                return False
            return not self._busy and not self._queue


variant(
    "out-soo-late-chunk-after-finish",
    "SOO-LATE",
    "offer() refuses only when CANCELLED, so a chunk offered after finish() while the presenter is still busy is delivered (before on_finish)",
    with_session(LateAfterFinish),
)


#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    return Implementation(MUTANTS[name].shell_class)
