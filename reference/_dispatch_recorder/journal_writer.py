"""The journal's engine: a writer thread that signs, appends and fsyncs entries in order.

Why a thread of its own: the event loop must never block on the disk (nor on a signer
that waits), so that the executor's record time limit can always fire. Why one, by
default: an in-process Ed25519 signature holds the GIL (``cryptography`` signs without
releasing it: measured, docs/benchmarks.md), so threads signing side by side do not run in
parallel; they only add hand-offs of the GIL and wake-ups per record. One writer takes
everything queued, signs it, appends it with one write, makes it durable with one fsync
(group commit) and wakes the whole batch with one call into each waiting event loop;
while it syncs (the GIL released), the loop prepares the next records. ``workers > 1``
keeps several threads that sign in parallel, for a signer that waits rather than
computes (a hardware token, a remote service).

The order of work, for each submitted entry:

1. ``submit`` (any thread, normally the event loop's) gives the entry its sequence number
   and ``prev`` at once. The chain covers signed bytes, not signatures, so the next entry
   can be chained before this one is signed.
2. A worker signs it, outside the lock. The single writer takes everything queued (up
   to ``_MAX_WRITER_BATCH``); with several workers, each takes one entry (they may finish
   signing out of order), or, for a signer with ``sign_many`` (a signing service such as
   ``SignerProcess``), up to ``_MAX_BATCH``, so that a round trip is paid per batch.
3. Whichever worker finds the oldest unwritten entry signed, and no flush running,
   becomes the flusher: it takes every consecutive signed entry from the front, appends
   them with one write and makes them durable with one fsync (group commit), then
   acknowledges each one. Entries signed meanwhile wait for the next flush.

Failures, all fail-closed. A signer that raises fails its entry *and every entry chained
behind it* (their ``prev`` names an entry that will never exist); the chain is rolled
back to the failed entry's place, and later entries are fine. A write or fsync error
leaves the tail in doubt: every queued entry fails and the writer refuses from then on
(``broken``), until the journal is reopened and re-verified.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import queue
import threading
from collections import deque
from collections.abc import Callable

from seamspec.reference._dispatch_recorder.journal_format import (
    encode_entry,
    entry_hash,
    signed_bytes,
)
from seamspec.reference._dispatch_recorder.journal_keys import Signer

__all__ = ["JournalWriter", "PendingEntry"]


class _State(enum.Enum):
    UNSIGNED = "unsigned"
    SIGNED = "signed"
    DURABLE = "durable"
    FAILED = "failed"


#: With several workers, the most entries sent to a batch signer in one request: smaller
#: batches keep the signing service busy while the previous batch is being flushed.
_MAX_BATCH = 8
#: The most entries a single writer takes at once (everything queued, normally): a bound
#: only so that one batch cannot grow without limit under a flood of records.
_MAX_WRITER_BATCH = 256

#: Schedules a callback on the waiter's event loop from any thread, without blocking.
CallSoon = Callable[[Callable[[], object]], object]


class PendingEntry:
    """One submitted entry. When it settles, a worker runs ``on_done`` through ``call_soon``
    (entries settled together share one ``call_soon``: one wake-up of the loop per batch).
    """

    __slots__ = ("call_soon", "error", "line", "on_done", "prev", "seq", "signed", "state")

    def __init__(
        self, seq: int, prev: str, signed: bytes, call_soon: CallSoon, on_done: Callable[[], object]
    ) -> None:
        self.seq = seq
        self.prev = prev
        self.signed = signed
        self.call_soon = call_soon
        self.on_done = on_done
        self.line = b""
        self.state = _State.UNSIGNED
        self.error: str | None = None

    @property
    def durable(self) -> bool:
        return self.state is _State.DURABLE


class JournalWriter:
    """Owns the journal's descriptor from open to close; see the module docstring.

    ``fsync`` is called from worker threads with the descriptor; tests and the kit pass
    their own to observe or fail syncing. Entries to sign go through a ``SimpleQueue``
    (the cheapest hand-off between threads CPython has); everything else is guarded by
    one plain lock, never held across a signature, a write or an fsync.
    """

    def __init__(
        self,
        fd: int,
        signer: Signer,
        *,
        seq: int,
        prev: str,
        size: int,
        fsync: Callable[[int], None],
        workers: int,
    ) -> None:
        self.fd = fd
        self._signer = signer
        self.signer_key = signer.public_key
        self._fsync = fsync
        self._lock = threading.Lock()
        self._to_sign: queue.SimpleQueue[PendingEntry | None] = queue.SimpleQueue()
        self._unwritten: deque[PendingEntry] = deque()  # in sequence order
        self._flushing = False
        self._closed = False
        self.next_seq = seq
        self.head = prev
        self.written = size
        self.broken: str | None = None
        self.fsyncs = 0
        self._single = workers <= 1
        self._threads = [
            threading.Thread(target=self._work, name=f"seamspec-journal-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        for thread in self._threads:
            thread.start()

    def submit(
        self, mutation: dict[str, object], call_soon: CallSoon, on_done: Callable[[], object]
    ) -> PendingEntry:
        """Chain a new entry and queue it for signing; never blocks on I/O or signing.

        A refused entry comes back already failed (its ``error`` says why) and its
        ``on_done`` is never called.
        """
        with self._lock:
            if self.broken is not None or self._closed:
                entry = PendingEntry(-1, "", b"", call_soon, on_done)
                entry.state = _State.FAILED
                entry.error = (
                    f"the journal refuses records after an I/O error: {self.broken}"
                    if self.broken is not None
                    else "the journal is closed"
                )
                return entry
            signed = signed_bytes(self.next_seq, self.head, mutation)
            entry = PendingEntry(self.next_seq, self.head, signed, call_soon, on_done)
            self.next_seq += 1
            self.head = entry_hash(signed)
            self._unwritten.append(entry)
            self._to_sign.put(entry)
        return entry

    def close(self) -> None:
        """Let the workers finish what was submitted, then stop them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for _ in self._threads:
            self._to_sign.put(None)  # after every submitted entry: the queue is FIFO
        for thread in self._threads:
            thread.join()

    # ------------------------------------------------------------------------------
    # Worker side.

    def _work(self) -> None:
        sign_many = getattr(self._signer, "sign_many", None)
        # One writer takes everything queued (it signs, writes and syncs per batch); with
        # several workers, a batch signer gets a batch per request and an in-process
        # signer one entry per worker, so that workers sign in parallel.
        limit = _MAX_WRITER_BATCH if self._single else (_MAX_BATCH if sign_many else 1)
        while (entry := self._to_sign.get()) is not None:
            entries = [entry]
            while len(entries) < limit:
                try:
                    more = self._to_sign.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._to_sign.put(None)  # for the next round of this loop to see
                    break
                entries.append(more)
            # Entries that failed while queued (chained to one that could not be signed)
            # are dropped; the rest are in sequence order, as submitted.
            entries = [e for e in entries if e.state is _State.UNSIGNED]
            if entries:
                _wake(self._sign(entries, sign_many))

    def _sign(
        self, entries: list[PendingEntry], sign_many: Callable[[list[bytes]], list[bytes]] | None
    ) -> list[PendingEntry]:
        """Sign ``entries`` (lock released), then record the outcome and flush what is
        ready; return the entries that failed (the flush wakes the durable ones)."""
        lines: list[bytes] = []
        error: Exception | None = None
        try:  # a signer returning garbage fails here too, not in a dead thread
            if sign_many is not None:
                signatures = list(sign_many([e.signed for e in entries]))
                if len(signatures) != len(entries):
                    raise ValueError(f"{len(signatures)} signatures for {len(entries)} entries")
                lines = [
                    encode_entry(e.signed, sig) for e, sig in zip(entries, signatures, strict=True)
                ]
            else:
                for entry in entries:  # the entries before a failure keep their signature
                    lines.append(encode_entry(entry.signed, self._signer.sign(entry.signed)))
        except Exception as raised:
            error = raised
            if sign_many is not None:
                lines = []
        with self._lock:
            failed: list[PendingEntry] = []
            for entry, line in zip(entries, lines, strict=False):  # the signed prefix
                if entry.state is _State.UNSIGNED:
                    entry.line, entry.state = line, _State.SIGNED
            if error is not None:
                rest = [e for e in entries[len(lines) :] if e.state is _State.UNSIGNED]
                if rest:
                    failed = self._fail_from(rest[0], f"signing failed: {error!r}")
            if not self._flushing:
                self._flush_while_ready()
            return failed

    def _fail_from(self, failed: PendingEntry, reason: str) -> list[PendingEntry]:
        """(Lock held.) Fail ``failed`` and every entry chained behind it; roll back."""
        doomed: list[PendingEntry] = []
        while self._unwritten:
            entry = self._unwritten.pop()
            doomed.append(entry)
            if entry is failed:
                break
        self.next_seq, self.head = failed.seq, failed.prev
        for entry in doomed:
            entry.state = _State.FAILED
            entry.error = (
                reason
                if entry is failed
                else f"entry {failed.seq}, which it was chained to, failed: {reason}"
            )
        return doomed[::-1]

    def _flush_while_ready(self) -> None:
        """(Lock held on entry and exit, released around I/O.) Be the flusher while the
        oldest unwritten entry is signed. Each batch's waiters are woken as soon as its
        fsync returns, not after the batches that queued up behind it."""
        self._flushing = True
        try:
            while self._unwritten and self._unwritten[0].state is _State.SIGNED:
                batch: list[PendingEntry] = []
                while self._unwritten and self._unwritten[0].state is _State.SIGNED:
                    batch.append(self._unwritten.popleft())
                data = b"".join(entry.line for entry in batch)
                start = self.written
                self._lock.release()
                try:
                    error = self._append_and_sync(data, start)
                finally:
                    self._lock.acquire()
                if error is None:
                    self.written = start + len(data)
                    self.fsyncs += 1
                    for entry in batch:
                        entry.state = _State.DURABLE
                else:  # the tail is in doubt: this batch and everything queued fail
                    self.broken = error
                    batch += self._unwritten
                    self._unwritten.clear()
                    for entry in batch:
                        entry.state, entry.error = _State.FAILED, error
                _wake(batch)  # call_soon only schedules: fine under the lock
        finally:
            self._flushing = False

    def _append_and_sync(self, data: bytes, start: int) -> str | None:
        """(Lock released.) Append and fsync; on failure, why, with the tail cut back."""
        try:
            self._append(data)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)
            return f"write failed: {error}"
        try:
            self._fsync(self.fd)
        except OSError as error:
            return f"fsync failed: {error}"
        except Exception as error:  # an injected fsync with a bug must not kill the worker
            return f"fsync failed: {error!r}"
        return None

    def _append(self, data: bytes) -> None:
        """(Lock released.) Write all of ``data`` at the end of the journal."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]


def _wake(settled: list[PendingEntry]) -> None:
    """Run the settled entries' ``on_done``: one ``call_soon`` per event loop, not per entry."""
    by_loop: dict[CallSoon, list[Callable[[], object]]] = {}
    for entry in settled:
        by_loop.setdefault(entry.call_soon, []).append(entry.on_done)
    for call_soon, callbacks in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that event loop has ended
            call_soon(functools.partial(_run_all, callbacks))


def _run_all(callbacks: list[Callable[[], object]]) -> None:
    for callback in callbacks:
        callback()
