"""Meta-tests: the shipped shell-output scenarios must catch every mutant.

Each mutant in :mod:`seamspec.conformance._soo_mutants` breaks one MUST rule; a scenario
citing that rule must give it a ``fail`` verdict. ``error`` does not count: a mutant
caught only by crashing or hanging says nothing about the rule's scenarios. The control
(the reference, on both anyio backends) must pass everything, or a "caught" mutant might
be caught for the wrong reason.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache

import pytest

from seamspec.conformance import (
    Adapter,
    Runner,
    ScenarioResult,
    catalogue,
    load_adapter,
    load_scenarios,
)
from seamspec.conformance._reference import reference_adapter
from seamspec.conformance._soo_mutants import MUTANTS, mutant_adapter

CONTRACT = "shell-output"
CONTROLS = ("reference-asyncio", "reference-trio")

#: Scenarios run side by side: most of a run is spent waiting for children and gates.
PARALLEL_RUNS = 8


@cache
def _all_results() -> dict[str, list[ScenarioResult]]:
    """Every control's and mutant's results, computed once per session.

    The controls run every SOO scenario; a mutant runs only the scenarios citing the rule
    it breaks, since only those can count as catching it.
    """
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    runners = {name: Runner(_adapter(name), timeout=30.0) for name in (*CONTROLS, *MUTANTS)}
    jobs = [
        (name, scenario)
        for name in runners
        for scenario in scenarios
        if name not in MUTANTS or MUTANTS[name].rule in scenario.rules
    ]
    with ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        done = list(pool.map(lambda job: runners[job[0]].run_one(job[1]), jobs))
    results: dict[str, list[ScenarioResult]] = {name: [] for name in runners}
    for (name, _), result in zip(jobs, done, strict=True):
        results[name].append(result)
    for runner in runners.values():
        runner.adapter.close()
    return results


def _adapter(name: str) -> Adapter:
    if name in CONTROLS:
        return reference_adapter(name.removeprefix("reference-"))
    return mutant_adapter(name)


def _describe(result: ScenarioResult) -> str:
    detail = result.detail.replace("\n", "\n      ")
    return f"  {result.status:5} {result.scenario.id} {list(result.scenario.rules)}\n      {detail}"


@pytest.mark.parametrize("control", CONTROLS)
def test_controls_pass_every_scenario(control: str) -> None:
    results = _all_results()[control]
    assert len(results) >= 30, "expected at least 30 shell-output scenarios"
    bad = [r for r in results if r.status != "pass"]
    assert not bad, f"{control} must pass the whole suite:\n" + "\n".join(map(_describe, bad))


@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_mutant(name: str) -> None:
    mutant = MUTANTS[name]
    citing = _all_results()[name]
    assert citing, f"no scenario cites {mutant.rule}, so nothing can catch {name}"
    caught_by = [r.scenario.id for r in citing if r.status == "fail"]
    assert caught_by, (
        f"{name} ({mutant.statement}) broke {mutant.rule}, yet no scenario citing "
        f"{mutant.rule} failed (errors do not count). Citing scenarios:\n"
        + "\n".join(map(_describe, citing))
        + f"\nTo see what else catches it: seamspec run --impl mutant:{name}"
    )


def test_every_soo_must_rule_has_a_mutant() -> None:
    rules = {r.id for r in catalogue() if r.contract == CONTRACT and r.level == "MUST"}
    mutated = {mutant.rule for mutant in MUTANTS.values()}
    assert mutated <= rules, f"mutants name unknown rules: {sorted(mutated - rules)}"
    assert rules <= mutated, f"MUST rules with no mutant: {sorted(rules - mutated)}"


def test_soo_mutants_load_as_adapters() -> None:
    adapter = load_adapter("mutant:soo-shared-budget")
    info = adapter.info()
    assert info.name == "seamspec-mutant-soo-shared-budget"
    assert info.details["breaks"] == "SOO-BUDGET"
    assert info.contracts == ("shell-output",)
