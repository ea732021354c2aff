"""The kit's shell-output session mutants: the reference session with one mistake each.

Each class overrides one decision point of :class:`ObservationSession` (``_accept``,
``_next_item``, ``_deliver``, ``_on_panic``, ``offer``, ``finish``, ``cancel``...); its
docstring and its few lines *are* the bug. ``mutants.py`` names them and the rule each
breaks.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from seamspec.reference import ObservationSession, SessionPhase, ShellOutputStream
from seamspec.reference._shell_output.session import Item, _Finish

# Names starting with an underscore: these classes are reached only through mutants.py.
__all__: list[str] = []


class _EmptyWhenSpent(ObservationSession):
    """Once a stream's budget is spent, still calls on_output, with an empty chunk."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        accepted = super()._accept(stream, chunk)
        return b"" if accepted is None else accepted


class _Decoded(ObservationSession):
    """Cleans chunks up as UTF-8 text (invalid or split sequences become U+FFFD)."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        accepted = super()._accept(stream, chunk)
        return None if accepted is None else accepted.decode("utf-8", "replace").encode()


class _Lifo(ObservationSession):
    """Presents the newest queued chunk first (a stack instead of a queue)."""

    def _next_item(self) -> Item:
        if len(self._queue) > 1 and isinstance(self._queue[-1], _Finish):
            item = self._queue[-2]
            del self._queue[-2]
            return item
        return self._queue.pop()


class _SharedBudget(ObservationSession):
    """Counts stdout and stderr against one budget for the whole invocation."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        return super()._accept(ShellOutputStream.STDOUT, chunk)


class _ZeroUnlimited(ObservationSession):
    """Treats a budget of 0 as "no limit", as many config options do."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        super().__init__(invocation, observer, budget or sys.maxsize)


class _DeliverOnFeeder(ObservationSession):
    """Calls on_output right away on the thread that offers the chunk (the drain)."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is not SessionPhase.ACTIVE or self._disabled:
                return
            accepted = self._accept(stream, chunk)
        if accepted:
            try:
                self._deliver(stream, accepted)
            except Exception:
                with self._cond:
                    self._on_panic()


class _ThreadPerCallback(ObservationSession):
    """Runs each on_output on a fresh thread (one at a time), not the session's thread."""

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        failure: list[BaseException] = []

        def call() -> None:
            try:
                super(_ThreadPerCallback, self)._deliver(stream, chunk)
            except Exception as error:
                failure.append(error)

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join()
        if failure:
            raise failure[0]


class _OneAtATime(ObservationSession):
    """Takes a lock shared by every session of its runner around each callback."""

    shared: threading.Lock

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        with self.shared:
            super()._deliver(stream, chunk)

    def _call_finish(self) -> None:
        with self.shared:
            super()._call_finish()


class _HeldUntilEnd(ObservationSession):
    """Holds every accepted chunk back until the invocation completes."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self._held: list[Item] = []
        super().__init__(invocation, observer, budget)

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is SessionPhase.ACTIVE and not self._disabled:
                accepted = self._accept(stream, chunk)
                if accepted:
                    self._held.append((stream, accepted))

    def finish(self) -> None:
        with self._cond:
            if self._phase is SessionPhase.ACTIVE:
                self._queue.extend(self._held)
        super().finish()


class _BoundedQueue(ObservationSession):
    """A one-slot queue (back-pressure): the feeding (draining) thread waits while it is full."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        with self._cond:
            while self._queue and self._phase is SessionPhase.ACTIVE:
                self._cond.wait(0.05)
        super().offer(stream, chunk)


class _FinishDropsQueue(ObservationSession):
    """Completion drops what is still queued and says on_finish straight away."""

    def finish(self) -> None:
        with self._cond:
            if self._phase is SessionPhase.ACTIVE:
                self._queue.clear()
        super().finish()


