"""Branch coverage of the write-observer-chain oracle over the suite and every WOC mutant.

Every finding the oracle can emit should be triggered by some scenario against some
implementation: a check that nothing ever trips is either dead code or a rule no scenario
exercises. This runs every WOC scenario (strict profile) against the reference, the
stepped chain, the outsider base and every WOC mutant, with coverage.py measuring branch
coverage of the oracle's modules, and prints the lines and branches never taken. The
contract page lists what is left uncovered on purpose ("Oracle coverage").

    pip install coverage
    python -m tests.woc_oracle_coverage [-j 8]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOM = Path(__file__).parents[1] / "conformance" / "_contracts" / "write_observer_chain"
#: The oracle and what it judges with: the files whose every finding must be reachable.
MEASURED = ("oracle.py", "oracle_seam.py", "oracle_trace.py", "joins.py", "sandbox.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=8)
    parser.add_argument("names", nargs="*", help="only these implementations (default: all)")
    args = parser.parse_args(argv)
    try:  # not a dependency of the kit: only this measurement needs it
        coverage = importlib.import_module("coverage")
    except ModuleNotFoundError:
        print("this needs coverage.py: pip install coverage", file=sys.stderr)
        return 2
    cov = coverage.Coverage(
        data_file=None,  # in memory: nothing written to the work tree
        branch=True,
        include=[str(ROOM / name) for name in MEASURED]
        + [f"*/write_observer_chain/{name}" for name in MEASURED],
    )
    cov.start()
    try:
        failed = _run_everything(args.jobs, args.names)
    finally:
        cov.stop()
    total: float = cov.report(show_missing=True, skip_covered=False)
    print(f"branch coverage of the WOC oracle: {total:.1f}%")
    for name, error in failed:
        print(f"could not run {name}: {error}")
    return 1 if failed else 0


def _run_everything(jobs: int, only: list[str]) -> list[tuple[str, str]]:
    from seamspec.conformance import Runner, load_scenarios
    from seamspec.conformance._contracts.write_observer_chain.mutants import MUTANTS

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from tests.test_woc_mutants import CONTROLS, _adapter

    scenarios = [s for s in load_scenarios() if s.contract == "write-observer-chain"]
    names = only or [*CONTROLS, *MUTANTS]

    def one(name: str) -> tuple[str, str] | None:
        try:
            adapter = _adapter(name)
            try:
                Runner(adapter, timeout=30.0, profile="strict").run(scenarios)
            finally:
                adapter.close()
        except Exception as error:  # reported after the coverage report, never lost
            return name, repr(error)
        return None

    with ThreadPoolExecutor(jobs) as pool:
        return [found for found in pool.map(one, names) if found is not None]


if __name__ == "__main__":
    raise SystemExit(main())
