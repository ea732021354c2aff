"""Meta-tests: the shipped dispatch-recorder scenarios must catch every DR mutant.

Each mutant in :mod:`seamspec.conformance._contracts.dispatch_recorder.mutants` breaks one DR rule; the suite must
give it a ``fail`` (not an ``error``) from a scenario that cites that rule, on asyncio and
on trio. The control (the reference) must pass every DR scenario, so that a mutant is
never "caught" for a reason that has nothing to do with its bug.
"""

from __future__ import annotations

from functools import cache

import pytest

from seamspec.conformance import Runner, ScenarioResult, catalogue, load_adapter, load_scenarios
from seamspec.conformance._contracts.dispatch_recorder.mutants import MUTANTS, mutant_adapter
from seamspec.conformance._implementations import reference_adapter
from seamspec.conformance._quality.mutants import all_mutants

from ._mutant_matrix import assert_caught, describe, run_matrix

CONTRACT = "dispatch-recorder"
BACKENDS = ("asyncio", "trio")
PARALLEL_RUNS = 8


@cache
def _all_results(backend: str) -> dict[str, list[ScenarioResult]]:
    """The reference runs every DR scenario; each mutant only those citing its rule."""
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    runners = {"reference": Runner(reference_adapter(backend), timeout=30.0)}
    runners.update({name: Runner(mutant_adapter(name, backend), timeout=30.0) for name in MUTANTS})
    return run_matrix(runners, scenarios, MUTANTS, parallel=PARALLEL_RUNS, catches=_catches)


def _catches(name: str, result: ScenarioResult) -> bool:
    """A fail from a scenario citing the mutant's rule, at MUST level (every DR rule is a
    MUST rule), with the oracle naming the rule in that same result."""
    rule = MUTANTS[name].rule
    return (
        result.status == "fail"
        and rule in result.scenario.rules
        and any(f.level == "MUST" for f in result.findings)
        and any(f.source == "oracle" and f.rule == rule for f in result.findings)
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_reference_passes_every_dr_scenario(backend: str) -> None:
    results = _all_results(backend)["reference"]
    assert len(results) >= 30, "the DR suite must have at least 30 scenarios"
    bad = [r for r in results if r.status != "pass"]
    assert not bad, "the reference must pass the whole DR suite:\n" + "\n".join(map(describe, bad))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_dr_mutant(name: str, backend: str) -> None:
    mutant = MUTANTS[name]
    caught_by = assert_caught(name, mutant, _all_results(backend)[name])
    oracle_rules = {f.rule or "" for r in caught_by for f in r.findings if f.source == "oracle"}
    assert any(_catches(name, r) for r in caught_by), (
        f"{name} was caught only by `then` or at SHOULD level, never by the oracle under "
        f"{mutant.rule} at MUST level: the oracle named {sorted(oracle_rules)}"
    )


def test_every_dr_must_rule_has_a_mutant() -> None:
    rules = {r.id for r in catalogue() if r.contract == CONTRACT and r.level == "MUST"}
    mutated = {mutant.rule for mutant in MUTANTS.values()}
    assert mutated <= rules, f"mutants name unknown rules: {sorted(mutated - rules)}"
    assert rules <= mutated, f"MUST rules with no mutant: {sorted(rules - mutated)}"


def test_dr_mutants_are_registered_and_load_as_adapters() -> None:
    assert set(MUTANTS) <= set(all_mutants())
    adapter = load_adapter("mutant:dr-apply-before-record")
    info = adapter.info()
    assert info.details["breaks"] == "DR-RECORD-FIRST"
    assert CONTRACT in info.contracts
