"""Meta-tests: the shipped shell-output scenarios must catch every mutant.

Each mutant in :mod:`seamspec.conformance._contracts.shell_output.mutants` breaks one MUST rule; a scenario
citing that rule must give it a ``fail`` verdict. ``error`` does not count: a mutant
caught only by crashing or hanging says nothing about the rule's scenarios. The control
(the reference, on both anyio backends) must pass everything, or a "caught" mutant might
be caught for the wrong reason.
"""

from __future__ import annotations

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
from seamspec.conformance._contracts.shell_output.mutants import MUTANTS, mutant_adapter
from seamspec.conformance._implementations import reference_adapter

from ._mutant_matrix import assert_caught, describe, run_matrix

CONTRACT = "shell-output"
CONTROLS = ("reference-asyncio", "reference-trio")

#: Scenarios run side by side: most of a run is spent waiting for children and gates.
PARALLEL_RUNS = 8


@cache
def _all_results() -> dict[str, list[ScenarioResult]]:
    """Every control's and mutant's results, computed once per session.

    The controls run every SOO scenario; a mutant runs the scenarios citing the rule it
    breaks (only those can count as catching it), the ones that wait least first, until
    one catches it as :func:`_catches` demands.
    """
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    runners = {name: Runner(_adapter(name), timeout=30.0) for name in (*CONTROLS, *MUTANTS)}
    try:
        return run_matrix(runners, scenarios, MUTANTS, parallel=PARALLEL_RUNS, catches=_catches)
    finally:
        for runner in runners.values():
            runner.adapter.close()


def _catches(name: str, result: ScenarioResult) -> bool:
    """A fail at MUST level (every SOO rule is a MUST rule) from a scenario citing the rule.

    The oracle does not yet name every SOO rule it can see broken (SOO-IDS,
    SOO-DENIED-NO-ID and SOO-TIMEOUT-RESULT are caught by the scenarios' ``then``), so
    this file does not ask for it, unlike the other rooms' meta-tests.
    """
    return (
        result.status == "fail"
        and MUTANTS[name].rule in result.scenario.rules
        and any(f.level == "MUST" for f in result.findings)
    )


def _adapter(name: str) -> Adapter:
    if name in CONTROLS:
        return reference_adapter(name.removeprefix("reference-"))
    return mutant_adapter(name)


@pytest.mark.parametrize("control", CONTROLS)
def test_controls_pass_every_scenario(control: str) -> None:
    results = _all_results()[control]
    assert len(results) >= 30, "expected at least 30 shell-output scenarios"
    bad = [r for r in results if r.status != "pass"]
    assert not bad, f"{control} must pass the whole suite:\n" + "\n".join(map(describe, bad))


@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_mutant(name: str) -> None:
    caught_by = assert_caught(name, MUTANTS[name], _all_results()[name])
    assert any(_catches(name, r) for r in caught_by), (
        f"{name} was caught only at SHOULD level:\n" + "\n".join(map(describe, caught_by))
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
