"""Meta-tests: the shipped write-observer-chain scenarios must catch every mutant.

A scenario suite that a broken chain can pass is not a conformance suite. Each mutant in
:mod:`seamspec.conformance._woc_mutants` breaks one catalogue rule; here the suite must give
it a ``fail`` verdict from a scenario that cites that rule. ``error`` does not count: a
mutant caught only by crashing or hanging tells us nothing about the rule's scenarios.
The controls (the reference, and the unmutated stepped chain every chain mutant derives
from) must pass everything, or a "caught" mutant might be caught for the wrong reason.
"""

from __future__ import annotations

from functools import cache

import pytest
from seamspec import __version__
from seamspec.conformance import (
    Adapter,
    AdapterLoadError,
    PythonAdapter,
    Runner,
    RunResult,
    ScenarioResult,
    WriteObserverChainDriver,
    catalogue,
    load_adapter,
    load_scenarios,
)
from seamspec.conformance._reference import reference_adapter
from seamspec.conformance._woc_mutants import (
    MUTANTS,
    MutantImplementation,
    SteppedChain,
    mutant_adapter,
)

CONTRACT = "write-observer-chain"


@cache
def _suite(adapter_name: str) -> RunResult:
    """Runs the shipped WOC scenarios once per adapter for the whole test session."""
    adapter = _adapter(adapter_name)
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    try:
        return Runner(adapter, timeout=30.0).run(scenarios)
    finally:
        adapter.close()


def _adapter(adapter_name: str) -> Adapter:
    if adapter_name == "reference":
        return reference_adapter()
    if adapter_name == "stepped-chain":
        return PythonAdapter(
            name="stepped-chain",
            version=__version__,
            drivers=[WriteObserverChainDriver(MutantImplementation(chain=SteppedChain))],
        )
    return mutant_adapter(adapter_name)


def _describe(result: ScenarioResult) -> str:
    detail = result.detail.replace("\n", "\n      ")
    return f"  {result.status:5} {result.scenario.id} {list(result.scenario.rules)}\n      {detail}"


@pytest.mark.parametrize("control", ["reference", "stepped-chain"])
def test_controls_pass_every_scenario(control: str) -> None:
    results = _suite(control).results
    assert results, "no write-observer-chain scenarios were found"
    bad = [r for r in results if r.status != "pass"]
    assert not bad, f"{control} must pass the whole suite:\n" + "\n".join(map(_describe, bad))


@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_mutant(name: str) -> None:
    mutant = MUTANTS[name]
    results = _suite(name).results
    citing = [r for r in results if mutant.rule in r.scenario.rules]
    assert citing, f"no scenario cites {mutant.rule}, so nothing can catch {name}"
    caught_by = [r.scenario.id for r in citing if r.status == "fail"]
    others = [r for r in results if r.status in ("fail", "error")]
    assert caught_by, (
        f"{name} ({mutant.statement}) broke {mutant.rule}, yet no scenario citing "
        f"{mutant.rule} failed. Citing scenarios:\n"
        + "\n".join(map(_describe, citing))
        + "\nOther scenarios that failed or errored:\n"
        + ("\n".join(map(_describe, others)) or "  (none)")
    )


def test_every_woc_rule_has_a_mutant() -> None:
    rules = {rule.id for rule in catalogue() if rule.contract == CONTRACT}
    mutated = {mutant.rule for mutant in MUTANTS.values()}
    assert mutated <= rules, f"mutants name unknown rules: {sorted(mutated - rules)}"
    assert rules <= mutated, f"rules with no mutant: {sorted(rules - mutated)}"


def test_mutants_load_as_adapters() -> None:
    adapter = load_adapter("mutant:woc-after-reversed")
    info = adapter.info()
    assert info.name == "seamspec-mutant-woc-after-reversed"
    assert info.details["breaks"] == "WOC-ORDER-AFTER"
    with pytest.raises(AdapterLoadError, match="woc-after-reversed"):
        load_adapter("mutant:no-such-mutant")
