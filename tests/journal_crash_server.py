"""A fork server for the journal crash test (run as a script, never imported by pytest).

It starts single-threaded, imports the journal once, and for each ``trial`` line on stdin
forks a child that records mutations into the journal and prints ``ack <id>`` after each
``record`` returned OK. The test kills that child with SIGKILL at a random moment; the
server reaps it and prints ``done``. Forking from this clean process (rather than from
pytest, which has threads) keeps each trial cheap and safe.

The child's journal writes each entry in small pieces, so that a kill can land in the
middle of an entry and leave a torn tail, as a power cut would.
"""

from __future__ import annotations

import contextlib
import os
import sys

import anyio

from seamspec.reference import DispatchMutation, JournalRecorder, KeySigner, ResultRedaction
from seamspec.reference._dispatch_recorder.journal_writer import JournalWriter


class ChunkedWriter(JournalWriter):
    """Writes entries 16 bytes at a time: a kill between writes tears the tail."""

    def _append(self, data: bytes) -> None:
        for start in range(0, len(data), 16):
            os.write(self.fd, data[start : start + 16])


class ChunkedJournal(JournalRecorder):
    writer_type = ChunkedWriter


def say(text: str) -> None:
    os.write(1, (text + "\n").encode())  # one write per line: lines never interleave


async def record_forever(journal: JournalRecorder, trial: str, worker: int) -> None:
    n = 0
    while True:
        ident = f"{trial}-{worker}-{n}"
        mutation = DispatchMutation(ident, "read_env", ResultRedaction("x" * 40, "[redacted]"))
        outcome = await journal.record(mutation)
        if outcome.__class__.__name__ != "RecordOk":
            say(f"error {ident}")
            return
        say(f"ack {ident}")
        n += 1


async def child(path: str, key: str, trial: str, workers: int) -> None:
    journal = ChunkedJournal.open(path, KeySigner.from_file(key))
    if journal.torn_tail:
        say(f"recovered {trial}")
    async with anyio.create_task_group() as group:
        for worker in range(workers):
            group.start_soon(record_forever, journal, trial, worker)


def warm_up() -> None:
    """Import and initialise, once, what every child would otherwise load on its own:
    the asyncio backend of anyio and OpenSSL's Ed25519 (no threads are started)."""
    import anyio._backends._asyncio  # noqa: F401
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    Ed25519PrivateKey.generate().sign(b"warm-up")


def main() -> None:
    warm_up()
    for line in sys.stdin:
        _, path, key, trial, workers = line.split()
        # The child starts only once "pid" is out: otherwise, on a loaded machine, it can
        # run and say "ack" before the server says which process to kill.
        go, ready = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(ready)
                os.read(go, 1)
                os.close(go)
                anyio.run(child, path, key, trial, int(workers))
            finally:
                os._exit(0)
        os.close(go)
        say(f"pid {pid}")
        # The test may kill the child at any moment once "pid" is out, on a loaded machine
        # before it read the go-ahead: no record began, which the test sees as a kill
        # during open.
        with contextlib.suppress(BrokenPipeError):
            os.write(ready, b"g")
        os.close(ready)
        os.waitpid(pid, 0)
        say("done")


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    main()
