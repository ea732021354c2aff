"""Meta-tests: the shipped write-observer-chain scenarios must catch every mutant.

A scenario suite that a broken chain can pass is not a conformance suite. Each mutant in
:mod:`seamspec.conformance._contracts.write_observer_chain.mutants` breaks one catalogue rule; here the suite must give
it a ``fail`` verdict from a scenario that cites that rule. ``error`` does not count: a
mutant caught only by crashing or hanging tells us nothing about the rule's scenarios.
The controls (the reference, and the unmutated stepped chain every chain mutant derives
from) must pass everything, or a "caught" mutant might be caught for the wrong reason.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache

import pytest

from seamspec import __version__
from seamspec.conformance import (
    Adapter,
    AdapterLoadError,
    PythonAdapter,
    Runner,
    Scenario,
    ScenarioResult,
    WriteObserverChainDriver,
    catalogue,
    load_adapter,
    load_scenarios,
)
from seamspec.conformance._contracts.write_observer_chain.mutants import (
    MUTANTS,
    MutantImplementation,
    SteppedChain,
    mutant_adapter,
)
from seamspec.conformance._implementations import reference_adapter

from ._mutant_matrix import assert_caught, describe

CONTRACT = "write-observer-chain"
CONTROLS = ("reference", "stepped-chain")

pytestmark = pytest.mark.filterwarnings(
    # woc-fail-escapes lets observer exceptions reach the reference tools, which warn.
    "ignore::seamspec.reference.ObserverFailureWarning"
)


#: Mutant scenarios run side by side: most of a run is spent waiting (time limits, child
#: programs), and a mutant's verdict does not hinge on timing.
PARALLEL_RUNS = 6


@cache
def _all_results() -> dict[str, list[ScenarioResult]]:
    """Every control's and mutant's results, computed once per session.

    The controls run every WOC scenario, one at a time as ``seamspec run`` does: they must
    pass all of them, and a few scenarios use short per-hook time limits that a starved
    thread could overrun. A mutant runs only the scenarios that cite the rule it breaks
    (only those can count as catching it), in parallel, so the file stays quick.
    """
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    results = {name: _run(name, scenarios) for name in CONTROLS}
    with ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        pending = {
            name: [pool.submit(_run, name, [s]) for s in scenarios if mutant.rule in s.rules]
            for name, mutant in MUTANTS.items()
        }
    for name, futures in pending.items():
        results[name] = [result for future in futures for result in future.result()]
    return results


def _run(adapter_name: str, scenarios: list[Scenario]) -> list[ScenarioResult]:
    adapter = _adapter(adapter_name)
    try:
        return Runner(adapter, timeout=30.0).run(scenarios).results
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


@pytest.mark.parametrize("control", CONTROLS)
def test_controls_pass_every_scenario(control: str) -> None:
    results = _all_results()[control]
    assert results, "no write-observer-chain scenarios were found"
    bad = [r for r in results if r.status != "pass"]
    assert not bad, f"{control} must pass the whole suite:\n" + "\n".join(map(describe, bad))


@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_mutant(name: str) -> None:
    assert_caught(name, MUTANTS[name], _all_results()[name])


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
