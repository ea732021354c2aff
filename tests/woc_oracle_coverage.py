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

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests._oracle_coverage import measure

ROOM = Path(__file__).parents[1] / "conformance" / "_contracts" / "write_observer_chain"
#: The oracle and what it judges with: the files whose every finding must be reachable.
MEASURED = ("oracle.py", "oracle_seam.py", "oracle_trace.py", "joins.py", "sandbox.py")


def main(argv: list[str] | None = None) -> int:
    return measure(
        argv,
        description=__doc__.split("\n\n")[0],
        room=ROOM,
        measured=MEASURED,
        label="WOC",
        run_everything=_run_everything,
        jobs=8,
    )


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
