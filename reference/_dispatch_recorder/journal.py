"""A real dispatch recorder: a signed, hash-chained, fsync'd append-only journal.

``record`` returns OK only after the mutation's signed entry is on stable storage
(DR-JOURNAL-DURABLE). The work happens in the journal's own threads
(:mod:`._journal_writer`): they sign on several cores and let concurrent records share
fsyncs (group commit), while the event loop only chains the entry and waits.

Failure is fail-closed. If signing fails, nothing is written for that record (nor for
records chained behind it, which fail too) and later records work again. If a write or an
fsync fails, the journal's tail is in doubt, so it refuses every later record until it is
reopened (reopening re-verifies the file and drops a torn tail). The journal may therefore
hold entries whose ``record`` did not return OK (written, then the fsync failed or the
caller was cancelled), never the reverse.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import anyio.lowlevel

from seamspec.reference._dispatch_recorder.journal_format import (
    genesis_hash,
    journal_fingerprint,
    scan_journal,
)
from seamspec.reference._dispatch_recorder.journal_keys import Signer
from seamspec.reference._dispatch_recorder.journal_writer import CallSoon, JournalWriter
from seamspec.reference._dispatch_recorder.model import (
    OK,
    DispatchMutation,
    Message,
    RecordError,
    RecordOutcome,
)

__all__ = [
    "JournalCorrupt",
    "JournalLocked",
    "JournalRecorder",
    "QuarantinedTailWarning",
    "TornTailWarning",
]


class JournalCorrupt(ValueError):
    """The journal holds a bad entry (not just a torn tail): it will not be appended to."""


class JournalLocked(RuntimeError):
    """Another recorder (in this or another process) has the journal open for writing."""


class TornTailWarning(UserWarning):
    """The journal ended in an interrupted append; it was dropped (it was never OK'd)."""


class QuarantinedTailWarning(UserWarning):
    """The journal ended in what may be a complete entry without its newline: not a torn
    tail, so not dropped; its bytes were moved to a quarantine file next to the journal."""


class JournalRecorder:
    """Records mutations into a journal file; one writer per file, many concurrent records.

    Open with :meth:`open` (synchronous: it reads and verifies the file) and close with
    :meth:`close` or ``async with``. ``fsync`` can be replaced to observe or fail syncing.
    ``commit_accepted_step`` is the protocol's default (OK): the journal records
    mutations, it does not checkpoint transcripts.
    """

    #: The engine class; a subclass may replace it (the crash test writes in pieces).
    writer_type: type[JournalWriter] = JournalWriter

    def __init__(self, path: Path, writer: JournalWriter, *, torn_tail: str | None) -> None:
        self.path = path
        self._writer = writer
        #: What :meth:`open` found and dropped, if the file ended in a torn tail.
        self.torn_tail = torn_tail
        #: Where :meth:`open` set aside a tail that may have been a complete entry.
        self.quarantined: Path | None = None

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Callable[[int], None] = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        """Open (or create, mode 0600) and verify a journal; take its writer lock.

        A torn tail is reported (:class:`TornTailWarning`, and :attr:`torn_tail`) and cut
        off; any other bad entry raises :class:`JournalCorrupt`, since appending to a
        journal that does not verify would hide the damage. ``workers`` is the number of
        threads that sign, write and sync (default 1: one writer that signs a whole batch,
        writes it and syncs it once, then wakes its records together). More workers sign
        in parallel, which only pays for a signer that waits rather than computes (a
        hardware token, a remote service): an in-process Ed25519 signature holds the GIL
        (docs/benchmarks.md), so extra threads only add hand-offs.
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
            torn = quarantined = None
            if found.torn_tail:
                torn = f"entry {found.bad_index}: {found.reason}"
                warnings.warn(TornTailWarning(f"{path}: {torn}; dropped"), stacklevel=2)
                os.ftruncate(fd, found.valid_bytes)
                fsync(fd)
            elif not found.ok and data.rfind(b"\n") + 1 == found.valid_bytes:
                # Only the newline-less tail is wrong, and it may be a whole entry (perhaps
                # an acknowledged one): never destroy it; move it aside, then go on.
                quarantined = _quarantine(path, data[found.valid_bytes :], found.valid_bytes)
                warnings.warn(
                    QuarantinedTailWarning(
                        f"{path}: entry {found.bad_index} {found.reason}; its bytes were "
                        f"moved to {quarantined.name}, which a person must look at"
                    ),
                    stacklevel=2,
                )
                os.ftruncate(fd, found.valid_bytes)
                fsync(fd)
            elif not found.ok:
                raise JournalCorrupt(f"{path}: entry {found.bad_index} {found.reason}")
            _sync_directory(path)
            writer = cls.writer_type(
                fd, signer, seq=len(found.entries),
                prev=found.head or genesis_hash(signer.public_key), size=found.valid_bytes,
                fsync=fsync, workers=workers or 1,
            )  # fmt: skip
        except BaseException:
            os.close(fd)
            raise
        recorder = cls(path, writer, torn_tail=torn)
        recorder.quarantined = quarantined
        return recorder

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the journal's key (entry 0's ``prev``): keep it elsewhere and
        pass it to ``seamspec journal verify --fingerprint`` to pin the key."""
        return journal_fingerprint(self._writer.signer_key)

    @property
    def entries(self) -> int:
        """How many entries the journal holds (durable or about to be)."""
        return self._writer.next_seq

    @property
    def head(self) -> str:
        """The last entry's hash: an anchor to keep elsewhere to detect cut-off entries."""
        return self._writer.head

    @property
    def fsyncs(self) -> int:
        """How many fsyncs made records durable (the group-commit figure benchmarks use)."""
        return self._writer.fsyncs

    @property
    def _fd(self) -> int:
        return self._writer.fd

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        # Cancelled while waiting, the entry still settles in the background; it may
        # then be in the journal without an OK, which the module docstring allows.
        waiter = _Waiter()
        entry = self._writer.submit(mutation.to_json(), waiter.call_soon, waiter.wake)
        if entry.error is None:
            await waiter.wait()
        else:
            await anyio.lowlevel.checkpoint()
        return OK if entry.durable else RecordError(entry.error or "not recorded")

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOutcome:
        return OK

    def close(self) -> None:
        """Finish what was submitted, stop the workers, release the file and its lock."""
        if self._writer.fd >= 0:
            self._writer.close()
            os.close(self._writer.fd)  # also releases the flock
            self._writer.fd = -1

    async def __aenter__(self) -> JournalRecorder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def _quarantine(path: Path, tail: bytes, offset: int) -> Path:
    """Write ``tail`` to a new file next to the journal, durably, and return its path."""
    for attempt in range(1000):
        target = path.with_name(
            f"{path.name}.quarantine-{offset}" + (f"-{attempt}" if attempt else "")
        )
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        try:
            view = memoryview(tail)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        _sync_directory(path)
        return target
    raise JournalCorrupt(f"{path}: cannot quarantine its damaged tail (1000 files exist)")


def _sync_directory(path: Path) -> None:
    """fsync the folder so a newly created journal's name survives a crash too."""
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class _Waiter:
    """Waits on the current event loop for a wake-up sent from a journal worker thread.

    anyio only offers a blocking call into the loop (``from_thread.run_sync``), which
    would hold a journal worker until the loop got round to it, so this uses each loop's
    own non-blocking one. On asyncio it waits on a bare future (a record's wait is the
    hottest path of a busy journal, and an ``anyio.Event`` costs more there).
    """

    __slots__ = ("_event", "_future", "call_soon", "wake")

    def __init__(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio: anyio's other backend is trio
            import trio

            self._future = None
            self._event = anyio.Event()
            self.call_soon: CallSoon = trio.lowlevel.current_trio_token().run_sync_soon
            self.wake: Callable[[], object] = self._event.set
        else:
            self._future = future = loop.create_future()
            self.call_soon = loop.call_soon_threadsafe

            def wake() -> None:
                if not future.done():  # a cancelled waiter's future is done already
                    future.set_result(None)

            self.wake = wake

    async def wait(self) -> None:
        if self._future is not None:
            await self._future
        else:
            await self._event.wait()