#: How long ``_AcceptsLate`` keeps presenting after its queue ran dry: far longer than the
#: kit takes between finishing a session and offering it a late chunk (the next step),
#: and well below the driver's 5 s wait for the observation to go idle.
LATE_WINDOW = 1.5


class _AcceptsLate(ObservationSession):
    """Keeps accepting (and presenting) chunks after completion."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is SessionPhase.CANCELLED or self._disabled:
                return
            accepted = self._accept(stream, chunk)
            if accepted:
                self._queue.append((stream, accepted))
                self._cond.notify()

    def _present_batch(self, batch: list[Item]) -> bool:
        # The reference stops at the finish; this one says on_finish and goes on with
        # whatever was queued after it.
        for item in batch:
            if self._phase is SessionPhase.CANCELLED or self._disabled:
                return False
            if isinstance(item, _Finish):
                self._call_finish()
                continue
            stream, chunk = item
            self._deliver(stream, bytes(chunk))
        return True

    def _present(self) -> None:
        super()._present()
        while True:
            with self._cond:
                if not self._queue:
                    self._cond.wait(LATE_WINDOW)
                if not self._queue or self._phase is SessionPhase.CANCELLED:
                    return
                batch = self._take_batch()
            if not self._present_batch(batch):
                return


class _DeliversAfterPanic(ObservationSession):
    """Logs a raising on_output and goes on delivering the queue (and on_finish)."""

    def _on_panic(self) -> None:
        pass


class _CancelWaitsForCallback(ObservationSession):
    """cancel() gives a callback in flight up to 2 s to return before it returns itself."""

    def cancel(self) -> None:
        super().cancel()
        self.join(2.0)


class _CancelFinishes(ObservationSession):
    """Treats cancellation as completion: drains the queue, then on_finish."""

    def cancel(self) -> None:
        self.finish()


class _FinishPanicBreaksObserver(ObservationSession):
    """Records an observer whose on_finish failed, so its runner can shun it."""

    broken: set[int]

    def _call_finish(self) -> None:
        hook = getattr(self.observer, "on_finish", None)
        try:
            if hook is not None:
                hook(self.invocation)
        except Exception:
            self.broken.add(id(self.observer))


class _HoldsAfterFinishPanic(_FinishPanicBreaksObserver):
    """Once its observer's on_finish has failed, holds the output back until completion."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        if id(self.observer) not in self.broken:
            super().offer(stream, chunk)
            return
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is SessionPhase.ACTIVE and not self._disabled:
                accepted = self._accept(stream, chunk)
                if accepted:
                    self.__dict__.setdefault("_held", []).append((stream, accepted))

    def finish(self) -> None:
        with self._cond:
            if self._phase is SessionPhase.ACTIVE:
                self._queue.extend(self.__dict__.get("_held", []))
        super().finish()


class _RecordsDelivered(ObservationSession):
    """Remembers what it delivered (used by the envelope mutant's runner)."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self.delivered: dict[ShellOutputStream, bytes] = {s: b"" for s in ShellOutputStream}
        super().__init__(invocation, observer, budget)

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        self.delivered[stream] += chunk
        super()._deliver(stream, chunk)


class _LockPerObserver(ObservationSession):
    """Holds a lock per observer object around each callback (sessions keyed by observer)."""

    locks: dict[int, threading.Lock]

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        with self.locks.setdefault(id(self.observer), threading.Lock()):
            super()._deliver(stream, chunk)

    def _call_finish(self) -> None:
        with self.locks.setdefault(id(self.observer), threading.Lock()):
            super()._call_finish()


class _NumbersChunks(ObservationSession):
    """Passes a running chunk number as the invocation ID, not the invocation's own ID."""

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        self.__dict__["_n"] = self.__dict__.get("_n", self.invocation) + 1
        self.observer.on_output(self.__dict__["_n"], stream, chunk)


class _WrongIdInCallbacks(ObservationSession):
    """Calls the observer with the ID one above the one the invocation took."""

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        self.observer.on_output(self.invocation + 1, stream, chunk)
