"""Dispatch-recorder journal throughput: signed, chained, fsync'd records per second.

Every figure is measured side by side, in short blocks (``--records``, 40 by default)
that alternate round by round; every ratio is taken within a round, and a run reports the
median of its rounds' ratios with their interquartile range. A burst of disk contention
then spoils one round's ratio, not a figure (with blocks of 800 records, one such burst
could flip a ratio). ``--runs`` repeats the whole measurement; the last lines give the
median over runs and the range of the runs' medians.

- ``plain``: append a line of the same size as a journal entry and fsync it, one at a
  time: the floor any durable journal pays.
- ``bare``: what a signed journal must do per entry, one at a time, in one thread, with
  no journal around it: encode the mutation as its entry's signed bytes, hash them for
  the chain, sign them with Ed25519, append the line, fsync. No journal does better one at
  a time; it is the limit for the first target.
- ``hand-off``: ``bare``'s work moved to one thread and awaited from an event loop, one
  record at a time (a queue to the thread, ``call_soon_threadsafe`` back): the least a
  journal pays once its event loop must never wait on the disk. ``hand-off / bare`` is
  what those two thread hops cost on this machine, whatever the journal's design.
- ``journal x1`` and ``journal x16``: ``JournalRecorder.record`` one at a time, and with
  16 records in flight (group commit), for each signer: ``in-process`` (``KeySigner``,
  signing in the journal's writer thread) and ``process`` (``SignerProcess``, a signing
  service in a child process, sent whole batches).

Targets (issue 15): ``journal x1 / bare >= 0.85`` and ``journal x16 / plain >= 1.5``.
Besides records/s, each block's CPU time and context switches per record are shown (this
process's: the signing service's own CPU is not in them): they change little with the
machine's load, where records/s change a lot.

    python benchmarks/dr_bench.py [--records 40] [--rounds 40] [--runs 5] [--dir PATH]
    python benchmarks/dr_bench.py --quick      # a tiny run; see benchmarks/_record.py

``--dir`` should be on the file system you care about: on tmpfs fsync costs nothing and
the ratios mean little.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
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
from seamspec.reference._dispatch_recorder.journal_format import (
    encode_entry,
    entry_hash,
    genesis_hash,
    signed_bytes,
)

TARGET_ONE, TARGET_MANY = 0.85, 1.5


def _mutation(i: int) -> DispatchMutation:
    return DispatchMutation(
        f"call-{i:06d}", "shell", InputRewrite('{"cmd":"ls"}', '{"cmd":"ls -1"}')
    )


class Block:
    """One timed block: records/s, and this process's CPU µs and context switches per record."""

    def __init__(self, records: int) -> None:
        self.records = records
        self.rate = self.cpu = self.switches = 0.0

    def __enter__(self) -> Block:
        self._usage = resource.getrusage(resource.RUSAGE_SELF)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self._start
        usage = resource.getrusage(resource.RUSAGE_SELF)
        before = self._usage
        self.rate = self.records / elapsed
        cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
        self.cpu = cpu / self.records * 1e6
        switches = usage.ru_nvcsw + usage.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw
        self.switches = switches / self.records


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


def plain(path: Path, records: int, size: int) -> Block:
    line = b"x" * (size - 1) + b"\n"
    fd = _created(path)
    try:
        with Block(records) as block:
            for _ in range(records):
                os.write(fd, line)
                os.fsync(fd)
        return block
    finally:
        os.close(fd)


class _Chain:
    """The per-entry work of a signed journal, with nothing around it."""

    def __init__(self, signer: KeySigner) -> None:
        self.signer = signer
        self.seq = 0
        self.prev = genesis_hash(signer.public_key)

    def line(self, i: int) -> bytes:
        signed = signed_bytes(self.seq, self.prev, _mutation(i).to_json())
        self.seq, self.prev = self.seq + 1, entry_hash(signed)
        return encode_entry(signed, self.signer.sign(signed))


def bare(path: Path, signer: KeySigner, records: int) -> Block:
    """Encode, hash, sign, append, fsync: the least a signed journal does per entry."""
    chain = _Chain(signer)
    fd = _created(path)
    try:
        with Block(records) as block:
            for i in range(records):
                os.write(fd, chain.line(i))
                os.fsync(fd)
        return block
    finally:
        os.close(fd)


