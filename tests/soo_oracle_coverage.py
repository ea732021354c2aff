"""Branch coverage of the shell-output oracle over the suite and every SOO mutant.

Every finding the oracle can emit should be triggered by some scenario against some
implementation: a check that nothing ever trips is either dead code or a rule no scenario
exercises. This runs every SOO scenario (strict profile) against the reference on both
backends, every SOO mutant and the evidence fixtures of ``tests/test_soo_evidence.py``
(implementations whose reports contradict what they do), with coverage.py measuring branch coverage of the oracle's
modules, and prints the lines and branches never taken. The contract page lists what is
left uncovered on purpose ("Oracle coverage").

    pip install coverage
    python -m tests.soo_oracle_coverage [-j 6]
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests._oracle_coverage import measure

ROOM = Path(__file__).parents[1] / "conformance" / "_contracts" / "shell_output"
#: The oracle and what it judges with: the files whose every finding must be reachable.
MEASURED = ("oracle.py", "oracle_ids.py", "oracle_result.py", "history.py")


def main(argv: list[str] | None = None) -> int:
    return measure(
        argv,
        description=__doc__.split("\n\n")[0],
        room=ROOM,
        measured=MEASURED,
        label="SOO",
        run_everything=_run_everything,
        jobs=6,
    )


def _run_everything(jobs: int, only: list[str]) -> list[tuple[str, str]]:
    from seamspec.conformance import Runner, load_scenarios
    from seamspec.conformance._contracts.shell_output.mutants import MUTANTS

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from seamspec import __version__
    from seamspec.conformance import PythonAdapter
    from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
    from tests.test_soo_evidence import FIXTURES
    from tests.test_soo_mutants import CONTROLS, _adapter

    scenarios = [s for s in load_scenarios() if s.contract == "shell-output"]
    names = only or [*CONTROLS, *MUTANTS, *FIXTURES]

    def build(name: str) -> Any:
        if name in FIXTURES:
            driver = ShellOutputDriver(FIXTURES[name]())
            return PythonAdapter(name=name, version=__version__, drivers=[driver])
        return _adapter(name)

    def one(name: str) -> tuple[str, str] | None:
        try:
            adapter = build(name)
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
