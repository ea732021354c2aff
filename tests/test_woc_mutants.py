"""Meta-tests: the shipped write-observer-chain scenarios must catch every mutant, for the
right reason and at the right level.

A scenario suite that a broken chain can pass is not a conformance suite. Each mutant in
:mod:`seamspec.conformance._contracts.write_observer_chain.mutants` (the kit's own and the
outsiders') breaks one catalogue rule. The suite must give it a ``fail`` from a scenario
that **cites that rule**, that fails at **MUST level** (a SHOULD-only warning is not a
catch; only WOC-FAIL-WARN, a SHOULD rule with no MUST side, is caught at SHOULD), under
the **least profile the rule counts in** (a mutant of an upstream rule must be caught by
the default profile), and with the **oracle naming the rule** in that same result (the
oracle sees every WOC rule; ``then`` alone is not enough). ``error`` never counts: a mutant
caught only by crashing or hanging tells us nothing about the rule's scenarios.

The controls must pass everything, or a "caught" mutant might be caught for the wrong
reason: the unmutated stepped chain every kit chain mutant derives from, and each
outsider batch's own base implementation, which its variants differ from in one place
(each outsider batch has its own base, written by its own outsider). The reference is a control too; that it passes every scenario (a status is the same
under either profile) is checked once, on the ``conformance`` session's reports of both
backends (``tests/reference_report.py``), not by one more run of it here.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from seamspec import __version__
from seamspec.conformance import (
    Adapter,
    AdapterLoadError,
    PythonAdapter,
    Runner,
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
from seamspec.conformance._contracts.write_observer_chain.outsiders import base as outsider_base
from seamspec.conformance._contracts.write_observer_chain.outsiders import base2 as outsider_base2
from seamspec.conformance._contracts.write_observer_chain.outsiders import base4 as outsider_base4
from seamspec.conformance._contracts.write_observer_chain.outsiders import base5 as outsider_base5
from seamspec.conformance._contracts.write_observer_chain.outsiders import base6 as outsider_base6
from seamspec.conformance._contracts.write_observer_chain.outsiders import base7 as outsider_base7
from seamspec.conformance._contracts.write_observer_chain.outsiders import base8 as outsider_base8
from seamspec.conformance._contracts.write_observer_chain.outsiders import base9 as outsider_base9
from seamspec.conformance._contracts.write_observer_chain.outsiders import (
    base10 as outsider_base10,
)
from seamspec.conformance._contracts.write_observer_chain.outsiders import (
    base11 as outsider_base11,
)
from seamspec.conformance._contracts.write_observer_chain.outsiders import (
    base12 as outsider_base12,
)
from seamspec.conformance._contracts.write_observer_chain.outsiders import (
    base13 as outsider_base13,
)
from seamspec.conformance._contracts.write_observer_chain.outsiders import (
    base14 as outsider_base14,
)
from seamspec.conformance._contracts.write_observer_chain.outsiders import (
    batch1,
    batch2,
    batch3,
    batch4,
    batch5,
    batch6,
    batch7,
    batch8,
    batch9,
    batch10,
    batch11,
    batch12,
    batch13,
    batch14,
)
from seamspec.conformance._core.runner import Finding

from ._mutant_matrix import describe, run_matrix

CONTRACT = "write-observer-chain"
CONTROLS = (
    "stepped-chain",
    "outsider-base-1",
    "outsider-base-2",
    "outsider-base-4",
    "outsider-base-5",
    "outsider-base-6",
    "outsider-base-7",
    "outsider-base-8",
    "outsider-base-9",
    "outsider-base-10",
    "outsider-base-10-trio",
    "outsider-base-11",
    "outsider-base-11-trio",
    "outsider-base-12",
    "outsider-base-12-trio",
    "outsider-base-13",
    "outsider-base-13-trio",
    "outsider-base-14",
)

#: Rules whose mutants may be caught at SHOULD level, with the reason.
SHOULD_ONLY = {
    "WOC-FAIL-WARN": "a SHOULD rule with no MUST side: a wrong warning count never makes a "
    "chain non-conforming, so its mutants are caught as warnings"
}

pytestmark = pytest.mark.filterwarnings(
    # woc-fail-escapes lets observer exceptions reach the reference tools, which warn.
    "ignore::seamspec.reference.ObserverFailureWarning",
    "ignore::seamspec.conformance._contracts.write_observer_chain.outsiders.base.ObserverFailureWarning",
    "ignore::seamspec.conformance._contracts.write_observer_chain.outsiders.base4.ObserverFailureWarning",
)

#: Scenarios run side by side: most of a run is spent waiting (time limits, child
#: programs), and a mutant's verdict does not hinge on timing.
PARALLEL_RUNS = 16


@cache
def _all_results() -> dict[str, list[ScenarioResult]]:
    """Every control's and mutant's results (strict profile), computed once per session.

    The controls run every WOC scenario: they must pass all of them. A mutant runs the
    scenarios that cite the rule it breaks (only those can count as catching it), the
    ones that wait least first, until one catches it as :func:`_catches` demands. Every
    run judges by the strict profile, so each finding keeps the profile it counts under.
    """
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    runners = {
        name: Runner(_adapter(name), timeout=30.0, profile="strict")
        for name in (*CONTROLS, *MUTANTS)
    }
    try:
        return run_matrix(runners, scenarios, MUTANTS, parallel=PARALLEL_RUNS, catches=_catches)
    finally:
        for runner in runners.values():
            runner.adapter.close()


def _adapter(adapter_name: str) -> Adapter:
    if adapter_name == "stepped-chain":
        return PythonAdapter(
            name="stepped-chain",
            version=__version__,
            drivers=[WriteObserverChainDriver(MutantImplementation(chain=SteppedChain))],
        )
    if adapter_name == "outsider-base-1":
        return outsider_base.build()
    if adapter_name == "outsider-base-2":
        return outsider_base2.build()
    if adapter_name == "outsider-base-4":
        return outsider_base4.adapter()
    if adapter_name == "outsider-base-5":
        return outsider_base5.adapter()
    if adapter_name == "outsider-base-6":
        return outsider_base6.adapter()
    if adapter_name == "outsider-base-7":
        return outsider_base7.adapter()
    if adapter_name == "outsider-base-8":
        return outsider_base8.adapter()
    if adapter_name == "outsider-base-9":
        return outsider_base9.adapter()
    if adapter_name == "outsider-base-10":
        return outsider_base10.adapter()
    if adapter_name == "outsider-base-10-trio":
        return outsider_base10.adapter_trio()
    if adapter_name == "outsider-base-11":
        return outsider_base11.adapter()
    if adapter_name == "outsider-base-11-trio":
        return outsider_base11.adapter_trio()
    if adapter_name == "outsider-base-12":
        return outsider_base12.adapter()
    if adapter_name == "outsider-base-12-trio":
        return outsider_base12.adapter_trio()
    if adapter_name == "outsider-base-13":
        return outsider_base13.adapter()
    if adapter_name == "outsider-base-13-trio":
        return outsider_base13.adapter_trio()
    if adapter_name == "outsider-base-14":
        return outsider_base14.adapter()
    return mutant_adapter(adapter_name)


def _counts(finding: Finding, level: str, profile: str) -> bool:
    return finding.level == level and (profile == "strict" or finding.profile == "upstream")


def _catches(name: str, result: ScenarioResult) -> bool:
    """Whether ``result`` catches mutant ``name`` as this file demands (see the module doc)."""
    mutant = MUTANTS[name]
    rule = catalogue()[mutant.rule]
    level = "SHOULD" if mutant.rule in SHOULD_ONLY else "MUST"
    return (
        result.status == "fail"
        and mutant.rule in result.scenario.rules
        and any(_counts(f, level, rule.profile) for f in result.findings)
        and any(f.source == "oracle" and f.rule == mutant.rule for f in result.findings)
    )


def _kills(name: str) -> list[ScenarioResult]:
    """The results that catch mutant ``name`` (the search stops at the first)."""
    return [r for r in _all_results()[name] if _catches(name, r)]


@pytest.mark.parametrize("control", CONTROLS)
def test_controls_pass_every_scenario(control: str) -> None:
    results = _all_results()[control]
    assert results, "no write-observer-chain scenarios were found"
    bad = [r for r in results if r.status != "pass"]
    assert not bad, f"{control} must pass the whole suite:\n" + "\n".join(map(describe, bad))


@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_mutant(name: str) -> None:
    mutant = MUTANTS[name]
    citing = _all_results()[name]
    assert citing, f"no scenario cites {mutant.rule}, so nothing can catch {name}"
    kills = _kills(name)
    level = "SHOULD" if mutant.rule in SHOULD_ONLY else "MUST"
    assert kills, (
        f"{name} ({mutant.statement}) broke {mutant.rule}, yet no scenario citing "
        f"{mutant.rule} failed it at {level} level under the "
        f"{catalogue()[mutant.rule].profile} profile with the oracle naming "
        f"{mutant.rule}. Citing scenarios:\n"
        + "\n".join(map(describe, citing))
        + f"\nTo see what else catches it: seamspec run --impl mutant:{name} --profile strict"
    )


def test_every_woc_rule_has_a_mutant() -> None:
    rules = {rule.id for rule in catalogue() if rule.contract == CONTRACT}
    mutated = {mutant.rule for mutant in MUTANTS.values()}
    assert mutated <= rules, f"mutants name unknown rules: {sorted(mutated - rules)}"
    assert rules <= mutated, f"rules with no mutant: {sorted(rules - mutated)}"


def test_should_only_rules_are_should_rules() -> None:
    for rule_id in SHOULD_ONLY:
        assert catalogue()[rule_id].level == "SHOULD", rule_id


@pytest.mark.parametrize(
    ("batch", "origin", "size"),
    [
        (batch1, "outsider batch 1", 15),
        (batch2, "outsider batch 2", 7),
        # batch 3's files were lost: its six survivors were re-created from their records
        (batch3, "outsider batch 3 (re-created)", 6),
        (batch4, "outsider batch 4", 7),
        (batch5, "outsider batch 5", 7),
        (batch6, "outsider batch 6", 7),
        (batch7, "outsider batch 7", 7),
        (batch8, "outsider batch 8", 7),
        (batch9, "outsider batch 9", 7),
        (batch10, "outsider batch 10", 7),
        (batch11, "outsider batch 11", 7),
        (batch12, "outsider batch 12", 7),
        (batch13, "outsider batch 13", 7),
        (batch14, "outsider batch 14", 7),
    ],
)
def test_outsider_batch_is_registered_whole(batch: Any, origin: str, size: int) -> None:
    """Every variant of the batch not pending or rejected is a mutant, under its own name,
    rule and statement."""
    for name, variant in batch.MUTANTS.items():
        # batch 1's prefix, then batches 4-12's, then batches 13-14's
        assert name.startswith(
            (
                "out-woc-",
                "out-woc4-",
                "out-woc5-",
                "out-woc6-",
                "out-woc7-",
                "out-woc8-",
                "out-woc9-",
                "out-woc10-",
                "out-woc11-",
                "out-woc12-",
                "out-b13woc-",
                "out-b14woc-",
            )
        )
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == origin
    # a batch without VARIANTS registered every variant it had; later batches keep the
    # ones no scenario catches yet in PENDING (with why) and non-bugs in REJECTED
    variants = getattr(batch, "VARIANTS", batch.MUTANTS)
    pending = set(getattr(batch, "PENDING", {})) | set(getattr(batch, "REJECTED", {}))
    assert set(batch.MUTANTS) == set(variants) - pending
    assert not pending & set(MUTANTS)
    assert len(variants) == size
    assert set(batch.RELABELLED) <= set(batch.MUTANTS)
    for name, (label, _why) in batch.RELABELLED.items():
        assert label != batch.MUTANTS[name].rule, name


def test_mutants_load_as_adapters() -> None:
    adapter = load_adapter("mutant:woc-after-reversed")
    info = adapter.info()
    assert info.name == "seamspec-mutant-woc-after-reversed"
    assert info.details["breaks"] == "WOC-ORDER-AFTER"
    outsider = load_adapter("mutant:out-woc-deny-glob-anchored-right").info()
    assert outsider.details["origin"] == "outsider batch 1"
    with pytest.raises(AdapterLoadError, match="woc-after-reversed"):
        load_adapter("mutant:no-such-mutant")