def hand_off(path: Path, signer: KeySigner, records: int) -> Block:
    """``bare``'s work in one thread, each record awaited from an asyncio event loop."""
    chain = _Chain(signer)
    fd = _created(path)
    jobs: queue.SimpleQueue[tuple[int, Callable[[], object]] | None] = queue.SimpleQueue()

    def writer() -> None:
        while (job := jobs.get()) is not None:
            i, done = job
            os.write(fd, chain.line(i))
            os.fsync(fd)
            done()

    async def run() -> Block:
        loop = asyncio.get_running_loop()
        with Block(records) as block:
            for i in range(records):
                future: asyncio.Future[None] = loop.create_future()
                jobs.put((i, functools.partial(loop.call_soon_threadsafe, future.set_result, None)))
                await future
        return block

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        return asyncio.run(run())
    finally:
        jobs.put(None)
        thread.join()
        os.close(fd)


def journal(path: Path, signer: Signer, records: int, concurrency: int) -> tuple[Block, int | None]:
    async def run() -> tuple[Block, int | None]:
        async with JournalRecorder.open(path, signer) as recorder:
            per_task = records // concurrency

            async def worker(offset: int) -> None:
                for i in range(per_task):
                    await recorder.record(_mutation(offset + i))

            with Block(per_task * concurrency) as block:
                async with anyio.create_task_group() as group:
                    for task in range(concurrency):
                        group.start_soon(worker, task * per_task)
            return block, recorder.fsyncs

    return anyio.run(run)


def signing_holds_the_gil(signer: KeySigner, count: int = 20) -> tuple[float, float]:
    """Milliseconds for ``count`` signatures, and for ``count`` 0.2 ms sleeps, next to a
    thread that runs pure Python, with a 50 ms switch interval. A call that releases the
    GIL hands it to that thread and waits to get it back; one that holds it does not."""
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            pass

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.05)
    neighbour = threading.Thread(target=busy)
    neighbour.start()
    try:
        time.sleep(0.1)  # the neighbour holds the GIL now
        start = time.perf_counter()
        for _ in range(count):
            signer.sign(b"x" * 300)
        signing = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(count):
            time.sleep(0.0002)
        sleeping = time.perf_counter() - start
    finally:
        stop.set()
        neighbour.join()
        sys.setswitchinterval(interval)
    return signing * 1e3, sleeping * 1e3


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


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


Blocks = dict[str, list[Block]]
Step = Callable[[], tuple[Block, "int | None"]]


def _steps(
    prefix: Path, signers: dict[str, Signer], in_process: KeySigner, records: int, size: int
) -> list[tuple[str, Step]]:
    """One round's blocks, each a call that returns its block and its fsync count."""

    def unsynced(block: Block) -> tuple[Block, int | None]:
        return block, None

    steps: list[tuple[str, Step]] = [
        ("plain", lambda: unsynced(plain(Path(f"{prefix}-plain"), records, size))),
        ("bare", lambda: unsynced(bare(Path(f"{prefix}-bare"), in_process, records))),
        ("hand-off", lambda: unsynced(hand_off(Path(f"{prefix}-hand"), in_process, records))),
    ]
    for name, signer in signers.items():
        for concurrency in (1, 16):
            path = Path(f"{prefix}-j{concurrency}-{name}")
            steps.append(
                (
                    f"journal x{concurrency} {name}",
                    functools.partial(journal, path, signer, records, concurrency),
                )
            )
    return steps


