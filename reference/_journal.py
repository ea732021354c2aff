"""A real dispatch recorder: a signed, hash-chained, fsync'd append-only journal.

``record`` returns OK only after the mutation's signed entry is on stable storage
(DR-JOURNAL-DURABLE). Concurrent records share fsyncs (group commit): while one fsync
runs, later entries are appended, and the next fsync makes all of them durable at once,
so sixteen concurrent records cost about two fsyncs instead of sixteen.

Failure is fail-closed and sticky. If signing fails, nothing is written and only that
record fails. If a write or an fsync fails, the journal's tail is in doubt, so it refuses
every later record until it is reopened (reopening re-verifies the file and drops a torn
tail). The journal may therefore hold entries whose ``record`` did not return OK (written,
then the fsync failed or the caller was cancelled), never the reverse.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import anyio.to_thread

from ._dispatch_model import OK, DispatchMutation, Message, RecordError, RecordOutcome
from ._journal_format import encode_entry, entry_hash, genesis_hash, scan_journal, signed_bytes
from ._journal_keys import Signer

__all__ = ["JournalCorrupt", "JournalLocked", "JournalRecorder", "TornTailWarning"]


class JournalCorrupt(ValueError):
    """The journal holds a bad entry (not just a torn tail): it will not be appended to."""


class JournalLocked(RuntimeError):
    """Another recorder (in this or another process) has the journal open for writing."""


class TornTailWarning(UserWarning):
    """The journal ended in an interrupted append; it was dropped (it was never OK'd)."""


class JournalRecorder:
    """Records mutations into a journal file; one writer per file, many concurrent records.

    Open with :meth:`open` (synchronous: it reads and verifies the file) and close with
    :meth:`close` or ``async with``. ``fsync`` can be replaced to observe or fail syncing.
    ``commit_accepted_step`` is the protocol's default (OK): the journal records
    mutations, it does not checkpoint transcripts.
    """

    def __init__(
        self,
        path: Path,
        fd: int,
        signer: Signer,
        *,
        seq: int,
        prev: str,
        size: int,
        fsync: Callable[[int], None],
        torn_tail: str | None,
    ) -> None:
        self.path = path
        self._fd = fd
        self._signer = signer
        self._seq = seq
        self._prev = prev
        self._written = self._synced = size
        self._fsync = fsync
        self._lock = anyio.Lock()
        self._syncing: anyio.Event | None = None
        self._broken: str | None = None
        #: What :meth:`open` found and dropped, if the file ended in a torn tail.
        self.torn_tail = torn_tail
        #: How many fsyncs made records durable (the group-commit figure benchmarks use).
        self.fsyncs = 0

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Callable[[int], None] = os.fsync,
    ) -> JournalRecorder:
        """Open (or create, mode 0600) and verify a journal; take its writer lock.

        A torn tail is reported (:class:`TornTailWarning`, and :attr:`torn_tail`) and cut
        off; any other bad entry raises :class:`JournalCorrupt`, since appending to a
        journal that does not verify would hide the damage.
        """
        path = Path(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JournalLocked(f"{path} is already open for writing") from None
            data = b""
            while chunk := os.read(fd, 1 << 20):
                data += chunk
            found = scan_journal(data, signer.public_key)
            torn = None
            if found.torn_tail:
                torn = f"entry {found.bad_index}: {found.reason}"
                warnings.warn(TornTailWarning(f"{path}: {torn}; dropped"), stacklevel=2)
                os.ftruncate(fd, found.valid_bytes)
                fsync(fd)
            elif not found.ok:
                raise JournalCorrupt(f"{path}: entry {found.bad_index} {found.reason}")
            head = found.head or genesis_hash(signer.public_key)
            recorder = cls(
                path, fd, signer, seq=len(found.entries), prev=head, size=found.valid_bytes,
                fsync=fsync, torn_tail=torn,
            )  # fmt: skip
        except BaseException:
            os.close(fd)
            raise
        _sync_directory(path)
        return recorder

    @property
    def entries(self) -> int:
        """How many entries the journal holds (durable or about to be)."""
        return self._seq

    @property
    def head(self) -> str:
        """The last entry's hash: an anchor to keep elsewhere to detect cut-off entries."""
        return self._prev

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        if self._broken is not None:
            return RecordError(f"the journal refuses records after an I/O error: {self._broken}")
        async with self._lock:
            data = mutation.to_json()
            try:
                signature = self._signer.sign(signed_bytes(self._seq, self._prev, data))
                line = encode_entry(self._seq, self._prev, data, signature)
            except Exception as error:
                return RecordError(f"signing failed: {error!r}")
            try:
                self._write_all(line)
            except OSError as error:
                return self._break(f"write failed: {error}")
            self._seq += 1
            self._prev = entry_hash(line)
            self._written += len(line)
            end = self._written
        return await self._durable(end)

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOutcome:
        return OK

    def _write_all(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view) :]

    def _break(self, reason: str) -> RecordError:
        """After an I/O error the tail is unknown: try to cut it back, refuse from now on."""
        self._broken = reason
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._written)
        return RecordError(reason)

    async def _durable(self, end: int) -> RecordOutcome:
        """Wait until byte ``end`` is fsync'd, running the fsync ourselves if nobody is.

        Whoever finds no fsync in flight starts one covering everything written so far;
        everyone else waits for it and loops (their bytes may need the next one).
        """
        while self._synced < end:
            if self._broken is not None:
                return RecordError(f"the journal could not be made durable: {self._broken}")
            if self._syncing is not None:
                await self._syncing.wait()
                continue
            done = self._syncing = anyio.Event()
            upto = self._written
            try:
                await anyio.to_thread.run_sync(self._fsync, self._fd)
                self._synced = max(self._synced, upto)
                self.fsyncs += 1
            except OSError as error:
                self._broken = f"fsync failed: {error}"
            finally:
                self._syncing = None
                done.set()
        return OK

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                self._fsync(self._fd)
            os.close(self._fd)  # also releases the flock
            self._fd = -1

    async def __aenter__(self) -> JournalRecorder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def _sync_directory(path: Path) -> None:
    """fsync the folder so a newly created journal's name survives a crash too."""
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
