"""What the three mutant meta-test files share: running the matrix and judging a mutant.

A control runs every scenario of its contract; a mutant runs only the scenarios citing
the rule it breaks (only those can count as catching it). ``error`` never counts as
caught: a mutant caught only by crashing or hanging says nothing about the rule's
scenarios.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from seamspec.conformance import Runner, Scenario, ScenarioResult


class MutantLike(Protocol):
    @property
    def rule(self) -> str: ...
    @property
    def statement(self) -> str: ...


def run_matrix(
    runners: Mapping[str, Runner],
    scenarios: list[Scenario],
    mutants: Mapping[str, MutantLike],
    *,
    parallel: int,
) -> dict[str, list[ScenarioResult]]:
    """Each runner's results: every scenario for a control, the citing ones for a mutant.

    Scenarios run side by side in threads: most of a run is spent waiting (time limits,
    child programs, gates), and a verdict does not hinge on timing.
    """
    jobs = [
        (name, scenario)
        for name in runners
        for scenario in scenarios
        if name not in mutants or mutants[name].rule in scenario.rules
    ]
    with ThreadPoolExecutor(parallel) as pool:
        done = list(pool.map(lambda job: runners[job[0]].run_one(job[1]), jobs))
    results: dict[str, list[ScenarioResult]] = {name: [] for name in runners}
    for (name, _), result in zip(jobs, done, strict=True):
        results[name].append(result)
    return results


def describe(result: ScenarioResult) -> str:
    detail = result.detail.replace("\n", "\n      ")
    return f"  {result.status:5} {result.scenario.id} {list(result.scenario.rules)}\n      {detail}"


def assert_caught(
    name: str, mutant: MutantLike, citing: list[ScenarioResult]
) -> list[ScenarioResult]:
    """The scenarios citing the mutant's rule that failed it; an assertion error if none."""
    assert citing, f"no scenario cites {mutant.rule}, so nothing can catch {name}"
    caught_by = [r for r in citing if r.status == "fail"]
    assert caught_by, (
        f"{name} ({mutant.statement}) broke {mutant.rule}, yet no scenario citing "
        f"{mutant.rule} failed (errors do not count). Citing scenarios:\n"
        + "\n".join(map(describe, citing))
        + f"\nTo see what else catches it: seamspec run --impl mutant:{name}"
    )
    return caught_by
