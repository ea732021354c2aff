"""What live observation costs: the reference shell runner, measured side by side.

    python benchmarks/soo_bench.py [--runs 5] [--mib 256]

Four figures, each the median of ``--runs`` alternating runs, printed with its target:

- throughput: a child writes ``--mib`` MiB to stdout; the runner with an observer
  attached vs a plain read of the same child's pipe into nowhere (target ratio >= 0.7);
- no stall: the runner's wall time for the same child, with an observer that
  sleeps 50 ms per callback vs no observer (target ratio <= 1.05);
- latency: from the child's write to the start of ``on_output`` (monotonic clock, which
  Linux shares between processes), p50 and p99, idle machine (target p99 <= 5 ms);
- memory: an observer blocked forever while the child writes 1 GiB; the peak resident
  size grows by about two budgets (one per stream) plus a constant, not by the output.

These are measurements, not tests: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio

from seamspec.reference import ShellOutputStream, ShellRunner
from seamspec.reference._shell_output.runner import PIPE_SIZE

EMITTER = str(Path(__file__).resolve().parents[1] / "reference" / "_shell_output" / "emitter.py")
MIB = 1024 * 1024


def flood(mib: int) -> list[str]:
    script = {"steps": [{"flood": "stdout", "bytes": mib * MIB}]}
    return [sys.executable, "-I", EMITTER, json.dumps(script)]


class Counter:
    def __init__(self) -> None:
        self.bytes = 0

    def on_output(self, invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        self.bytes += len(chunk)


class Sleeper:
    def on_output(self, invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        time.sleep(0.05)


def plain_read(argv: list[str]) -> float:
    t0 = time.perf_counter()
    # the same pipe size as the runner asks for, so the ratio is the cost of observing
    child = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert child.stdout is not None
    fcntl.fcntl(child.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    fd = child.stdout.fileno()
    while os.read(fd, PIPE_SIZE):
        pass
    child.wait()
    child.stdout.close()
    return time.perf_counter() - t0


def through_runner(argv: list[str], observer: object | None, budget: int | None = None) -> float:
    async def main() -> float:
        runner = ShellRunner(output_cap=MIB, live_budget=budget)
        t0 = time.perf_counter()
        result = await runner.run(argv, observer=observer)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - t0
        assert result.exit_code == 0, result
        runner.wait_idle(60)
        return elapsed

    return anyio.run(main)


def throughput(runs: int, mib: int) -> str:
    argv = flood(mib)
    plain, observed = [], []
    for _ in range(runs):
        plain.append(plain_read(argv))
        # the budget is the whole output, so the observer really receives every byte
        observed.append(through_runner(argv, Counter(), budget=mib * MIB))
    p, o = statistics.median(plain), statistics.median(observed)
    ratio = p / o
    return (
        f"throughput, {mib} MiB: plain read {mib / p:.0f} MiB/s, runner + observer "
        f"{mib / o:.0f} MiB/s, ratio {ratio:.2f} (target >= 0.7: {'met' if ratio >= 0.7 else 'NOT met'})"
    )


def no_stall(runs: int, mib: int) -> str:
    argv = flood(mib)
    bare, slow = [], []
    through_runner(argv, None)  # warm up the page cache and the interpreter
    for _ in range(runs):
        bare.append(through_runner(argv, None))
        slow.append(through_runner(argv, Sleeper()))
    b, s = statistics.median(bare), statistics.median(slow)
    ratio = s / b
    return (
        f"no stall, {mib} MiB: no observer {b * 1000:.0f} ms, observer sleeping 50 ms per callback "
        f"{s * 1000:.0f} ms, ratio {ratio:.2f} (target <= 1.05: {'met' if ratio <= 1.05 else 'NOT met'})"
    )


CLOCK_CHILD = (
    "import os, time\n"
    "for _ in range(300):\n"
    "    os.write(1, b'%d\\n' % time.monotonic_ns())\n"
    "    time.sleep(0.005)\n"
)


def latency() -> str:
    delays: list[float] = []

    def on_output(invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        now = time.monotonic_ns()
        for line in chunk.split():
            delays.append((now - int(line)) / 1e6)

    async def main() -> None:
        runner = ShellRunner()
        await runner.run([sys.executable, "-I", "-c", CLOCK_CHILD], observer=on_output)
        runner.wait_idle(10)

    anyio.run(main)
    delays.sort()
    p50, p99 = delays[len(delays) // 2], delays[int(len(delays) * 0.99)]
    return (
        f"latency, {len(delays)} writes: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"(target p99 <= 5 ms: {'met' if p99 <= 5 else 'NOT met'})"
    )


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory_probe() -> None:
    """Run in a fresh process: resident size sampled during a 1 GiB child, observer stuck.

    The lifetime peak (``ru_maxrss``) would hide the figure behind import-time peaks, so a
    sampler thread reads the current resident size every millisecond instead.
    """
    gate, done = threading.Event(), threading.Event()
    peak = [0]

    def stuck(invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        gate.wait()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_kib())
            time.sleep(0.001)

    async def main() -> None:
        runner = ShellRunner()  # cap = budget = 1 MiB per stream
        await runner.run(flood(1), observer=lambda i, s, c: None)  # warm up threads, imports
        runner.wait_idle(10)
        before = _rss_kib()
        sampler = threading.Thread(target=sample)
        sampler.start()
        result = await runner.run(flood(1024), observer=stuck)
        done.set()
        sampler.join()
        gate.set()
        runner.wait_idle(10)
        assert result.stdout_truncated
        print(json.dumps({"before_kib": before, "peak_kib": peak[0]}))

    anyio.run(main)


def memory() -> str:
    probe = subprocess.run(
        [sys.executable, __file__, "--memory-probe"], capture_output=True, text=True, check=True
    )
    data = json.loads(probe.stdout)
    grew = (data["peak_kib"] - data["before_kib"]) / 1024
    return (
        f"memory, 1 GiB written, observer blocked, budget and cap 1 MiB per stream: peak RSS "
        f"grew {grew:.1f} MiB (bound: 2 x 1 MiB queued + 1 MiB result + a constant; "
        f"the output was 1024 MiB)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe:
        memory_probe()
        return 0
    print(f"seamspec shell-output benchmarks, median of {args.runs} runs", flush=True)
    for line in (
        throughput(args.runs, args.mib),
        no_stall(args.runs, args.mib),
        latency(),
        memory(),
    ):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
