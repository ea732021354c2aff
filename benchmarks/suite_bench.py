"""How long ``seamspec run`` takes against the reference, and how close that is to its limit.

    python benchmarks/suite_bench.py [--rounds 7] [-k PATTERN] [--quick] [--output PATH]

Each round runs, in a fresh process each time and in an order that rotates from round
to round: the default run (scenarios side by side, ``seamspec run -q``), the same run one
scenario at a time (``-j 1``), and a start-up probe (``-k`` one instant scenario: import,
loading every scenario file, one scenario). The limits are measured in the same round:

- **start-up + longest scenario**: a run that overlaps everything still pays its start-up
  and waits for its longest scenario (from the default run's JSON report). ``default /
  (start-up + longest)`` is 1.0 at that floor.
- **deliberate waits**: the time the scenarios that let a limit run out on purpose (a
  hang cut off by a time limit) take one after another, from the ``-j 1`` run's report.
  ``default / deliberate waits`` below 1 means the whole suite costs less than its waits
  alone would one at a time.

Every figure is the median over rounds of the per-round value, with its interquartile
range; a noisy neighbour spoils a round, not a figure. The target (issue 15): the default
run takes at most 5 s on 2 cores. These are measurements, not tests: nothing here fails a
build, except a run that does not conform (then the figures would mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _record

from seamspec._cmd_run import SIDE_BY_SIDE
from seamspec._cmd_run import select as select_scenarios
from seamspec.conformance import load_scenarios
from seamspec.conformance._core.schedule import expected_wait

RUN = [sys.executable, "-m", "seamspec", "run", "-q"]
#: The start-up probe's one scenario: instant, and needs no optional feature.
PROBE = "woc-none-empty-chain"
#: --quick: one round of one scenario that waits on a limit.
QUICK = ["--rounds", "1", "-k", "woc-slow-bounded-healthy"]
TARGET = 5.0


def _run(extra: list[str], report: Path) -> tuple[float, dict[str, Any]]:
    command = [*RUN, *extra, "--report-json", str(report)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[2:])} did not conform (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return elapsed, data


def one_round(index: int, select: list[str], waiting: set[str], tmp: Path) -> dict[str, float]:
    """One round's figures; the three runs rotate their order from round to round."""
    runs = [
        ("default", select),
        ("one at a time", [*select, "-j", "1"]),
        ("start-up", ["-k", PROBE]),
    ]
    shift = index % len(runs)
    wall: dict[str, float] = {}
    reports: dict[str, dict[str, Any]] = {}
    for name, extra in runs[shift:] + runs[:shift]:
        wall[name], reports[name] = _run(extra, tmp / "report.json")
    durations = [r["duration"] for r in reports["default"]["results"]]
    waits = sum(
        r["duration"] for r in reports["one at a time"]["results"] if r["scenario"] in waiting
    )
    figures = {
        "default": wall["default"],
        "one at a time": wall["one at a time"],
        "start-up": wall["start-up"],
        "longest": max(durations),
        "waits": waits,
    }
    figures["default / floor"] = figures["default"] / (figures["start-up"] + figures["longest"])
    figures["default / waits"] = figures["default"] / waits if waits else float("nan")
    figures["one at a time / default"] = figures["one at a time"] / figures["default"]
    return figures


def _spread(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.2f}-{values[0]:.2f}"
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return f"{low:.2f}-{high:.2f}"


LINES = (
    ("default", "s", f"default run ({SIDE_BY_SIDE} at a time)"),
    ("one at a time", "s", "-j 1 (one at a time)"),
    ("start-up", "s", f"start-up (-k {PROBE})"),
    ("longest", "s", "longest scenario"),
    ("waits", "s", "deliberate waits, one at a time"),
    ("default / floor", "", "default / (start-up + longest)"),
    ("default / waits", "", "default / deliberate waits"),
    ("one at a time / default", "", "-j 1 / default"),
)


def _load() -> str:
    """The machine's load average: what else was running shows in every figure."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("-k", dest="pattern", help="only the scenarios -k selects")
    args = parser.parse_args()
    scenarios = load_scenarios()
    select = ["-k", args.pattern] if args.pattern else []
    chosen = select_scenarios(scenarios, None, args.pattern)
    waiting = {s.id for s in chosen if expected_wait(s) > 0}
    what = f"-k {args.pattern}" if args.pattern else "the whole suite"
    print(
        f"seamspec run -q, {what} ({len(chosen)} scenarios, {len(waiting)} of them "
        f"waiting on a limit) against the reference (asyncio), a fresh process each "
        f"time; {args.rounds} round(s), the runs of a round in rotating order; "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    before = _load()
    per_round: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as tmp:
        for index in range(args.rounds):
            figures = one_round(index, select, waiting, Path(tmp))
            per_round.append(figures)
            print(
                f"round {index + 1}: default {figures['default']:.2f} s, -j 1 "
                f"{figures['one at a time']:.2f} s, start-up {figures['start-up']:.2f} s; "
                f"longest scenario {figures['longest']:.2f} s, deliberate waits "
                f"{figures['waits']:.2f} s",
                flush=True,
            )
    print(f"load average before and after: {before}, {_load()} (1, 5, 15 min)")
    print(f"over {args.rounds} round(s), median (IQR) of the per-round figures:")
    for key, unit, label in LINES:
        values = [r[key] for r in per_round]
        median = statistics.median(values)
        note = ""
        if key == "default":
            note = f"; target <= {TARGET:g} s: {'met' if median <= TARGET else 'NOT met'}"
        elif key == "default / floor":
            note = "; 1.0: start-up plus the longest scenario, nothing more"
        shown = f"{median:.2f} {unit}".rstrip()
        print(f"  {label:34} {shown:8}  (IQR {_spread(values)}{note})")
    return 0


if __name__ == "__main__":
    sys.exit(_record.run(main, __file__, QUICK))
