"""Seven plausible broken variants of ``base4``: each has exactly one bug.

Outsider batch 4 (soo4), written before any of them was run against the suite (the
original ``b4soo4_variants.py`` had sha256
edb2959935a30bbd1e352c2c5de2306071cb04a27ddb44cc9696fa5e76597f6b). Kept as written: only
imports, typing, the linter's layout and the catalogue at the end (``_variant`` records a
spec instead of a ``VARIANTS`` list of adapter factories) changed. The outsider's own
summary: each is a small override of the base, written as the change a harness author
could make on purpose (an optimisation, a tidy-up, a grace period) that carries one bug.
Against the suite of their time (83 scenarios), one was caught properly
(``out-soo4-panic-cancel-noop-after-finish``), ``out-soo4-flush-queues-empty-stream`` only
by scenarios about another rule, and five survived; the scenarios named in
``docs/contracts/shell-output-observer.md`` ("Outsider mutants") now catch all seven at
MUST level under their rule.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.outsiders import base4 as base
from seamspec.conformance._contracts.shell_output.outsiders.base4 import (
    BEHIND,
    SMALL,
    B4Impl,
    CommandShell,
    IdCounter,
    LiveView,
    Stream,
)

__all__ = ["MUTANTS", "OutsiderMutant", "implementation"]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo4-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    impl_class: type[B4Impl]


_SPECS: list[OutsiderMutant] = []


def _variant(name: str, rule: str, statement: str, impl_class: type[B4Impl]) -> None:
    _SPECS.append(OutsiderMutant(name, rule, statement, impl_class))


# --- 1. SOO-ISOLATION: a fixed pool of presentation threads ----------------------------

#: presentation threads per shell; invocations are pinned to one by their ID
PRESENTERS = 4


class _PoolWorker:
    """One presentation thread that serves every view pinned to it, an entry at a time."""

    def __init__(self, index: int) -> None:
        self._cond = threading.Condition()
        self._ready: collections.deque[PooledView] = collections.deque()
        self.thread = threading.Thread(
            target=self._loop, name=f"b4soo4-presenter-{index}", daemon=True
        )
        self.thread.start()

    def poke(self, view: PooledView) -> None:
        with self._cond:
            self._ready.append(view)
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._ready:
                    self._cond.wait()
                view = self._ready.popleft()
            view._step()


class _Pool:
    def __init__(self, size: int) -> None:
        self._size = size
        self._workers: dict[int, _PoolWorker] = {}
        self._lock = threading.Lock()

    def worker_for(self, invocation: int) -> _PoolWorker:
        # BUG: two invocations whose IDs are PRESENTERS apart share one presentation
        # thread, so a callback blocked in one holds up the other's delivery and finish.
        slot = invocation % self._size
        with self._lock:
            if slot not in self._workers:
                self._workers[slot] = _PoolWorker(slot)
            return self._workers[slot]


class PooledView(LiveView):
    """Presents on a pooled thread instead of a thread of its own (one entry per turn)."""

    def __init__(
        self, observer: Any, invocation: int, budget: int, on_idle: Any, pool: _Pool
    ) -> None:
        self._pool = pool
        super().__init__(observer, invocation, budget, on_idle)

    def _start_presenter(self) -> None:
        self._worker = self._pool.worker_for(self.invocation)

    def _wake(self) -> None:
        super()._wake()
        self._worker.poke(self)

    def _step(self) -> None:
        entry = self._next_entry(block=False)
        if entry is base._NOTHING:
            return
        if entry is None or not self._deliver(entry):
            self._end()
            return
        self._worker.poke(self)  # more may be queued: take turns with the other views


class PooledShell(CommandShell):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pool = _Pool(PRESENTERS)

    def _new_view(self, observer: Any) -> LiveView:
        with self._views_lock:
            view = PooledView(
                observer, self.ids.take(), self.live_budget, self._notify_idle, self._pool
            )
            self._views.append(view)
            return view


class _PooledImpl(B4Impl):
    shell_class = PooledShell


# --- 2. SOO-CANCEL: a cancelled call leaves an exited leader's invocation alone --------


class ExitedLeaderShell(CommandShell):
    def _caller_gone(self, inv: Any) -> None:
        # BUG: "nothing to stop if the child is already gone". A leader that exited while
        # a background process still holds the pipes is not stopped: the session is not
        # cancelled, and when the pipes finally close the reaper finishes it, so queued
        # chunks are delivered and on_finish comes after the cancellation.
        if inv.proc.poll() is None:
            inv.stop()


class _ExitedLeaderImpl(B4Impl):
    shell_class = ExitedLeaderShell


# --- 3. SOO-PIPE-ORDER: a large chunk overtakes gathered small ones --------------------


class OvertakingView(LiveView):
    def _gather(self, stream: Stream, piece: bytes) -> bool:
        # BUG: only small chunks are gathered while the observer is behind; a large one
        # is queued at once, ahead of the small chunks of its stream still gathered.
        return len(self._queue) >= BEHIND and len(piece) < SMALL


class _ViewShell(CommandShell):
    view_class: type[LiveView] = LiveView

    def _new_view(self, observer: Any) -> LiveView:
        with self._views_lock:
            view = self.view_class(observer, self.ids.take(), self.live_budget, self._notify_idle)
            self._views.append(view)
            return view


class OvertakingShell(_ViewShell):
    view_class = OvertakingView


class _OvertakingImpl(B4Impl):
    shell_class = OvertakingShell


# --- 4. SOO-NONEMPTY: the flush of gathered bytes queues an empty chunk ----------------


class EmptyFlushView(LiveView):
    def _flush_pending(self) -> None:
        # BUG: flushes every stream once any stream has gathered bytes, so the stream
        # that gathered nothing gets an empty chunk.
        if any(self._pending.values()):
            for stream, pending in self._pending.items():
                self._queue.append((stream, bytes(pending)))
                pending.clear()


class EmptyFlushShell(_ViewShell):
    view_class = EmptyFlushView


class _EmptyFlushImpl(B4Impl):
    shell_class = EmptyFlushShell


# --- 5. SOO-PANIC: a raising observer is "cancelled", which is a no-op after finish ----


class PanicAsCancelView(LiveView):
    def _output_failed(self) -> bool:
        # BUG: a failing observer is handled as a cancellation of its observation. But
        # cancel() changes nothing once the invocation has finished (the first of
        # finish/cancel wins), so after a normal completion the presenter goes on: the
        # queued chunks are delivered to the observer that raised, then on_finish.
        self.cancel()
        return False  # the presenter's loop ends by itself at the cancelled phase


class PanicAsCancelShell(_ViewShell):
    view_class = PanicAsCancelView


class _PanicAsCancelImpl(B4Impl):
    shell_class = PanicAsCancelShell


# --- 6. SOO-NO-WAIT: a short grace for the pane before the result is returned ----------

#: how long a completed run lets its observer catch up before returning
FLUSH_GRACE = 0.25


class GraceShell(CommandShell):
    async def _wait_done(self, inv: Any) -> None:
        await super()._wait_done(inv)
        # BUG: "let the pane draw the tail before the result is printed below it": a
        # completed run waits (bounded) for its observer to catch up, so a slow observer
        # delays every result by up to FLUSH_GRACE.
        view = inv.view
        if view is not None and not inv.stopped:
            deadline = time.monotonic() + FLUSH_GRACE
            while not view.idle() and time.monotonic() < deadline:
                await anyio.sleep(0.005)


class _GraceImpl(B4Impl):
    shell_class = GraceShell


# --- 7. SOO-IDS: giving back a failed spawn's ID is not atomic with later takes -------


class DecrementingIds(IdCounter):
    def give_back(self, invocation: int) -> None:
        # BUG: assumes the failed invocation still holds the newest ID. When another
        # observed call took one while this one was spawning (spawning runs off the event
        # loop), the counter steps back below it and the next call gets a duplicate.
        with self._lock:
            self._last -= 1


class _DecrementingImpl(B4Impl):
    ids_class = DecrementingIds


# --- the catalogue -------------------------------------------------------------------

_variant(
    "out-soo4-pooled-presenters",
    "SOO-ISOLATION",
    "presentation runs on a per-shell pool of 4 threads with each invocation pinned by "
    "ID mod 4, so invocations 4 IDs apart share a thread and a blocked callback in one "
    "stalls the other",
    _PooledImpl,
)
_variant(
    "out-soo4-cancel-skips-exited-leader",
    "SOO-CANCEL",
    "a cancelled run stops its invocation only if the leader is still running "
    "(proc.poll() is None), so after the leader exited with a background process holding "
    "the pipes the session is never cancelled and later gets its queued chunks and "
    "on_finish",
    _ExitedLeaderImpl,
)
_variant(
    "out-soo4-large-chunk-overtakes-gathered",
    "SOO-PIPE-ORDER",
    "while the observer is 16+ entries behind only small chunks are gathered per stream; "
    "a chunk of 4 KiB or more is queued at once, ahead of the gathered small chunks that "
    "came before it on the same pipe",
    _OvertakingImpl,
)
_variant(
    "out-soo4-flush-queues-empty-stream",
    "SOO-NONEMPTY",
    "when the queue runs dry the gathered bytes of both streams are queued as soon as "
    "either stream has some, so the other stream gets an on_output with b''",
    _EmptyFlushImpl,
)
_variant(
    "out-soo4-panic-cancel-noop-after-finish",
    "SOO-PANIC",
    "an on_output that raises is handled by cancel(), which is a no-op once the session "
    "finished, so the observer that raised still gets the queued chunks and on_finish",
    _PanicAsCancelImpl,
)
_variant(
    "out-soo4-result-waits-grace-for-pane",
    "SOO-NO-WAIT",
    "a completed run waits up to 0.25 s for its observer to become idle before it "
    "returns the result",
    _GraceImpl,
)
_variant(
    "out-soo4-spawn-failure-id-rollback-races",
    "SOO-IDS",
    "a failed spawn gives its ID back by decrementing the counter, even when a concurrent "
    "observed call took a later ID meanwhile, so the next call duplicates that ID",
    _DecrementingImpl,
)


#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}

#: Variants that are real bugs the suite cannot see within its timing rules, and why; they
#: are not registered as mutants (the contract page, "Outsider mutants", says so).
UNSEEN: dict[str, str] = {
    "out-soo4-result-waits-grace-for-pane": (
        "a bounded wait of 0.25 s for the observer breaks SOO-NO-WAIT, but the only "
        "difference from a correct runner is when the call returns, and the kit's timing "
        "bounds are 0.5 s or more so that a loaded machine never fails a correct runner"
    ),
}


def implementation(name: str) -> B4Impl:
    """The outsider's implementation with the named variant's bug."""
    return MUTANTS[name].impl_class()
