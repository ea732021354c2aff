"""Dispatch-recorder journal throughput: signed, chained, fsync'd records per second.

Every figure is measured side by side, in short blocks (``--records``, 48 by default)
that alternate round by round, and every ratio is taken within a round and then
summarised as the median of the per-round ratios with its interquartile range. A burst
of disk contention then spoils one round's ratio, not a whole figure (with blocks of 800
records, one such burst could flip a ratio). ``--runs`` repeats the whole measurement;
the last lines give the median over runs and the range of the runs' medians.

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

    python benchmarks/dr_bench.py [--records 48] [--rounds 40] [--runs 5] [--dir PATH]
    python benchmarks/dr_bench.py --quick      # a tiny run; see benchmarks/_record.py

``--dir`` should be on the file system you care about: on tmpfs fsync costs nothing and
the ratios mean little.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _record
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


def _created(path: Path) -> int:
    """Create ``path`` and make its name durable before the clock starts, as
    ``JournalRecorder.open`` does: with short blocks, the first fsync of a file whose
    creation is not yet durable would otherwise weigh on the plain figures alone."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return fd


def plain(path: Path, records: int, size: int) -> float:
    line = b"x" * (size - 1) + b"\n"
    fd = _created(path)
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
    fd = _created(path)
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


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def one_run(
    folder: Path, signers: dict[str, Signer], size: int, args: argparse.Namespace, run: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[int]]]:
    """``--rounds`` rounds of short blocks: per-round rates, ratios and fsync counts."""
    in_process = signers["in-process"]
    assert isinstance(in_process, KeySigner)
    rates: dict[str, list[float]] = {}
    fsyncs: dict[str, list[int]] = {}
    for n in range(args.rounds):
        tag = f"{run}-{n}"
        rates.setdefault("plain", []).append(plain(folder / f"plain-{tag}", args.records, size))
        rates.setdefault("bare", []).append(
            bare(folder / f"bare-{tag}", in_process, args.records, size)
        )
        for name, signer in signers.items():
            for concurrency in (1, 16):
                path = folder / f"j{concurrency}-{name}-{tag}"
                rate, syncs = journal(path, signer, args.records, concurrency)
                key = f"journal x{concurrency} {name}"
                rates.setdefault(key, []).append(rate)
                fsyncs.setdefault(key, []).append(syncs)
    ratios: dict[str, list[float]] = {
        "bare / plain (the ceiling one at a time)": _per_round(rates["bare"], rates["plain"])
    }
    for name in signers:
        one, many = rates[f"journal x1 {name}"], rates[f"journal x16 {name}"]
        ratios[f"journal x1 / plain, {name}"] = _per_round(one, rates["plain"])
        ratios[f"journal x1 / bare, {name}"] = _per_round(one, rates["bare"])
        ratios[f"journal x16 / x1, {name}"] = _per_round(many, one)
        ratios[f"journal x16 / plain, {name}"] = _per_round(many, rates["plain"])
    return rates, ratios, fsyncs


def _per_round(top: list[float], bottom: list[float]) -> list[float]:
    return [a / b for a, b in zip(top, bottom, strict=True)]


TARGETS = {"journal x1 / plain": TARGET_ONE, "journal x16 / x1": TARGET_MANY}


def _target(name: str) -> float | None:
    return next((value for prefix, value in TARGETS.items() if name.startswith(prefix)), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=48, help="records per block")
    parser.add_argument("--rounds", type=int, default=40, help="rounds per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    medians: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="dr-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        generate_keypair(folder / "k", folder / "k.pub")
        in_process = KeySigner.from_file(folder / "k")
        with SignerProcess(folder / "k") as service:
            signers: dict[str, Signer] = {"in-process": in_process, "process": service}
            size = entry_size(folder, in_process)
            print(
                f"file system: {filesystem(args.dir)}; entry size {size} bytes; blocks of "
                f"{args.records} records, {args.rounds} rounds per run, {args.runs} runs; "
                f"{os.cpu_count()} CPUs",
                flush=True,
            )
            for run in range(1, args.runs + 1):
                rates, ratios, fsyncs = one_run(folder, signers, size, args, run)
                print(f"run {run}: records/s (median of rounds), fsyncs per block", flush=True)
                for name, values in rates.items():
                    syncs = (
                        f"  ({statistics.median(fsyncs[name]):.0f} fsyncs)"
                        if name in fsyncs
                        else ""
                    )
                    print(f"  {name:24} {statistics.median(values):8.0f}{syncs}")
                print(f"run {run}: per-round ratios, median (IQR)", flush=True)
                for name, values in ratios.items():
                    q1, median, q3 = _quartiles(values)
                    medians.setdefault(name, []).append(median)
                    print(f"  {name:42} {median:5.2f}  (IQR {q1:.2f}-{q3:.2f})", flush=True)
                for path in folder.iterdir():
                    if path.name not in ("k", "k.pub"):
                        path.unlink()
        alone = statistics.median(signature_cost(in_process, False) for _ in range(3))
        crowded = statistics.median(signature_cost(in_process, True) for _ in range(3))
    print(f"over {args.runs} runs (median of the runs' medians, range of the runs' medians):")
    for name, values in medians.items():
        target = _target(name)
        verdict = (
            ""
            if target is None
            else f"; target >= {target:g}: {_verdict(statistics.median(values), target)}"
        )
        print(
            f"  {name:42} {statistics.median(values):5.2f}  "
            f"(runs {min(values):.2f}-{max(values):.2f}{verdict})"
        )
    print(
        f"  one Ed25519 signature in a thread: {alone:.0f} us alone, {crowded:.0f} us next to "
        "a busy Python thread (the GIL; why in-process signing scales poorly)"
    )


#: --quick: one run of two rounds of small blocks.
QUICK = ["--runs", "1", "--rounds", "2", "--records", "8"]

if __name__ == "__main__":
    sys.exit(_record.run(main, __file__, QUICK))
