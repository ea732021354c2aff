"""Dispatch-recorder journal throughput: signed, chained, fsync'd records per second.

Every figure is measured side by side in one run, interleaved round by round (so a noisy
neighbour hurts all of them alike), and reported as the median over the rounds:

- ``plain``: append a line of the same size as a journal entry and fsync it, one at a
  time: the floor any durable journal pays.
- ``bare``: sign the line's bytes with Ed25519, then append and fsync, one at a time, in
  one thread with no journal around it. No journal that signs each entry before its
  fsync can do better one at a time; ``bare / plain`` is the ceiling for the first
  target on this machine.
- ``journal x1`` and ``journal x16``: ``JournalRecorder.record`` one at a time, and with
  16 records in flight (group commit), for each signer: ``in-process`` (``KeySigner``,
  signing in the journal's worker threads) and ``process`` (``SignerProcess``, a signing
  service in a child process, sent whole batches).

Targets (issue 4): ``journal x1 / plain >= 0.8`` and ``journal x16 / journal x1 >= 4``.

    python benchmarks/dr_bench.py [--records 800] [--rounds 7] [--dir PATH]

``--dir`` should be on the file system you care about: on tmpfs fsync costs nothing and
the ratios mean little.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import anyio

from seamspec.reference import (
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeySigner,
    Signer,
    SignerProcess,
    generate_keypair,
)

TARGET_ONE, TARGET_MANY = 0.8, 4.0


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


def bare(path: Path, signer: KeySigner, records: int, size: int) -> float:
    """Sign, append, fsync: the least a signed journal does per entry, one at a time."""
    body = b"x" * (size - 129)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(records):
            os.write(fd, body + signer.sign(body).hex().encode() + b"\n")
            os.fsync(fd)
        return records / (time.perf_counter() - start)
    finally:
        os.close(fd)


def journal(path: Path, signer: Signer, records: int, concurrency: int) -> tuple[float, int]:
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


def signature_cost(signer: KeySigner, busy_neighbour: bool, count: int = 2000) -> float:
    """Microseconds per Ed25519 signature in a thread, alone or next to a thread that
    runs pure Python (as a busy event loop does): the GIL contention in-process signing
    meets."""
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(range(100))

    neighbour = threading.Thread(target=busy)
    if busy_neighbour:
        neighbour.start()
    elapsed: list[float] = []

    def sign() -> None:
        start = time.perf_counter()
        for _ in range(count):
            signer.sign(b"x" * 300)
        elapsed.append(time.perf_counter() - start)

    signing = threading.Thread(target=sign)
    signing.start()
    signing.join()
    stop.set()
    if busy_neighbour:
        neighbour.join()
    return elapsed[0] / count * 1e6


def entry_size(folder: Path, signer: Signer) -> int:
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


def _verdict(value: float, target: float) -> str:
    return "met" if value >= target else "missed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dr-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        generate_keypair(folder / "k", folder / "k.pub")
        in_process = KeySigner.from_file(folder / "k")
        with SignerProcess(folder / "k") as service:
            signers: dict[str, Signer] = {"in-process": in_process, "process": service}
            size = entry_size(folder, in_process)
            figures: dict[str, list[float]] = {}
            fsyncs: dict[str, list[int]] = {}
            n = 0
            for _ in range(args.rounds):
                n += 1
                figures.setdefault("plain", []).append(
                    plain(folder / f"plain-{n}", args.records, size)
                )
                figures.setdefault("bare", []).append(
                    bare(folder / f"bare-{n}", in_process, args.records, size)
                )
                for name, signer in signers.items():
                    for concurrency in (1, 16):
                        n += 1
                        rate, syncs = journal(folder / f"j-{n}", signer, args.records, concurrency)
                        key = f"journal x{concurrency} {name}"
                        figures.setdefault(key, []).append(rate)
                        fsyncs.setdefault(key, []).append(syncs)
        alone = statistics.median(signature_cost(in_process, False) for _ in range(3))
        crowded = statistics.median(signature_cost(in_process, True) for _ in range(3))
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(
        f"file system: {filesystem(args.dir)}; entry size {size} bytes; "
        f"{args.records} records x {args.rounds} rounds (medians); {os.cpu_count()} CPUs"
    )
    for name, value in median.items():
        note = f"  ({statistics.median(fsyncs[name]):.0f} fsyncs)" if name in fsyncs else ""
        print(f"  {name:24} {value:8.0f} records/s{note}")
    ceiling = median["bare"] / median["plain"]
    print(f"  bare / plain                      = {ceiling:.2f}  (the ceiling one at a time)")
    for name in signers:
        one, many = median[f"journal x1 {name}"], median[f"journal x16 {name}"]
        print(
            f"  journal x1 / plain, {name:11}   = {one / median['plain']:.2f}  "
            f"(target >= {TARGET_ONE}: {_verdict(one / median['plain'], TARGET_ONE)}; "
            f"{one / median['bare']:.2f} of the ceiling)"
        )
        print(
            f"  journal x16 / x1, {name:11}     = {many / one:.2f}  "
            f"(target >= {TARGET_MANY:.0f}: {_verdict(many / one, TARGET_MANY)})"
        )
        print(f"  journal x16 / plain, {name:11}  = {many / median['plain']:.2f}")
    print(
        f"  one Ed25519 signature in a thread: {alone:.0f} us alone, {crowded:.0f} us next to "
        "a busy Python thread (the GIL; why in-process signing scales poorly)"
    )


if __name__ == "__main__":
    main()
