"""What live observation costs: the reference shell runner, measured side by side.

    python benchmarks/soo_bench.py [--runs 5] [--rounds 24] [--mib 64]
    python benchmarks/soo_bench.py --quick     # a tiny run; see benchmarks/_record.py

Every figure is a ratio against its own limit, measured in the same run: each round runs
the compared commands one after the other (short blocks, a few tens of milliseconds), the
round's ratio is taken, and a run reports the median of its rounds' ratios with their
interquartile range. ``--runs`` repeats the whole measurement; the last lines give the
median over runs and the range of the runs' medians. A noisy neighbour then hurts both
sides of a ratio alike, and one bad round moves nothing.

- throughput: a child (``dd``, which starts in a millisecond and writes 1 MiB blocks)
  writes ``--mib`` MiB; the runner with an observer that receives every byte (budget =
  the whole output) against a plain Python loop reading 64 KiB at a time from the same
  kind of pipe (1 MiB buffer, as the runner asks) into nowhere. Target >= 0.9. Beside
  it, a limit for any design the contract allows: the plain loop reading fresh ``bytes``
  of up to 1 MiB and handing each to a second thread that drops it.
- slow observer: the runner's wall time with an observer that sleeps 50 ms in every
  callback, and with one blocked until the command has returned, against no observer,
  at budgets from 64 KiB to the whole output. Target <= 1.1 at every budget.
- latency: from the child's write to the start of ``on_output``, p50 and p99.
- memory: in a fresh process, an observer blocked for the whole command (budget and cap
  1 MiB per stream): peak resident size (``VmHWM``) and memory mappings (``/proc/self/
  maps``) grown, for 150,000 short lines written one at a time and for 1 GiB of output
  in large writes. Target: at most 2 x budget queued + the 1 MiB result + a constant.

These are measurements, not tests: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import _record
import anyio

from seamspec.reference import ShellOutputStream, ShellRunner
from seamspec.reference._shell_output.runner import PIPE_SIZE

MIB = 1024 * 1024
PLAIN_READ = 64 * 1024


def flood(mib: int) -> list[str]:
    return ["dd", "if=/dev/zero", "bs=1M", f"count={mib}", "status=none"]


class Counter:
    def __init__(self) -> None:
        self.bytes = 0

    def on_output(self, invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        self.bytes += len(chunk)


class Held:
    """Sleeps ``delay`` seconds in every callback (forever if None) until released."""

    def __init__(self, delay: float | None) -> None:
        self.delay = delay
        self.released = threading.Event()

    def on_output(self, invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        self.released.wait(self.delay)


def plain_read(argv: list[str]) -> float:
    """The limit: read the child's pipe 64 KiB at a time, into nowhere."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert child.stdout is not None
    fd = child.stdout.fileno()
    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    while os.read(fd, PLAIN_READ):
        pass
    child.wait()
    child.stdout.close()
    return time.perf_counter() - t0


def plain_handoff(argv: list[str]) -> float:
    """A limit for observing every byte: the plain loop reading a fresh ``bytes`` of up to
    the pipe's size each time and handing it to a second thread, which drops it. That is
    the least a design pays whose observer gets bytes it may keep, on a thread that is
    not the draining one (the contract's two demands), with no budget, lock or runner.
    """
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert child.stdout is not None
    fd = child.stdout.fileno()
    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    handed: queue.SimpleQueue[bytes] = queue.SimpleQueue()

    def take() -> None:
        while handed.get():  # b"" ends it
            pass

    taker = threading.Thread(target=take)
    taker.start()
    while chunk := os.read(fd, PIPE_SIZE):
        handed.put(chunk)
    handed.put(b"")
    taker.join()
    child.wait()
    child.stdout.close()
    return time.perf_counter() - t0


def plain_keep(argv: list[str], keep: int) -> float:
    """The limit when ``keep`` bytes must be held: the plain loop, keeping what it reads.

    A blocked observer's queue must hold up to a budget per stream until it is
    delivered; holding bytes means fresh memory, and its page faults, in the parent.
    """
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert child.stdout is not None
    fd = child.stdout.fileno()
    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    kept: list[bytes] = []
    while chunk := os.read(fd, PLAIN_READ):
        if keep > 0:
            kept.append(chunk)
            keep -= len(chunk)
    child.wait()
    child.stdout.close()
    return time.perf_counter() - t0


