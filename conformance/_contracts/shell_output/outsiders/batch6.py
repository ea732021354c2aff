"""Seven plausible broken variants of ``base6``: each has exactly one bug.

Outsider batch 6 (soo6), written before any of them was run against the suite (the
original ``b6soo_variants.py`` had sha256
f109533857b137a872c64abd4eefb14dc1f006e9b61ba0af7f0256554e5dd699). Kept as written: only
imports, typing, the linter's layout and the catalogue at the end (``OutsiderMutant``
records a spec instead of a ``VARIANTS`` list of adapter factories) changed. The
outsider's own summary: each variant changes one small piece of the base (a subclass
overriding one method, or the few lines one idea needs).

First try, against the suite of main f94b013 (93 scenarios), judged by the lead on a
heavily loaded machine: five counted as killed properly (a failure in a scenario that
cites the rule or whose oracle names it: ``out-soo6-budget-per-shell``,
``out-soo6-coalesce-into-oldest``, ``out-soo6-presenter-parks-when-idle``,
``out-soo6-truncated-at-exact-cap``, ``out-soo6-line-buffered-live``); two survived:
``out-soo6-timeout-zero-means-none`` (no scenario could set a time limit of 0) and
``out-soo6-finish-under-shell-lock`` (no scenario blocked an ``on_finish`` while another
invocation finished). By the meta-test's standard (a scenario citing the rule, with the
oracle naming it) only the coalescing and the exact-cap variants were caught, and the
parking presenter only by load. See docs/contracts/shell-output-observer.md, "Outsider
mutants", batch 6, for what kills each now and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seamspec.conformance._contracts.shell_output.outsiders import base6 as base
from seamspec.conformance._contracts.shell_output.outsiders.base6 import (
    ACTIVE,
    CANCELLED,
    DISABLED,
    FINISH,
    FINISHED,
    Implementation,
    Session,
    Shell,
    ShellOutputStream,
    _Capture,
    _Entry,
    log,
)

# --- 1. SOO-BUDGET: the live budget lives on the runner, not on the invocation ---------


class _ShellWideBudgetShell(Shell):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # what is left of the live budget, per stream (set up once, with the runner)
        self.live_left = {
            ShellOutputStream.STDOUT: self.live_budget,
            ShellOutputStream.STDERR: self.live_budget,
        }


class _ShellWideBudgetSession(Session):
    def _accept(self, s: ShellOutputStream, chunk: bytes) -> bytes:
        left_by_stream = self.shell.live_left  # type: ignore[attr-defined]
        left = left_by_stream[s]
        if left <= 0:
            return b""
        if len(chunk) > left:
            chunk = chunk[:left]
        left_by_stream[s] = left - len(chunk)
        return chunk


_ShellWideBudgetShell.session_class = _ShellWideBudgetSession


class _BudgetPerShell(Implementation):
    shell_class = _ShellWideBudgetShell


# --- 2. SOO-PIPE-ORDER: coalescing appends to the stream's OLDEST queued entry ---------


class _CoalesceOldestSession(Session):
    def _enqueue(self, s: ShellOutputStream, chunk: bytes) -> None:
        if len(self._queue) >= base.COALESCE_AFTER and len(chunk) < base.COALESCE_SMALL:
            for entry in self._queue:  # first entry of this stream found
                if isinstance(entry, _Entry) and entry.stream is s:
                    if entry.size + len(chunk) <= base.COALESCE_MAX:
                        entry.parts.append(chunk)
                        entry.size += len(chunk)
                        return
                    break
        self._queue.append(_Entry(s, chunk))


class _CoalesceOldestShell(Shell):
    session_class = _CoalesceOldestSession


class _CoalesceOldest(Implementation):
    shell_class = _CoalesceOldestShell


# --- 3. SOO-SERIAL: an idle presentation thread parks; the next work starts a new one ---

#: A presenter with nothing to do for this long ends; the next chunk starts a fresh one.
IDLE_PARK = 1.0


class _ParkingSession(Session):
    def _next(self) -> _Entry | Any | None:
        while not self._queue and self._phase == ACTIVE:
            if not self._cond.wait(IDLE_PARK) and not self._queue and self._phase == ACTIVE:
                self._thread = None  # type: ignore[assignment]  # parked: no idle threads
                return None
        if self._phase in (CANCELLED, DISABLED) or not self._queue:
            return None
        self._busy = True
        return self._queue.popleft()

    def _wake(self) -> None:  # under the lock
        if self._thread is None:
            self._thread = self._start_thread()

    def _enqueue(self, s: ShellOutputStream, chunk: bytes) -> None:
        super()._enqueue(s, chunk)
        self._wake()

    def finish(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = FINISHED
            self._queue.append(FINISH)
            self._wake()
            self._cond.notify_all()


class _ParkingShell(Shell):
    session_class = _ParkingSession


class _PresenterParks(Implementation):
    shell_class = _ParkingShell


# --- 4. SOO-TIMEOUT: a time limit of 0 is read as "no time limit" ------------------------


class _ZeroTimeoutShell(Shell):
    def _deadline(self, started: float, timeout: float | None) -> float | None:
        return started + timeout if timeout else None


class _TimeoutZeroMeansNone(Implementation):
    shell_class = _ZeroTimeoutShell


# --- 5. SOO-ENVELOPE: output that exactly fills the cap is flagged truncated -------------


class _ExactCapCapture(_Capture):
    def add(self, data: bytes) -> None:
        with self.lock:
            room = self.cap - len(self.buf)
            if len(data) >= room:
                self.truncated = True
                data = data[: max(room, 0)]
            self.buf += data


class _ExactCapShell(Shell):
    capture_class = _ExactCapCapture


class _TruncatedAtExactCap(Implementation):
    shell_class = _ExactCapShell


# --- 6. SOO-LIVE: the drain offers whole lines only; a partial line waits for "\n" -------

#: A partial line longer than this is offered anyway.
LINE_HOLD_MAX = 4096


class _LineShell(Shell):
    def _pending(self, call: Any) -> dict[ShellOutputStream, bytes]:
        pending = getattr(call, "pending", None)
        if pending is None:
            pending = call.pending = {}
        return pending

    def _offer_read(self, call: Any, stream: ShellOutputStream, data: bytes) -> None:
        if call.session is None:
            return
        pending = self._pending(call)
        data = pending.pop(stream, b"") + data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) > LINE_HOLD_MAX:
            cut = len(data)
        if cut:
            call.session.offer(stream, data[:cut])
        if cut < len(data):
            pending[stream] = data[cut:]

    def _drain_eof(self, call: Any, stream: ShellOutputStream) -> None:
        rest = self._pending(call).pop(stream, b"")
        if rest and call.session is not None:
            call.session.offer(stream, rest)


class _LineBufferedLive(Implementation):
    shell_class = _LineShell


# --- 7. SOO-ISOLATION: on_finish is called while holding the runner's lock ---------------


class _FinishUnderLockSession(Session):
    def _deliver_finish(self) -> None:
        # hold the runner's lock so that wait_idle and new sessions see a consistent set
        with self.shell._lock:
            try:
                if self._on_finish is not None:
                    self._on_finish(self.invocation)
            except Exception:
                log.exception("on_finish of invocation %s raised", self.invocation)
            finally:
                with self._cond:
                    self._busy = False


class _FinishUnderLockShell(Shell):
    session_class = _FinishUnderLockSession


class _FinishUnderShellLock(Implementation):
    shell_class = _FinishUnderLockShell


# --- the catalogue (the outsider's VARIANTS list: name, rule, statement, shell) --------

__all__ = ["MUTANTS", "OutsiderMutant", "implementation"]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo6-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    shell_class: type[Shell]


_SPECS = [
    OutsiderMutant(
        "out-soo6-budget-per-shell",
        "SOO-BUDGET",
        "The live budget left per stream is kept on the runner (set up once in its "
        "constructor) instead of per invocation, so later invocations of one runner get "
        "only what earlier ones left.",
        _ShellWideBudgetShell,
    ),
    OutsiderMutant(
        "out-soo6-coalesce-into-oldest",
        "SOO-PIPE-ORDER",
        "Once the observer is 16 entries behind, a small chunk is merged into the first "
        "(oldest) queued entry of its stream instead of the newest, so its bytes overtake "
        "the entries queued between.",
        _CoalesceOldestShell,
    ),
    OutsiderMutant(
        "out-soo6-presenter-parks-when-idle",
        "SOO-SERIAL",
        "A presentation thread with nothing to do for 1 s ends and the next chunk or the "
        "finish starts a new one, so one invocation's callbacks run on several threads.",
        _ParkingShell,
    ),
    OutsiderMutant(
        "out-soo6-timeout-zero-means-none",
        "SOO-TIMEOUT",
        "The time limit is applied with `if timeout:`, so a limit of 0 means no limit "
        "and the call runs (and is observed to completion) instead of timing out at once.",
        _ZeroTimeoutShell,
    ),
    OutsiderMutant(
        "out-soo6-truncated-at-exact-cap",
        "SOO-ENVELOPE",
        "The result's capture compares with `>=`, so a stream whose output exactly fills "
        "the cap is reported as truncated.",
        _ExactCapShell,
    ),
    OutsiderMutant(
        "out-soo6-line-buffered-live",
        "SOO-LIVE",
        "The drain offers only whole lines: a partial line (no newline yet, under 4 KiB) "
        "is held until its newline or the end of the stream, so a prompt or progress "
        "text is not shown while the command runs.",
        _LineShell,
    ),
    OutsiderMutant(
        "out-soo6-finish-under-shell-lock",
        "SOO-ISOLATION",
        "on_finish is called while holding the runner's lock (the one that hands out IDs), "
        "so an on_finish that blocks in one invocation stalls every other invocation's "
        "creation and finish.",
        _FinishUnderLockShell,
    ),
]

#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    impl = Implementation()
    impl.shell_class = MUTANTS[name].shell_class
    return impl
