"""Branch coverage of the dispatch-recorder oracle over the suite and every DR mutant.

Every finding the oracle can emit should be triggered by some scenario against some
implementation: a check that nothing ever trips is either dead code or a rule no scenario
exercises. This runs every DR scenario (strict profile) against the reference, the outsider
base and every DR mutant, on asyncio, with coverage.py measuring branch coverage of the oracle's
dispatch part, and prints the lines and branches never taken. The contract page lists
what is left uncovered on purpose ("Oracle coverage"); ``tests/test_dr_oracle.py`` holds
the hand-written traces for findings only another language's adapter can cause.

    pip install coverage
    python -m tests.dr_oracle_coverage [-j 6] [NAME ...]
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests._oracle_coverage import measure

ROOM = Path(__file__).parents[1] / "conformance" / "_contracts" / "dispatch_recorder"
#: The oracle's dispatch side: the files whose every finding must be reachable. (The
#: journal checks, ``oracle_journal.py``, are measured with the journal's own tests.)
MEASURED = ("oracle.py", "oracle_trace.py", "oracle_turn.py")


def main(argv: list[str] | None = None) -> int:
    return measure(
        argv,
        description=__doc__.split("\n\n")[0],
        room=ROOM,
        measured=MEASURED,
        label="DR",
        run_everything=_run_everything,
        jobs=6,
    )


def _run_everything(jobs: int, only: list[str]) -> list[tuple[str, str]]:
    from seamspec.conformance import Adapter, Runner, load_scenarios
    from seamspec.conformance._contracts.dispatch_recorder.mutants import MUTANTS, mutant_adapter
    from seamspec.conformance._contracts.dispatch_recorder.outsiders import base
    from seamspec.conformance._implementations import reference_adapter

    scenarios = [s for s in load_scenarios() if s.contract == "dispatch-recorder"]
    names = only or ["reference", "outsider-base-1", *MUTANTS]

    def adapter(name: str) -> Adapter:
        if name == "reference":
            return reference_adapter()
        return base.build() if name == "outsider-base-1" else mutant_adapter(name)

    def one(name: str) -> tuple[str, str] | None:
        try:
            built = adapter(name)
            try:
                Runner(built, timeout=30.0, profile="strict").run(scenarios)
            finally:
                built.close()
        except Exception as error:  # reported after the coverage report, never lost
            return name, repr(error)
        return None

    with ThreadPoolExecutor(jobs) as pool:
        return [found for found in pool.map(one, names) if found is not None]


if __name__ == "__main__":
    raise SystemExit(main())
