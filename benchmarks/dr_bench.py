"""Dispatch-recorder journal throughput: signed, chained, fsync'd records per second.

Three figures, measured side by side in one run and interleaved round by round (so a
noisy neighbour hurts all of them alike), reported as medians:

- ``plain``: a loop that appends a line of the same size as a journal entry and fsyncs
  it, one at a time: the floor any durable journal pays.
- ``journal x1``: ``JournalRecorder.record`` one at a time (Ed25519 signature, hash
  chain, canonical JSON, write, fsync in a worker thread).
- ``journal x16``: 16 records in flight at once; group commit lets them share fsyncs.

Targets: ``journal x1 / plain >= 0.8`` and ``journal x16 / journal x1 >= 4``.

    python benchmarks/dr_bench.py [--records 200] [--rounds 5] [--dir PATH]

``--dir`` should be on the file system you care about: on tmpfs fsync costs nothing and
the ratios mean little.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from seamspec.reference import (
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeySigner,
    generate_keypair,
)


def _mutation(i: int) -> DispatchMutation:
    return DispatchMutation(
        f"call-{i:06d}", "shell", InputRewrite('{"cmd":"ls"}', '{"cmd":"ls -1"}')
    )


def plain(path: Path, records: int, size: int) -> float:
    line = b"x" * (size - 1) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(records):
            os.write(fd, line)
            os.fsync(fd)
        return records / (time.perf_counter() - start)
    finally:
        os.close(fd)


def journal(path: Path, signer: KeySigner, records: int, concurrency: int) -> tuple[float, int]:
    async def run() -> tuple[float, int]:
        async with JournalRecorder.open(path, signer) as recorder:
            per_task = records // concurrency

            async def worker(offset: int) -> None:
                for i in range(per_task):
                    await recorder.record(_mutation(offset + i))

            start = time.perf_counter()
            async with anyio.create_task_group() as group:
                for task in range(concurrency):
                    group.start_soon(worker, task * per_task)
            elapsed = time.perf_counter() - start
            return per_task * concurrency / elapsed, recorder.fsyncs

    return anyio.run(run)


def entry_size(folder: Path, signer: KeySigner) -> int:
    journal(folder / "probe", signer, 1, 1)
    return len((folder / "probe").read_bytes())


def filesystem(folder: Path) -> str:
    try:
        out = subprocess.run(
            ["df", "-T", str(folder)], capture_output=True, text=True, check=True
        ).stdout
        return out.splitlines()[-1].split()[1]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dr-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        generate_keypair(folder / "k", folder / "k.pub")
        signer = KeySigner.from_file(folder / "k")
        size = entry_size(folder, signer)
        figures: dict[str, list[float]] = {"plain": [], "journal x1": [], "journal x16": []}
        fsyncs16: list[int] = []
        for round_ in range(args.rounds):
            figures["plain"].append(plain(folder / f"plain-{round_}", args.records, size))
            one, _ = journal(folder / f"one-{round_}", signer, args.records, 1)
            figures["journal x1"].append(one)
            many, syncs = journal(folder / f"many-{round_}", signer, args.records, 16)
            figures["journal x16"].append(many)
            fsyncs16.append(syncs)
        median = {name: statistics.median(values) for name, values in figures.items()}
        print(
            f"file system: {filesystem(folder)}; entry size {size} bytes; "
            f"{args.records} records x {args.rounds} rounds (medians)"
        )
        for name, value in median.items():
            print(f"  {name:12} {value:10.0f} records/s")
        print(
            f"  journal x1 / plain       = {median['journal x1'] / median['plain']:.2f}  (target >= 0.8)"
        )
        print(
            f"  journal x16 / journal x1 = {median['journal x16'] / median['journal x1']:.2f}  (target >= 4)"
        )
        print(
            f"  fsyncs for {args.records} records at x16: median {statistics.median(fsyncs16):.0f}"
        )


if __name__ == "__main__":
    main()
