"""No flake: the whole suite again and again, alone and beside a second run, all green.

    python benchmarks/flake_check.py [--runs 20] [-k PATTERN] [--quick] [--output PATH]

First ``--runs`` runs of ``seamspec run -q`` (the default: scenarios side by side) one
after another; then as many again while a second ``seamspec run`` keeps running beside
them (restarted whenever it finishes), so that every run of the second batch shares the
2 CPUs with a whole other suite. A run is green when it exits 0 and every scenario passed
(the reference skips none); the second suite's runs are counted too. A scenario that
passes alone but fails under load is racing something: a bug (docs/scenarios.md, "Time
limits"). Exit code 1 if any run was not green, with the scenarios that were not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import _record

from seamspec._cmd_run import select as select_scenarios
from seamspec.conformance import load_scenarios

RUN = [sys.executable, "-m", "seamspec", "run", "-q"]
#: --quick: one run per batch of one scenario that waits on a limit.
QUICK = ["--runs", "1", "-k", "woc-slow-bounded-healthy"]


class Tally:
    """Green runs, wall times and the scenarios that did not pass, over several runs."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.green = 0
        self.runs = 0
        self.walls: list[float] = []
        self.bad: Counter[str] = Counter()
        self.lock = threading.Lock()

    def one(self, select: list[str], report: Path) -> None:
        started = time.perf_counter()
        done = subprocess.run(
            [*RUN, *select, "--report-json", str(report)],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        passed, not_passed = 0, []
        if report.exists():
            data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
            for r in data["results"]:
                if r["status"] == "pass":
                    passed += 1
                else:
                    first = (r["detail"].strip().splitlines() or [""])[0]
                    not_passed.append(f"{r['scenario']} ({r['status']}: {first[:120]})")
            report.unlink()
        else:
            not_passed.append(f"no report (exit {done.returncode}): {done.stderr[-300:]}")
        with self.lock:
            self.runs += 1
            self.walls.append(wall)
            if done.returncode == 0 and passed == self.expected and not not_passed:
                self.green += 1
            self.bad.update(not_passed or ([] if done.returncode == 0 else ["exit code"]))

    def line(self, label: str) -> str:
        walls = self.walls or [0.0]
        return (
            f"{label}: {self.green}/{self.runs} green; wall median "
            f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f})"
        )


def _load() -> str:
    """The machine's load average: what else was running shows in every figure."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("-k", dest="pattern", help="only the scenarios -k selects")
    args = parser.parse_args()
    runs = args.runs
    select = ["-k", args.pattern] if args.pattern else []
    expected = len(select_scenarios(load_scenarios(), None, args.pattern))
    what = f"-k {args.pattern}" if args.pattern else "the whole suite"
    print(f"seamspec run -q, {what} ({expected} scenarios), {runs} run(s) per batch")
    before = _load()
    with tempfile.TemporaryDirectory(prefix="flake-check-") as tmp:
        folder = Path(tmp)
        alone = Tally(expected)
        for n in range(runs):
            alone.one(select, folder / f"alone-{n}.json")
        print(alone.line("alone, one after another"), flush=True)
        beside, second = Tally(expected), Tally(expected)
        finished = threading.Event()

        def keep_running() -> None:
            n = 0
            while not finished.is_set():
                second.one(select, folder / f"second-{n}.json")
                n += 1

        neighbour = threading.Thread(target=keep_running, daemon=True)
        neighbour.start()
        time.sleep(0.5)  # let the second suite get going before the first measured run
        for n in range(runs):
            beside.one(select, folder / f"beside-{n}.json")
        finished.set()
        neighbour.join()
    print(beside.line("beside a second run"), flush=True)
    print(second.line("the second run itself"), flush=True)
    print(f"load average before and after: {before}, {_load()} (1, 5, 15 min)")
    total = alone.green + beside.green + second.green
    count = alone.runs + beside.runs + second.runs
    print(f"{total}/{count} runs green")
    bad = alone.bad + beside.bad + second.bad
    for what_failed, times in bad.most_common():
        print(f"  not green {times}x: {what_failed}")
    return 0 if total == count else 1


if __name__ == "__main__":
    sys.exit(_record.run(main, __file__, QUICK))
