"""Two fake signed journals that once got CONFORMS, kept as fixtures (issue 18).

- ``unsigned``: a journal of plain JSON lines, no signature and no chain, whose
  "verifier" compares the file with the copy it kept in memory;
- ``fsync-elsewhere``: the reference journal, except that every fsync goes to a padding
  file next to it, so the journal itself is never made durable.

Both are whole dispatch-recorder implementations (the reference turn loop and executor
with the fake journal), used in process (:func:`fake_adapter`) and over the wire (run
this file: ``python journal_fakes.py MODE`` serves the fake on stdin/stdout).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from seamspec import __version__
from seamspec.conformance import PythonAdapter
from seamspec.conformance._contracts.dispatch_recorder.driver import DispatchRecorderDriver
from seamspec.conformance._contracts.dispatch_recorder.reference_adapter import ReferenceDispatch
from seamspec.reference import (
    OK,
    DispatchMutation,
    JournalRecorder,
    Message,
    RecordOutcome,
    Signer,
)

MODES = ("unsigned", "fsync-elsewhere")


class _Entry:
    def __init__(self, mutation: dict[str, Any]) -> None:
        self.mutation = mutation


class _Verdict:
    def __init__(self, entries: list[_Entry], bad: int | None, torn: bool = False) -> None:
        self.entries, self.bad_index, self.torn_tail = entries, bad, torn
        self.ok = bad is None
        self.reason = None if bad is None else "differs from what was written"


class UnsignedJournal:
    """Appends ``json.dumps(mutation)`` lines, fsync'd through the kit's hook, and
    remembers them: the verifier checks the file against that memory, nothing else."""

    copies: ClassVar[dict[str, list[bytes]]] = {}

    def __init__(self, path: Path, fsync: Callable[[int], None]) -> None:
        self.path, self.fsync = path, fsync
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.copies[str(path)] = []

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        line = json.dumps(mutation.to_json()).encode() + b"\n"
        os.write(self.fd, line)
        self.fsync(self.fd)
        self.copies[str(self.path)].append(line)
        return OK

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOutcome:
        return OK

    def close(self) -> None:
        os.close(self.fd)


class Fake(ReferenceDispatch):
    def __init__(self, mode: str) -> None:
        self.mode = mode

    def open_journal(self, path: Path, signer: Signer, *, fsync: Callable[[int], None]) -> Any:
        if self.mode == "unsigned":
            return UnsignedJournal(path, fsync)
        padding = os.open(path.with_name("padding"), os.O_WRONLY | os.O_CREAT, 0o600)

        def elsewhere(_journal_fd: int) -> None:
            os.write(padding, b"\0" * 4096)
            fsync(padding)

        return JournalRecorder.open(path, signer, fsync=elsewhere)

    def verify_journal(self, path: Path, public_key: Any, *, expected_entries: int | None) -> Any:
        if self.mode != "unsigned":
            return super().verify_journal(path, public_key, expected_entries=expected_entries)
        copy = UnsignedJournal.copies.get(str(path), [])
        lines = path.read_bytes().splitlines(keepends=True)
        for index, line in enumerate(lines):
            if index >= len(copy) or line != copy[index]:
                return _Verdict([], index, not line.endswith(b"\n"))
        entries = [_Entry(json.loads(line)) for line in lines]
        return _Verdict(entries, None if len(lines) == len(copy) else len(lines))


def fake_adapter(mode: str) -> PythonAdapter:
    return PythonAdapter(
        name=f"fake-journal-{mode}",
        version=__version__,
        drivers=[DispatchRecorderDriver(Fake(mode))],
    )


if __name__ == "__main__":
    from seamspec.conformance._wire.server import protect_stdout, serve

    out = protect_stdout()
    sys.exit(serve(fake_adapter(sys.argv[1]), sys.stdin.buffer, out))
