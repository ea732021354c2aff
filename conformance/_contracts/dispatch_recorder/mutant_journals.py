"""Broken signed journals and verifiers: the DR mutants of the journal rules.

Each is a plausible way to get the journal wrong that the kit must catch by its own
reading of the file, its fsync hook and its own tampering, never by trusting the
implementation: a journal of unsigned lines whose verifier compares the file with a copy
in memory; one that fsyncs a padding file instead of the journal, or fsyncs before it
writes; signatures without the domain prefix; verifiers that skip signatures, accept
non-canonical bytes or unprefixed signatures, remember what was written instead of
reading it, or call any newline-less tail torn; journals that, opened on an existing
file, start a new chain, append after a torn tail, or write at the old end of the file
once the torn tail is cut, or cut a damaged journal back to its last good entry and
carry on. :mod:`.mutants` registers them.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.reference import (
    OK,
    DispatchMutation,
    JournalEntry,
    JournalRecorder,
    Message,
    RecordOutcome,
    Signer,
    Verification,
    scan_journal,
)
from seamspec.reference._dispatch_recorder.journal_format import (
    DOMAIN,
    JOURNAL_VERSION,
    canonical,
    entry_hash,
    genesis_hash,
    may_be_entry,
    signed_bytes,
)
from seamspec.reference._dispatch_recorder.journal_writer import JournalWriter

__all__ = [
    "CutsDamageJournal",
    "FreshChainJournal",
    "FsyncBeforeWriteJournal",
    "FsyncElsewhereJournal",
    "KeepsTornTailJournal",
    "NoAppendModeJournal",
    "RememberingJournal",
    "UndomainedJournal",
    "UnsignedLinesJournal",
    "verify_accepting_undomained",
    "verify_any_tail_torn",
    "verify_loose_types",
    "verify_recanonicalised",
    "verify_remembering",
    "verify_undomained",
    "verify_unsigned_lines",
    "verify_without_signatures",
]

Verifier = Callable[[bytes, Ed25519PublicKey, "int | None", Path], Verification]
Fsync = Callable[[int], None]


# --------------------------------------------------------------------------------------
# Journals.

#: What each unsigned journal wrote, by path: its "verifier" compares with this copy.
_WRITTEN: dict[str, list[bytes]] = {}


class UnsignedLinesJournal:
    """Plain JSON lines, no signature, no chain; fsync'd before OK (so durable)."""

    def __init__(self, path: Path, fsync: Fsync) -> None:
        self.path = path
        self._fsync = fsync
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        _WRITTEN[str(path)] = []

    @classmethod
    def open(cls, path: Path, signer: Signer, *, fsync: Fsync = os.fsync) -> UnsignedLinesJournal:
        return cls(Path(path), fsync)

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        line = json.dumps(mutation.to_json(), sort_keys=True).encode() + b"\n"
        os.write(self._fd, line)
        self._fsync(self._fd)
        _WRITTEN[str(self.path)].append(line)
        return OK

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOutcome:
        return OK

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def verify_unsigned_lines(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """Valid when the file's lines are the ones this process wrote, in order."""
    found = Verification()
    copy = _WRITTEN.get(str(path), [])
    lines = data.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if index >= len(copy) or line != copy[index]:
            found.bad_index, found.reason = index, "differs from what was written"
            found.torn_tail = not line.endswith(b"\n")
            return found
        found.entries.append(JournalEntry(index, "", json.loads(line), "", 0, 0))
    if len(lines) < len(copy):
        found.bad_index, found.reason = len(lines), "entries missing"
    return found


class FsyncElsewhereJournal(JournalRecorder):
    """The reference journal, but each fsync goes to a padding file next to it."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Fsync = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        padding = os.open(Path(path).with_name("padding"), os.O_WRONLY | os.O_CREAT, 0o600)

        def elsewhere(fd: int) -> None:
            os.write(padding, b"\0" * 512)
            fsync(padding)

        return super().open(path, signer, fsync=elsewhere, workers=workers)


class _FsyncFirstWriter(JournalWriter):
    def _append_and_sync(self, data: bytes, start: int) -> str | None:
        self._fsync(self.fd)  # the bug: syncs what is there, then appends and acknowledges
        self._append(data)
        return None


class FsyncBeforeWriteJournal(JournalRecorder):
    """fsyncs the journal, then appends the batch, then acknowledges it."""

    writer_type = _FsyncFirstWriter


class _FreshChainWriter(JournalWriter):
    """Begins every journal it is given at sequence 0, chained to the genesis hash."""

    def __init__(
        self, fd: int, signer: Signer, *, seq: int, prev: str, size: int,
        fsync: Fsync, workers: int,
    ) -> None:  # fmt: skip
        start = genesis_hash(signer.public_key)
        super().__init__(fd, signer, seq=0, prev=start, size=size, fsync=fsync, workers=workers)


class FreshChainJournal(JournalRecorder):
    """Appends to an existing journal as if it were new: a second chain from seq 0."""

    writer_type = _FreshChainWriter


class KeepsTornTailJournal(JournalRecorder):
    """Continues the chain of an existing journal, but leaves a torn tail where it is and
    appends after it."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Fsync = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        data = Path(path).read_bytes() if Path(path).exists() else b""
        tail = data[data.rfind(b"\n") + 1 :]
        recorder = super().open(path, signer, fsync=fsync, workers=workers)
        if recorder.torn_tail is not None and tail:  # the bug: put the torn bytes back
            os.write(recorder._fd, tail)
            recorder._writer.written += len(tail)
        return recorder


class CutsDamageJournal(JournalRecorder):
    """Opened on a journal that does not verify, cuts it back to its last good entry (as
    if the damage were a torn tail) and carries on."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Fsync = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        if Path(path).exists():
            found = scan_journal(Path(path).read_bytes(), signer.public_key)
            if not found.ok:  # the bug: damage is not a torn tail, and must not be cut
                os.truncate(path, found.valid_bytes)
        return super().open(path, signer, fsync=fsync, workers=workers)


class NoAppendModeJournal(JournalRecorder):
    """Reads the journal through and cuts a torn tail off, but writes on from where its
    descriptor stands (not in append mode): at the old end, past the cut."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Fsync = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        recorder = super().open(path, signer, fsync=fsync, workers=workers)
        flags = fcntl.fcntl(recorder._fd, fcntl.F_GETFL)
        fcntl.fcntl(recorder._fd, fcntl.F_SETFL, flags & ~os.O_APPEND)
        return recorder


class _UndomainedSigner:
    """Signs the entry's JSON without the domain-separation prefix."""

    def __init__(self, inner: Signer) -> None:
        self._inner = inner

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._inner.public_key

    def sign(self, data: bytes) -> bytes:
        return self._inner.sign(data.removeprefix(DOMAIN))


class UndomainedJournal(JournalRecorder):
    """The reference journal signing without the domain prefix (its verifier agrees)."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Fsync = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        return super().open(path, _UndomainedSigner(signer), fsync=fsync, workers=workers)


# --------------------------------------------------------------------------------------
# Verifiers, each one line of a real check left out or loosened.


def _same(value: Any, wanted: int, loose: bool) -> bool:
    """``value`` is ``wanted``: by type and value, or (``loose``) by Python's ``==`` alone."""
    return value == wanted and (loose or type(value) is int)


def _scan(
    data: bytes,
    key: Ed25519PublicKey,
    expected: int | None,
    accept: Callable[..., bool],
    *,
    loose: bool = False,
) -> Verification:
    """A verifier of the documented framing, version, sequence and chain, whose signature
    check is ``accept(signature, signed bytes, key)`` (``loose``: numbers compared by
    value, so ``true`` passes for 1). Otherwise as strict as the reference, so that each
    verifier built on it has only its own mistake."""
    found = Verification()
    prev, pos = genesis_hash(key), 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        index = len(found.entries)
        if end == -1:  # a whole entry that lost its newline is damage, not a torn tail
            found.bad_index, found.reason = index, "no newline"
            found.torn_tail = not may_be_entry(data[pos:])
            return found
        try:
            entry = json.loads(data[pos:end])
            ok = canonical(entry) == data[pos:end] and _same(entry["seq"], index, loose)
            ok = ok and _same(entry["v"], JOURNAL_VERSION, loose)
            signed = signed_bytes(index, prev, entry["mutation"])
            ok = ok and entry["prev"] == prev and accept(entry["sig"], signed, key)
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            found.bad_index, found.reason = index, "bad entry"
            return found
        prev = entry_hash(signed)
        found.entries.append(JournalEntry(index, entry["prev"], entry["mutation"], prev, pos, 0))
        pos = end + 1
    if expected is not None and len(found.entries) != expected:
        found.bad_index, found.reason = min(len(found.entries), expected), "anchor"
    return found


def _verifies(sig: str, message: bytes, key: Ed25519PublicKey) -> bool:
    """The reference's signature check: canonical (lower-case) hex, then Ed25519.

    ``bytes.fromhex`` alone also takes upper-case digits, which would give every verifier
    built on this a second mistake (the outsider's ``sig_hex_case_insensitive``): each
    must keep only its own, or fuzzing finds it by the wrong one.
    """
    try:
        signature = bytes.fromhex(sig)
        if signature.hex() != sig:
            return False
        key.verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def verify_undomained(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """Checks signatures over the entry's JSON without the domain prefix."""
    return _scan(data, key, expected, lambda s, m, k: _verifies(s, m.removeprefix(DOMAIN), k))


def verify_accepting_undomained(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """Accepts a signature with the domain prefix, or one without it."""
    return _scan(
        data,
        key,
        expected,
        lambda s, m, k: _verifies(s, m, k) or _verifies(s, m.removeprefix(DOMAIN), k),
    )


def verify_without_signatures(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """Checks framing, canonical form, sequence and chain, and no signature at all."""
    return _scan(data, key, expected, lambda s, m, k: True)


def verify_loose_types(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """A full check, except that ``seq`` is compared by value: ``true`` passes for 1."""
    return _scan(data, key, expected, _verifies, loose=True)


def verify_recanonicalised(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """Parses each line and checks its canonical re-encoding, not the bytes on disk."""
    lines = data.split(b"\n")
    fixed = []
    for line in lines[:-1]:
        try:
            fixed.append(canonical(json.loads(line)))
        except ValueError:
            fixed.append(line)
    return scan_journal(b"\n".join([*fixed, lines[-1]]), key, expected_entries=expected)


def verify_any_tail_torn(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """Calls every final segment without a newline a torn tail, even a complete entry."""
    found = scan_journal(data, key, expected_entries=expected)
    if not data.endswith(b"\n") and data:
        cut = data.rfind(b"\n") + 1
        found = scan_journal(data[:cut], key)
        found.bad_index, found.torn_tail = len(found.entries), True
        found.reason = "torn tail"
    return found


#: What the reference journal recorded, by path, for :func:`verify_remembering`.
REMEMBERED: dict[str, list[dict[str, Any]]] = {}


class RememberingJournal(JournalRecorder):
    """The reference journal, remembering each mutation it recorded."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        outcome = await super().record(mutation)
        REMEMBERED.setdefault(str(self.path), []).append(mutation.to_json())
        return outcome


def verify_remembering(
    data: bytes, key: Ed25519PublicKey, expected: int | None, path: Path
) -> Verification:
    """A real verdict, but the mutations it returns are the ones it remembers writing."""
    found = scan_journal(data, key, expected_entries=expected)
    remembered = REMEMBERED.pop(str(path), [])
    if found.ok and len(remembered) == len(found.entries):
        found.entries = [
            JournalEntry(e.seq, e.prev, m, e.hash, e.offset, e.length)
            for e, m in zip(found.entries, remembered, strict=True)
        ]
    REMEMBERED[str(path)] = remembered
    return found
