"""How much the wire protocol costs: the whole suite in process vs through serve-reference.

Both sides run the same scenarios with the same reference implementation; the only
difference is the protocol (a child process, JSON lines both ways, the handshake and the
stop). Runs alternate so that machine noise hits both sides alike; medians are reported.

    python benchmarks/wire_bench.py [--runs 5] [--strict] [-k PATTERN]
    python benchmarks/wire_bench.py --quick    # a tiny run; see benchmarks/_record.py

Target: ratio (wire / in-process) <= 1.3.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import _record

from seamspec._cmd_run import select
from seamspec.conformance import Runner, Scenario, load_scenarios
from seamspec.conformance._implementations import reference_adapter
from seamspec.conformance._wire.client import WireAdapter

SERVE = [sys.executable, "-m", "seamspec", "serve-reference"]


def in_process(scenarios: list[Scenario]) -> tuple[float, dict[str, str]]:
    t0 = time.perf_counter()
    adapter = reference_adapter()
    try:
        result = Runner(adapter).run(scenarios)
    finally:
        adapter.close()
    return time.perf_counter() - t0, {r.scenario.id: r.status for r in result.results}


def over_the_wire(scenarios: list[Scenario], strict: bool) -> tuple[float, dict[str, str]]:
    """Child start, handshake, every scenario, stop: the full cost a user pays."""
    t0 = time.perf_counter()
    adapter = WireAdapter(SERVE, strict=strict)
    try:
        result = Runner(adapter, timeout=120).run(scenarios)
    finally:
        adapter.close()
    return time.perf_counter() - t0, {r.scenario.id: r.status for r in result.results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--strict", action="store_true", help="validate every message")
    parser.add_argument("-k", dest="pattern", help="only the scenarios -k selects")
    args = parser.parse_args()
    scenarios = select(load_scenarios(), None, args.pattern)
    local_times: list[float] = []
    wire_times: list[float] = []
    for run in range(args.runs):
        local, local_status = in_process(scenarios)
        wire, wire_status = over_the_wire(scenarios, args.strict)
        if local_status != wire_status:
            print("the two sides disagree on some verdicts: not a fair comparison", file=sys.stderr)
            return 1
        local_times.append(local)
        wire_times.append(wire)
        print(f"run {run + 1}: in-process {local:.2f} s, wire {wire:.2f} s", flush=True)
    local_median = statistics.median(local_times)
    wire_median = statistics.median(wire_times)
    ratio = wire_median / local_median
    print(
        f"{len(scenarios)} scenarios, median of {args.runs} runs: in-process {local_median:.2f} s, "
        f"wire{' (strict)' if args.strict else ''} {wire_median:.2f} s, ratio {ratio:.2f} "
        f"(target <= 1.3: {'met' if ratio <= 1.3 else 'NOT met'})"
    )
    return 0


#: --quick: one run of a few scenarios.
QUICK = ["--runs", "1", "-k", "join"]

if __name__ == "__main__":
    sys.exit(_record.run(main, __file__, QUICK))