async def through_runner(
    argv: list[str], observer: Counter | Held | None, budget: int | None = None
) -> float:
    runner = ShellRunner(output_cap=MIB, live_budget=budget)
    t0 = time.perf_counter()
    result = await runner.run(argv, observer=observer)
    elapsed = time.perf_counter() - t0
    assert result.exit_code == 0, result
    if isinstance(observer, Held):
        observer.released.set()  # the next round must not share the CPU with this one
    assert runner.wait_idle(60)
    if isinstance(observer, Counter) and budget is not None:
        assert observer.bytes == budget, (observer.bytes, budget)
    return elapsed


Block = Callable[[], "float | Awaitable[float]"]


def summary(ratios: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return median, q1, q3


async def rounds(count: int, limit: Block, others: dict[str, Block]) -> dict[str, list[float]]:
    """Per-round ratios ``limit time / other time`` (a throughput ratio) for each other."""
    out: dict[str, list[float]] = {name: [] for name in others}
    for _ in range(count):
        base = await _timed(limit)
        for name, block in others.items():
            out[name].append(base / await _timed(block))
    return out


async def _timed(block: Block) -> float:
    value = block()
    return value if isinstance(value, float) else await value


async def throughput(count: int, mib: int) -> dict[str, list[float]]:
    argv = flood(mib)
    return await rounds(
        count,
        lambda: plain_read(argv),
        {
            "runner + observer": lambda: through_runner(argv, Counter(), mib * MIB),
            "runner, no observer": lambda: through_runner(argv, None),
            "limit: 1 MiB reads to a thread": lambda: plain_handoff(argv),
        },
    )


BUDGETS = {"64 KiB": 64 * 1024, "1 MiB": MIB, "16 MiB": 16 * MIB}


async def slow_observer(count: int, mib: int) -> dict[str, list[float]]:
    """Per-round slowdowns: observed runner / unobserved runner, and the limits.

    The limits are the plain loop keeping the bytes a blocked observer's queue must hold
    (16 MiB, the whole output) over the same loop keeping nothing: what holding that much
    memory costs by itself, with no runner, no thread and no observer.
    """
    argv = flood(mib)
    budgets = {**BUDGETS, "whole": mib * MIB}
    out: dict[str, list[float]] = {}
    for _ in range(count):
        none = await through_runner(argv, None)
        for label, budget in budgets.items():
            for kind, delay in (("sleeping", 0.05), ("blocked", None)):
                took = await through_runner(argv, Held(delay), budget)
                out.setdefault(f"{kind:8} budget {label:6}", []).append(took / none)
        bare = plain_read(argv)
        for label in ("16 MiB", "whole"):
            took = plain_keep(argv, budgets[label])
            out.setdefault(f"limit: plain loop keeping {label}", []).append(took / bare)
    return out


CLOCK_CHILD = (
    "import os, time\n"
    "for _ in range(300):\n"
    "    os.write(1, b'%d\\n' % time.monotonic_ns())\n"
    "    time.sleep(0.005)\n"
)


async def latency() -> tuple[float, float]:
    delays: list[float] = []

    def on_output(invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        now = time.monotonic_ns()
        for line in chunk.split():
            delays.append((now - int(line)) / 1e6)

    runner = ShellRunner()
    await runner.run([sys.executable, "-I", "-c", CLOCK_CHILD], observer=on_output)
    runner.wait_idle(10)
    delays.sort()
    return delays[len(delays) // 2], delays[int(len(delays) * 0.99)]


#: 150,000 short lines, one write each, with a few microseconds between them so that
#: the draining thread (faster than the child) reads only a line or a few at a time.
LINES_CHILD = (
    "import os, time\n"
    "for i in range(150000):\n"
    "    os.write(1, b'line %06d\\n' % i)\n"
    "    end = time.perf_counter() + 5e-6\n"
    "    while time.perf_counter() < end:\n"
    "        pass\n"
)


def _proc_self() -> dict[str, int]:
    status = Path("/proc/self/status").read_text().splitlines()
    values = {
        key: int(rest.split()[0])
        for key, _, rest in (line.partition(":") for line in status)
        if key in ("VmRSS", "VmHWM")
    }
    values["maps"] = len(Path("/proc/self/maps").read_text().splitlines())
    return values


def memory_probe(case: str) -> None:
    """In a fresh process: one command with an observer blocked until it has returned."""
    argv = [sys.executable, "-I", "-c", LINES_CHILD] if case == "lines" else flood(1024)

    async def main() -> None:
        runner = ShellRunner()  # cap = budget = 1 MiB per stream
        held = Held(None)
        before = _proc_self()
        result = await runner.run(argv, observer=held)
        during = _proc_self()
        held.released.set()
        runner.wait_idle(30)
        assert result.exit_code == 0
        assert result.stdout_truncated
        grown = during["VmHWM"] - before["VmRSS"]
        print(json.dumps({"peak_kib": grown, "maps": during["maps"] - before["maps"]}))

    anyio.run(main)


def memory(case: str) -> dict[str, int]:
    probe = subprocess.run(
        [sys.executable, __file__, "--memory-probe", case],
        capture_output=True,
        text=True,
        check=True,
    )
    data: dict[str, int] = json.loads(probe.stdout)
    return data


def _line(name: str, ratios: list[float]) -> str:
    median, q1, q3 = summary(ratios)
    return f"  {name:32} {median:5.2f}  (IQR {q1:.2f}-{q3:.2f}, {len(ratios)} rounds)"


def _across(name: str, medians: list[float], target: str, met: bool) -> str:
    return (
        f"  {name:32} {statistics.median(medians):5.2f}  (runs {min(medians):.2f}-"
        f"{max(medians):.2f}; target {target}: {'met' if met else 'NOT met'})"
    )


async def bench(args: argparse.Namespace) -> None:
    mib, count = args.mib, args.rounds
    print(
        f"seamspec shell-output benchmarks: {args.runs} runs of {count} rounds, "
        f"{mib} MiB per command, {os.cpu_count()} CPUs",
        flush=True,
    )
    tput: dict[str, list[float]] = {}
    slow: dict[str, list[float]] = {}
    for run in range(1, args.runs + 1):
        print(f"run {run}: throughput / plain 64 KiB loop (higher is better)", flush=True)
        for name, ratios in (await throughput(count, mib)).items():
            print(_line(name, ratios), flush=True)
            tput.setdefault(name, []).append(summary(ratios)[0])
        print(
            f"run {run}: wall time / no observer; limits / plain loop (lower is better)",
            flush=True,
        )
        for name, ratios in (await slow_observer(max(count // 3, 4), mib)).items():
            print(_line(name, ratios), flush=True)
            slow.setdefault(name, []).append(summary(ratios)[0])
    print(f"over {args.runs} runs (median of the runs' medians):")
    for name, medians in tput.items():
        target = name == "runner + observer"
        met = statistics.median(medians) >= 0.9
        line = _across(f"throughput, {name}", medians, ">= 0.9", met)
        print(line if target else line.split("; target")[0] + ")")
    for name, medians in slow.items():
        if name.startswith("limit"):
            print(_across(name, medians, "none", False).replace("; target none: NOT met", ""))
        else:
            print(_across(name, medians, "<= 1.1", statistics.median(medians) <= 1.1))
    p50, p99 = await latency()
    print(
        f"latency, 300 writes 5 ms apart: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"(target p99 <= 5 ms: {'met' if p99 <= 5 else 'NOT met'})"
    )
    bound = 2 * 1024 + 1024  # 2 x budget queued + the 1 MiB result, in KiB
    for case, label in (("lines", "150,000 short lines"), ("flood", "1 GiB in 1 MiB writes")):
        data = memory(case)
        print(
            f"memory, {label}, observer blocked, budget and cap 1 MiB: peak RSS grew "
            f"{data['peak_kib'] / 1024:.1f} MiB, {data['maps']} more mappings "
            f"(bound: {bound // 1024} MiB + a constant: "
            f"{'met' if data['peak_kib'] <= bound + 2048 else 'NOT met'} with 2 MiB)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--memory-probe", choices=["lines", "flood"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe:
        memory_probe(args.memory_probe)
        return 0
    anyio.run(bench, args)
    return 0


#: --quick: one run of two rounds of 4 MiB commands.
QUICK = ["--runs", "1", "--rounds", "2", "--mib", "4"]

if __name__ == "__main__":
    # The memory probe is this script run in a fresh process: it prints data, not results.
    sys.exit(main() if "--memory-probe" in sys.argv else _record.run(main, __file__, QUICK))
