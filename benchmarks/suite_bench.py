"""Wall time of the whole suite against the reference: -j 1 against -j 2, side by side.

Runs alternate (1, 2, 1, 2, ...) so that a noisy neighbour hurts both equally; the
figures are medians. Usage: python benchmarks/suite_bench.py [--runs N] [--contract C]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _one(jobs: int, contracts: list[str]) -> float:
    command = [sys.executable, "-m", "seamspec", "run", "-q", "-j", str(jobs)]
    for contract in contracts:
        command += ["--contract", contract]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the suite did not pass (exit {done.returncode}):\n{done.stdout[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--contract", action="append", default=[])
    args = parser.parse_args()
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.runs):
        for jobs in (1, 2):
            times[jobs].append(_one(jobs, args.contract))
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"whole suite, {args.runs} runs each, medians (process start included):")
    print(f"  -j 1: {one:6.2f} s   (min {min(times[1]):.2f}, max {max(times[1]):.2f})")
    print(f"  -j 2: {two:6.2f} s   (min {min(times[2]):.2f}, max {max(times[2]):.2f})")
    print(f"  speed-up -j 2 over -j 1: {one / two:.2f}x   target: -j 1 under 20 s, -j 2 faster")


if __name__ == "__main__":
    main()
