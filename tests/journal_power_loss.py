"""Power-loss simulation of the reference journal: only what fsync made durable survives.

SIGKILL (``test_dr_journal_crash.py``) keeps the page cache, so it proves write/ack
ordering, not durability. Here the journal's writes and fsyncs are interposed on: a
simulated disk notes, in one ordered log, every append (how far the file reaches), every
completed fsync (how much of the file it made durable: all bytes written before it
began) and every OK a ``record`` returned. A power cut is a point in that log. What
survives it is the durable prefix, then *any* part of the bytes written but not yet
durable: a clean cut at a random byte, the same cut followed by a zero-filled block (a
size that reached the disk before its data), or followed by random garbage. The journal
is then reopened, as the harness would after a reboot, and verified: every record
acknowledged before the cut must be in it. The journal may hold more (entries written,
never acknowledged) and may have set a tail aside; it must never lose an acknowledged one.

The real writer runs (its worker threads, group commit, several records in flight);
only ``fsync`` is replaced by the disk model, so trials are fast. Run::

    python tests/journal_power_loss.py --trials 10000      # or: nox -s power_loss

``test_dr_journal_power_loss.py`` runs a bounded number on every test run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from seamspec.reference import (
    DispatchMutation,
    JournalCorrupt,
    JournalRecorder,
    KeySigner,
    QuarantinedTailWarning,
    ResultRedaction,
    TornTailWarning,
    generate_keypair,
    scan_journal,
)

FLAVOURS = ("clean-cut", "zero-block", "garbage")


class Disk:
    """The simulated disk's ordered log: ("write", end), ("sync", durable), ("ack", id)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.written = 0
        self.log: list[tuple[str, int | str]] = []

    def appended(self, size: int) -> None:
        with self.lock:
            self.written += size
            self.log.append(("write", self.written))

    def fsync(self, _fd: int) -> None:
        with self.lock:  # makes durable what was written before it began
            self.log.append(("sync", self.written))

    def acked(self, ident: str) -> None:
        with self.lock:
            self.log.append(("ack", ident))


def _journal_class(disk: Disk, base: type[JournalRecorder]) -> type[JournalRecorder]:
    class Writer(base.writer_type):  # type: ignore[name-defined,misc]
        def _append(self, data: bytes) -> None:
            super()._append(data)
            disk.appended(len(data))

    class Journal(base):  # type: ignore[valid-type,misc]
        writer_type = Writer

    return Journal


async def _workload(journal: JournalRecorder, disk: Disk, records: int, flows: int) -> None:
    counter = iter(range(records))

    async def flow() -> None:
        for n in counter:
            ident = f"r{n}"
            kind = ResultRedaction("x" * (n % 7 * 30), "[redacted]")
            outcome = await journal.record(DispatchMutation(ident, "read_env", kind))
            if outcome.__class__.__name__ == "RecordOk":
                disk.acked(ident)

    async with anyio.create_task_group() as group:
        for _ in range(flows):
            group.start_soon(flow)


@dataclass
class Figures:
    trials: int = 0
    workloads: int = 0
    acknowledged_checked: int = 0
    acknowledged_lost: int = 0
    unacknowledged_survived: int = 0
    torn_tails_cut: int = 0
    tails_quarantined: int = 0
    reopens_refused: int = 0
    by_flavour: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FLAVOURS, 0))
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _survivor(rng: random.Random, data: bytes, durable: int, written: int) -> tuple[bytes, str]:
    extra = data[durable : durable + rng.randint(0, written - durable)]
    flavour = rng.choice(FLAVOURS)
    if flavour == "zero-block":
        return data[:durable] + extra + b"\0" * rng.choice((1, 512, 4096)), flavour
    if flavour == "garbage":
        return data[:durable] + extra + rng.randbytes(rng.randint(1, 64)), flavour
    return data[:durable] + extra, flavour


def _trial(
    rng: random.Random,
    data: bytes,
    disk: Disk,
    cut: int,
    *,
    key: Path,
    folder: Path,
    figures: Figures,
) -> None:
    durable = written = 0
    acked: list[str] = []
    for kind, value in disk.log[:cut]:
        if kind == "write":
            written = int(value)
        elif kind == "sync":
            durable = max(durable, int(value))
        else:
            acked.append(str(value))
    survivor, flavour = _survivor(rng, data, durable, written)
    path = folder / f"after-cut-{figures.trials}.journal"
    path.write_bytes(survivor)
    figures.trials += 1
    figures.by_flavour[flavour] += 1
    refused = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            JournalRecorder.open(path, KeySigner.from_file(key), workers=1).close()
        except JournalCorrupt:
            # Garbage with a newline in it: the journal refuses to append until a person
            # looks (fail closed). It destroyed nothing: the entries before it must hold
            # every acknowledged record.
            refused = True
            figures.reopens_refused += 1
    figures.torn_tails_cut += sum(isinstance(w.message, TornTailWarning) for w in caught)
    figures.tails_quarantined += sum(isinstance(w.message, QuarantinedTailWarning) for w in caught)
    found = scan_journal(path.read_bytes(), KeySigner.from_file(key).public_key)
    if refused:
        found.bad_index = None  # judged below on the entries before the damage
    present = {str(e.mutation["tool_call_id"]) for e in found.entries}
    lost = [ident for ident in acked if ident not in present]
    figures.acknowledged_checked += len(acked)
    figures.acknowledged_lost += len(lost)
    figures.unacknowledged_survived += len(present - set(acked))
    if not found.ok or lost:
        figures.failures.append(
            f"trial {figures.trials} ({flavour}, cut at log event {cut}): "
            f"{found.reason or ''} lost {lost}"
        )
    for leftover in folder.glob(f"{path.name}*"):
        leftover.unlink()


def simulate(
    trials: int,
    *,
    seed: int = 20261201,
    cuts_per_workload: int = 50,
    journal: type[JournalRecorder] = JournalRecorder,
) -> Figures:
    """Run ``trials`` power cuts over fresh workloads of ``journal``; return the figures."""
    rng = random.Random(seed)
    figures = Figures()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seamspec-power-") as tmp:
        folder = Path(tmp)
        key = folder / "j.key"
        generate_keypair(key, folder / "j.pub")
        while figures.trials < trials:
            disk = Disk()
            path = folder / f"workload-{figures.workloads}.journal"
            recorder = _journal_class(disk, journal).open(
                path, KeySigner.from_file(key), fsync=disk.fsync
            )
            try:
                anyio.run(_workload, recorder, disk, rng.randint(1, 24), rng.choice((1, 2, 4, 8)))
            finally:
                recorder.close()
            figures.workloads += 1
            data = path.read_bytes()
            path.unlink()
            for _ in range(min(cuts_per_workload, trials - figures.trials)):
                cut = rng.randint(0, len(disk.log))
                _trial(rng, data, disk, cut, key=key, folder=folder, figures=figures)
    figures.seconds = time.perf_counter() - started
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    if args.trials < 1:
        parser.error("--trials must be at least 1")
    figures = simulate(args.trials, seed=args.seed)
    report = {k: v for k, v in vars(figures).items() if k != "failures"}
    report["seconds"] = round(figures.seconds, 1)
    print(json.dumps(report, indent=2))
    for failure in figures.failures[:20]:
        print(failure, file=sys.stderr)
    return 0 if not figures.failures else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