def one_run(
    folder: Path, signers: dict[str, Signer], size: int, args: argparse.Namespace, run: int
) -> tuple[Blocks, dict[str, list[float]], dict[str, list[int]]]:
    """``--rounds`` rounds of short blocks: per-round blocks, ratios and fsync counts."""
    in_process = signers["in-process"]
    assert isinstance(in_process, KeySigner)
    blocks: Blocks = {}
    fsyncs: dict[str, list[int]] = {}
    steps: list[tuple[str, Step]] = []
    for n in range(args.rounds):
        tag = f"{run}-{n}"
        steps = _steps(folder / tag, signers, in_process, args.records, size)
        # The order rotates from round to round: what ran just before a block (and the
        # disk's state it left) must not always favour the same side of a ratio.
        shift = n % len(steps)
        for key, step in steps[shift:] + steps[:shift]:
            block, syncs = step()
            blocks.setdefault(key, []).append(block)
            if syncs is not None:
                fsyncs.setdefault(key, []).append(syncs)
    blocks = {key: blocks[key] for key, _ in steps}  # print in the steps' order
    rates = {name: [b.rate for b in values] for name, values in blocks.items()}
    ratios: dict[str, list[float]] = {
        "bare / plain": _per_round(rates["bare"], rates["plain"]),
        "hand-off / bare (two thread hops)": _per_round(rates["hand-off"], rates["bare"]),
    }
    for name in signers:
        one, many = rates[f"journal x1 {name}"], rates[f"journal x16 {name}"]
        ratios[f"journal x1 / bare, {name}"] = _per_round(one, rates["bare"])
        ratios[f"journal x1 / hand-off, {name}"] = _per_round(one, rates["hand-off"])
        ratios[f"journal x16 / plain, {name}"] = _per_round(many, rates["plain"])
        ratios[f"journal x16 / x1, {name}"] = _per_round(many, one)
    return blocks, ratios, fsyncs


def _per_round(top: list[float], bottom: list[float]) -> list[float]:
    return [a / b for a, b in zip(top, bottom, strict=True)]


TARGETS = {"journal x1 / bare": TARGET_ONE, "journal x16 / plain": TARGET_MANY}


def _target(name: str) -> float | None:
    return next((value for prefix, value in TARGETS.items() if name.startswith(prefix)), None)


def _print_run(
    run: int, blocks: Blocks, ratios: dict[str, list[float]], fsyncs: dict[str, list[int]]
) -> None:
    print(
        f"run {run}: median of rounds: records/s, CPU us and context switches per record",
        flush=True,
    )
    for name, kept in blocks.items():
        syncs = f"  {statistics.median(fsyncs[name]):3.0f} fsyncs" if name in fsyncs else ""
        print(
            f"  {name:22} {statistics.median(b.rate for b in kept):7.0f}/s"
            f"  {statistics.median(b.cpu for b in kept):5.0f} us"
            f"  {statistics.median(b.switches for b in kept):5.1f} csw{syncs}"
        )
    print(f"run {run}: per-round ratios, median (IQR)", flush=True)
    for name, values in ratios.items():
        q1, median, q3 = _quartiles(values)
        print(f"  {name:36} {median:5.2f}  (IQR {q1:.2f}-{q3:.2f})", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=40, help="records per block")
    parser.add_argument("--rounds", type=int, default=40, help="rounds per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    if args.records < 16 or args.rounds < 2 or args.runs < 1:
        parser.error("--records must be at least 16, --rounds at least 2, --runs at least 1")
    medians: dict[str, list[float]] = {}
    fsync_us: list[float] = []
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
                f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            for run in range(1, args.runs + 1):
                blocks, ratios, fsyncs = one_run(folder, signers, size, args, run)
                _print_run(run, blocks, ratios, fsyncs)
                for name, values in ratios.items():
                    medians.setdefault(name, []).append(_quartiles(values)[1])
                fsync_us.append(1e6 / statistics.median(b.rate for b in blocks["plain"]))
                for path in folder.iterdir():
                    if path.name not in ("k", "k.pub"):
                        path.unlink()
        signing, sleeping = signing_holds_the_gil(in_process)
    print(f"over {args.runs} runs (median of the runs' medians, range of the runs' medians):")
    for name, values in medians.items():
        target = _target(name)
        median = statistics.median(values)
        verdict = (
            ""
            if target is None
            else f"; target >= {target:g}: {'met' if median >= target else 'NOT met'}"
        )
        print(f"  {name:36} {median:5.2f}  (runs {min(values):.2f}-{max(values):.2f}{verdict})")
    print(
        f"  plain append + fsync: {statistics.median(fsync_us):.0f} us per record "
        f"(runs {min(fsync_us):.0f}-{max(fsync_us):.0f})"
    )
    print(
        f"  signing holds the GIL: next to a busy Python thread (switch interval 50 ms), "
        f"20 signatures took {signing:.0f} ms, 20 GIL-releasing 0.2 ms sleeps {sleeping:.0f} ms"
    )
    return 0


#: --quick: one run of two rounds of small blocks.
QUICK = ["--runs", "1", "--rounds", "2", "--records", "16"]

if __name__ == "__main__":
    sys.exit(_record.run(main, __file__, QUICK))
