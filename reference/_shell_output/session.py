"""One observed invocation: the live budget, the queue, the phase and the presentation thread.

Why a queue and a thread of its own: the threads that drain the child's pipes must never
wait for an observer (a blocked pipe stalls the child, and with it the time limit), and
the caller's event loop must not run observer code either. So draining threads only
*offer* chunks here, which costs a lock and an append; one presentation thread per
invocation takes them out in order and calls the observer. The queue is unbounded on
purpose: its size is already bounded by the live budget (at most ``2 x budget`` bytes,
one budget per stream), which is what keeps a stuck observer from costing memory.

Bytes are bounded by the budget, but entries are not: a child printing short lines to a
stuck observer would queue one small object per read, each with its own allocation
(tens of thousands of them for a 1 MiB budget). So once the observer is
:data:`COALESCE_AFTER` entries behind, a new small chunk is appended to the newest queued
entry of its stream instead (up to :data:`COALESCED_MAX` bytes per entry). The contract
promises the bytes of each pipe and their order, never where one chunk ends, so the
observer sees the same bytes in fewer, larger chunks; nothing is ever merged across a
finish or a cancellation (nothing is accepted after either), and a session only a few
chunks behind, as in every scenario, delivers exactly the chunks it was offered.

The phase decides what is still accepted. ``ACTIVE``: chunks are accepted within the
budget. ``FINISHED`` (normal completion): nothing more is accepted, what is queued is
still delivered, then ``on_finish``. ``CANCELLED`` (cancellation, time limit, error):
nothing more is accepted, the queue is dropped, no ``on_finish``; a callback already
running is not waited for. A raising ``on_output`` disables the session: the queue is
dropped and no more callbacks come.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections import deque
from typing import Final, cast

from seamspec.reference._shell_output.observer import (
    ShellInvocationId,
    ShellOutputObserver,
    ShellOutputStream,
    finish_hook,
)

__all__ = ["ObservationSession", "SessionPhase"]

log = logging.getLogger("seamspec.reference.shell")
#: Observer failures are logged, not printed: an application that wants them configures
#: logging (the handler below only keeps Python from printing them by default).
log.addHandler(logging.NullHandler())


class SessionPhase(enum.Enum):
    ACTIVE = "active"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class _Finish:
    """The queue entry that stands for "completed normally: call on_finish now"."""


FINISH: Final = _Finish()
#: A queued chunk: ``bytes`` as offered, or a ``bytearray`` that coalesced several (typed
#: ``bytes``, which admits both, so that subclasses written against ``bytes`` still fit).
Item = tuple[ShellOutputStream, bytes] | _Finish

#: Queue entries beyond which new chunks are coalesced into their stream's newest entry.
COALESCE_AFTER: Final = 16
#: Chunks this large are queued as they are even then: copying them would save nothing.
COALESCE_BELOW: Final = 64 * 1024
#: The most bytes one coalesced entry grows to (then a new entry starts): large enough
#: that per-entry overhead is negligible, small enough that copying an entry out for
#: delivery costs little memory beyond the queue itself.
COALESCED_MAX: Final = 256 * 1024


class ObservationSession:
    """Live observation of one invocation, safe to feed from any number of threads.

    ``budget`` is the most bytes delivered per stream (``0``: no output at all, but a
    normal completion still brings ``on_finish``). The chunk that crosses it is cut to
    the bytes that remain; later chunks of that stream are dropped; the other stream has
    its own budget. No marker is added: the observer sees a clean prefix.
    """

    def __init__(
        self, invocation: ShellInvocationId, observer: ShellOutputObserver, budget: int
    ) -> None:
        if budget < 0:
            raise ValueError(f"budget must be >= 0, not {budget}")
        self.invocation = invocation
        self.observer = observer
        self.budget = budget
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[Item] = deque()
        #: Per stream, the queued entry new chunks may be appended to (a ``bytearray``
        #: still in the queue), once the queue is long; see the module's docstring.
        #: Each value is the queued entry itself (compared by identity) and its buffer.
        self._open: dict[ShellOutputStream, tuple[Item, bytearray]] = {}
        self._phase = SessionPhase.ACTIVE
        self._disabled = False
        #: The presentation thread is waiting for work (so ``offer`` must wake it).
        self._idle = False
        self._used = {ShellOutputStream.STDOUT: 0, ShellOutputStream.STDERR: 0}
        self._thread = self._start_presentation()

    # -- the feeding side (pipe-draining threads, the runner) ---------------------------

    @property
    def phase(self) -> SessionPhase:
        with self._cond:
            return self._phase

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        """Account ``chunk`` against the live budget and queue what fits; never blocks long.

        ``stream`` may also be given by name (``"stdout"``, ``"stderr"``). ``chunk`` may
        be any bytes-like object; what is accepted is copied (unless it is ``bytes``), so
        the caller may reuse its buffer at once.
        """
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is not SessionPhase.ACTIVE or self._disabled:
                return
            accepted = self._accept(stream, chunk)
            if accepted is None:
                return
            self._enqueue(stream, accepted)
            if self._idle:  # only a waiting presentation thread needs waking
                self._cond.notify()

    def accepting(self, stream: ShellOutputStream) -> bool:
        """Whether ``offer`` on ``stream`` may still keep anything (a hint, not a promise).

        Read without the lock: the answer only goes from True to False, and a stale True
        costs nothing but a chunk that ``offer`` then drops. The runner uses it to pick
        how to read: a fresh ``bytes`` per read while the observer takes output (the
        queue keeps it without copying), one reused buffer once it no longer does.
        """
        return (
            self._phase is SessionPhase.ACTIVE
            and not self._disabled
            and self._used[stream] < self.budget
        )

    def finish(self) -> None:
        """Normal completion: deliver what is queued, then ``on_finish``. Does not wait."""
        with self._cond:
            if self._phase is not SessionPhase.ACTIVE:
                return
            self._phase = SessionPhase.FINISHED
            self._queue.append(FINISH)
            self._cond.notify()

    def cancel(self) -> None:
        """Cancellation, time limit or error: stop at once, drop the queue, no ``on_finish``.

        Returns immediately even if a callback is running right now; that callback may
        end later, but nothing after it is delivered.
        """
        with self._cond:
            if self._phase is not SessionPhase.ACTIVE:
                return
            self._phase = SessionPhase.CANCELLED
            self._drop_queue()
            self._cond.notify()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the presentation thread has ended; True if it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- decision points (one method each, so each is easy to read and to test) ----------

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        """The part of ``chunk`` the budget lets through, as ``bytes``, or None.

        Called under the lock. ``bytes`` that fit whole are kept as they are (no copy).
        """
        remaining = self.budget - self._used[stream]
        if remaining <= 0 or not chunk:
            return None
        accepted = bytes(chunk[:remaining])
        self._used[stream] += len(accepted)
        return accepted

    def _enqueue(self, stream: ShellOutputStream, accepted: bytes) -> None:
        """Queue an accepted chunk, coalescing it once the observer is far behind.

        Called under the lock. Appending to the stream's newest queued entry keeps that
        pipe's byte order; it can move those bytes ahead of the other stream's entries
        queued since, which the contract allows (order is promised per pipe).
        """
        if len(self._queue) < COALESCE_AFTER or len(accepted) >= COALESCE_BELOW:
            self._queue.append((stream, accepted))
            return
        open_entry = self._open.get(stream)
        if open_entry is not None and len(open_entry[1]) < COALESCED_MAX:
            open_entry[1].extend(accepted)
            return
        buffer = bytearray(accepted)
        # A bytearray stands where Item says bytes: _present turns it into bytes before
        # any observer sees it; subclasses that read the queue get a bytes-like chunk.
        entry: Item = (stream, cast(bytes, buffer))
        self._open[stream] = (entry, buffer)
        self._queue.append(entry)

    def _drop_queue(self) -> None:
        """Forget everything queued (cancellation, a raising observer). Under the lock."""
        self._queue.clear()
        self._open.clear()

    def _start_presentation(self) -> threading.Thread:
        thread = threading.Thread(
            target=self._present, name=f"shell-observer-{self.invocation}", daemon=True
        )
        thread.start()
        return thread

    def _next_item(self) -> Item:
        """The next entry to present: the oldest (pipe order is queue order)."""
        return self._queue.popleft()

    def _on_panic(self) -> None:
        """An ``on_output`` raised: disable observation of this invocation. Under the lock."""
        self._disabled = True
        self._drop_queue()

    # -- the presentation thread ----------------------------------------------------------

    def _present(self) -> None:
        while True:
            with self._cond:
                while not self._queue and self._phase is SessionPhase.ACTIVE:
                    self._idle = True
                    self._cond.wait()
                self._idle = False
                if self._phase is SessionPhase.CANCELLED or self._disabled or not self._queue:
                    return
                batch = self._take_batch()
            if not self._present_batch(batch):
                return

    def _take_batch(self) -> list[Item]:
        """Everything queued, in presentation order. Under the lock.

        One lock acquisition, and one wake-up of this thread, for all that queued up
        while the observer was busy or this thread was waking: per chunk, the feeding
        side then pays only an append.
        """
        batch = []
        while self._queue:
            batch.append(self._next_item())
        self._open.clear()  # nothing queued is left for a chunk to be appended to
        return batch

    def _present_batch(self, batch: list[Item]) -> bool:
        """Deliver ``batch`` in order; False once the session must present nothing more.

        The phase is read without the lock before each callback, as it was read under the
        lock before each pop: either way at most the one callback that passed the check
        can start after a cancellation, which the contract allows (a cancel does not wait
        for a running callback).
        """
        for item in batch:
            if self._phase is SessionPhase.CANCELLED or self._disabled:
                return False
            if isinstance(item, _Finish):
                self._call_finish()
                return False
            stream, chunk = item
            try:
                self._deliver(stream, chunk if isinstance(chunk, bytes) else bytes(chunk))
            except Exception:
                log.warning(
                    "shell-output observer failed on invocation %s; observation stopped",
                    self.invocation,
                    exc_info=True,
                )
                with self._cond:
                    self._on_panic()
                    if self._disabled:
                        return False
        return True

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        """One ``on_output`` call, on the presentation thread."""
        self.observer.on_output(self.invocation, stream, chunk)

    def _call_finish(self) -> None:
        hook = finish_hook(self.observer)
        if hook is None:
            return
        try:
            hook(self.invocation)
        except Exception:
            log.warning(
                "shell-output observer's on_finish failed on invocation %s; ignored",
                self.invocation,
                exc_info=True,
            )
