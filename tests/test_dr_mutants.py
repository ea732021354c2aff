"""Meta-tests: the shipped dispatch-recorder scenarios must catch every DR mutant, for the
right reason and at the right level.

Each mutant in :mod:`seamspec.conformance._contracts.dispatch_recorder.mutants` breaks one
DR rule. The suite must give it a ``fail`` from a scenario that **cites that rule**, that
fails at **MUST level** (every DR rule is a MUST rule), under the **least profile the rule
counts in** (a mutant of an upstream rule must be caught by the default profile), and with
the **oracle naming the rule** in that same result (``then`` alone is not enough: the
oracle is what judges generated scenarios and other people's traces), on asyncio and on
trio. ``error`` never counts: a mutant caught only by crashing or hanging says nothing
about the rule's scenarios.

The controls must pass every DR scenario under the strict profile, so that a mutant is
never "caught" for a reason that has nothing to do with its bug: each outsider batch's
own base implementation, which its variants differ from in one place. The reference is a control too; that it passes every scenario (a status is the same
under either profile) is checked once, on the ``conformance`` session's reports of both
backends (``tests/reference_report.py``), not by one more run of it here.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from seamspec.conformance import Runner, ScenarioResult, catalogue, load_adapter, load_scenarios
from seamspec.conformance._contracts.dispatch_recorder.mutants import MUTANTS, mutant_adapter
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base as outsider_base
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base3 as outsider_base3
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base4 as outsider_base4
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base5 as outsider_base5
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base6 as outsider_base6
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base7 as outsider_base7
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base8 as outsider_base8
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base9 as outsider_base9
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base10 as outsider_base10
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base11 as outsider_base11
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base12 as outsider_base12
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base13 as outsider_base13
from seamspec.conformance._contracts.dispatch_recorder.outsiders import base14 as outsider_base14
from seamspec.conformance._contracts.dispatch_recorder.outsiders import (
    batch1,
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
from seamspec.conformance._quality.mutants import all_mutants

from ._mutant_matrix import describe, run_matrix

CONTRACT = "dispatch-recorder"
BACKENDS = ("asyncio", "trio")
PARALLEL_RUNS = 16
#: Controls without a signed journal (they do not declare `signed-journal`).
NO_JOURNAL_CONTROLS = frozenset(
    {"outsider-base-7", "outsider-base-8", "outsider-base-9", "outsider-base-12"}
)
#: Controls run on asyncio only. Batch 14's base uses anyio's portable calls alone (its
#: trio path is anyio's cancel scopes and checkpoints, which reference-trio covers), and
#: every control adds a whole-suite run: on trio it would add time, not evidence.
ASYNCIO_ONLY_CONTROLS = frozenset({"outsider-base-14"})


@cache
def _all_results(backend: str) -> dict[str, list[ScenarioResult]]:
    """The controls run every DR scenario; each mutant only those citing its rule.

    Every run judges by the strict profile, so each finding keeps the profile it counts
    under and :func:`_kills` can ask for the least one.
    """
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    runners = {
        "outsider-base-1": Runner(outsider_base.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-3": Runner(outsider_base3.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-4": Runner(outsider_base4.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-5": Runner(outsider_base5.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-6": Runner(outsider_base6.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-7": Runner(outsider_base7.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-8": Runner(outsider_base8.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-9": Runner(outsider_base9.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-10": Runner(outsider_base10.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-11": Runner(outsider_base11.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-12": Runner(outsider_base12.build(backend), timeout=30.0, profile="strict"),
        "outsider-base-13": Runner(outsider_base13.build(backend), timeout=30.0, profile="strict"),
    }
    if backend == "asyncio":  # the ASYNCIO_ONLY_CONTROLS
        runners["outsider-base-14"] = Runner(
            outsider_base14.build(backend), timeout=30.0, profile="strict"
        )
    runners.update(
        {
            name: Runner(mutant_adapter(name, backend), timeout=30.0, profile="strict")
            for name in MUTANTS
        }
    )
    return run_matrix(runners, scenarios, MUTANTS, parallel=PARALLEL_RUNS, catches=_kill)


def _counts(finding: Finding, profile: str) -> bool:
    return finding.level == "MUST" and (profile == "strict" or finding.profile == "upstream")


def _kill(name: str, result: ScenarioResult) -> bool:
    """Whether ``result`` catches mutant ``name`` as this file demands (see the module doc)."""
    mutant = MUTANTS[name]
    profile = catalogue()[mutant.rule].profile
    return (
        result.status == "fail"
        and any(_counts(f, profile) for f in result.findings)
        and any(f.source == "oracle" and f.rule == mutant.rule for f in result.findings)
    )


def _kills(name: str, backend: str) -> list[ScenarioResult]:
    """The results that catch mutant ``name`` (a mutant's runs stop at the first)."""
    return [r for r in _all_results(backend)[name] if _kill(name, r)]


_CONTROLS = (
    "outsider-base-1",
    "outsider-base-3",
    "outsider-base-4",
    "outsider-base-5",
    "outsider-base-6",
    "outsider-base-7",
    "outsider-base-8",
    "outsider-base-9",
    "outsider-base-10",
    "outsider-base-11",
    "outsider-base-12",
    "outsider-base-13",
    "outsider-base-14",
)


@pytest.mark.parametrize(
    ("control", "backend"),
    [
        (control, backend)
        for backend in BACKENDS
        for control in _CONTROLS
        if backend == "asyncio" or control not in ASYNCIO_ONLY_CONTROLS
    ],
)
def test_controls_pass_every_dr_scenario(control: str, backend: str) -> None:
    results = _all_results(backend)[control]
    assert len(results) >= 30, "the DR suite must have at least 30 scenarios"
    # A control with no journal skips the journal's scenarios, and only those.
    skips = ("signed-journal",) if control in NO_JOURNAL_CONTROLS else ()
    bad = [
        r
        for r in results
        if r.status != "pass" and not (r.status == "skip" and set(r.scenario.requires) & set(skips))
    ]
    assert not bad, f"{control} must pass the whole DR suite:\n" + "\n".join(map(describe, bad))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_dr_mutant(name: str, backend: str) -> None:
    mutant = MUTANTS[name]
    citing = _all_results(backend)[name]
    assert citing, f"no scenario cites {mutant.rule}, so nothing can catch {name}"
    assert _kills(name, backend), (
        f"{name} ({mutant.statement}) broke {mutant.rule}, yet no scenario citing "
        f"{mutant.rule} failed it at MUST level under the "
        f"{catalogue()[mutant.rule].profile} profile with the oracle naming "
        f"{mutant.rule} ({backend}). Citing scenarios:\n"
        + "\n".join(map(describe, citing))
        + f"\nTo see what else catches it: seamspec run --impl mutant:{name} --profile strict"
    )


def test_every_dr_rule_is_a_must_rule_with_a_mutant() -> None:
    rules = {r.id: r for r in catalogue() if r.contract == CONTRACT}
    assert all(r.level == "MUST" for r in rules.values()), "a SHOULD DR rule needs SHOULD_ONLY"
    mutated = {mutant.rule for mutant in MUTANTS.values()}
    assert mutated <= set(rules), f"mutants name unknown rules: {sorted(mutated - set(rules))}"
    assert set(rules) <= mutated, f"rules with no mutant: {sorted(set(rules) - mutated)}"


def test_dr_mutants_are_registered_and_load_as_adapters() -> None:
    assert set(MUTANTS) <= set(all_mutants())
    adapter = load_adapter("mutant:dr-apply-before-record")
    info = adapter.info()
    assert info.details["breaks"] == "DR-RECORD-FIRST"
    assert CONTRACT in info.contracts


def test_outsider_batch_is_registered_whole() -> None:
    """Every variant of the batch but the pending ones is a mutant, with its rule and words."""
    assert set(batch1.MUTANTS) == set(batch1.VARIANTS) - set(batch1.PENDING)
    for name, variant in batch1.MUTANTS.items():
        mutant = MUTANTS[f"out-dr-{name.replace('_', '-')}"]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 1"
    assert len(batch1.VARIANTS) == 18
    assert set(batch1.RELABELLED) <= set(batch1.MUTANTS)
    assert load_adapter("mutant:out-dr-no-cancel-check").info().details["origin"] == (
        "outsider batch 1"
    )


def test_outsider_batch_3_is_registered_whole() -> None:
    """Every variant of batch 3 but the pending ones is a mutant, and the file is the one hashed."""
    assert set(batch3.MUTANTS) == set(batch3.VARIANTS) - set(batch3.PENDING)
    for name, variant in batch3.MUTANTS.items():
        mutant = MUTANTS[f"out-dr-{name.replace('_', '-')}"]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 3"
    assert len(batch3.VARIANTS) == 6
    assert load_adapter("mutant:out-dr-approval-remembered-per-tool").info().details["origin"] == (
        "outsider batch 3"
    )


def test_outsider_batch_4_is_registered_whole() -> None:
    """Every variant of batch 4 but the pending ones is a mutant, under its own name."""
    assert set(batch4.MUTANTS) == set(batch4.VARIANTS) - set(batch4.PENDING)
    for name, variant in batch4.MUTANTS.items():
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 4"
    assert len(batch4.VARIANTS) == 6
    assert load_adapter("mutant:out-dr4-anchor-ignores-extra-entries").info().details["origin"] == (
        "outsider batch 4"
    )


@pytest.mark.parametrize(
    ("batch", "number", "example"),
    [
        (batch5, 5, "out-dr5-anchor-zero-ignored"),
        (batch6, 6, "out-dr6-verify-extra-field"),
        (batch7, 7, "out-dr7-commit-shielded"),
        (batch8, 8, "out-dr8-commit-clock-from-step-start"),
    ],
)
def test_outsider_batch_5_on_is_registered_whole(batch: Any, number: int, example: str) -> None:
    """Every variant of batches 5 on but the pending and rejected ones is a mutant, under its
    own name, with its (possibly relabelled) rule and the outsider's words."""
    origin = f"outsider batch {number}"
    assert set(batch.MUTANTS) == set(batch.VARIANTS) - set(batch.PENDING) - set(batch.REJECTED)
    for name, variant in batch.MUTANTS.items():
        assert name.startswith(f"out-dr{number}-"), name
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == origin
    assert len(batch.VARIANTS) == 6
    assert set(batch.RELABELLED) <= set(batch.MUTANTS)
    assert not set(batch.REJECTED) & set(MUTANTS)
    assert load_adapter(f"mutant:{example}").info().details["origin"] == origin


def test_outsider_batch_9_is_registered_whole() -> None:
    """Every variant of batch 9 but the pending and rejected ones is a mutant, under its own
    name, with its (possibly relabelled) rule and the outsider's words."""
    assert set(batch9.MUTANTS) == set(batch9.VARIANTS) - set(batch9.PENDING) - set(batch9.REJECTED)
    for name, variant in batch9.MUTANTS.items():
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 9"
    assert len(batch9.VARIANTS) == 6
    assert set(batch9.RELABELLED) <= set(batch9.MUTANTS)
    assert not set(batch9.REJECTED) & set(MUTANTS)


def test_outsider_batch_10_is_registered_whole() -> None:
    """Every variant of batch 10 but the pending and rejected ones is a mutant, under its
    own name, with its (possibly relabelled) rule and the outsider's words."""
    assert set(batch10.MUTANTS) == (
        set(batch10.VARIANTS) - set(batch10.PENDING) - set(batch10.REJECTED)
    )
    for name, variant in batch10.MUTANTS.items():
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 10"
    assert len(batch10.VARIANTS) == 6
    assert set(batch10.RELABELLED) <= set(batch10.MUTANTS)
    assert not set(batch10.REJECTED) & set(MUTANTS)


def test_outsider_batch_11_is_registered_whole() -> None:
    """Every variant of batch 11 but the pending and rejected ones is a mutant, under its
    own name, with its (possibly relabelled) rule and the outsider's words."""
    assert set(batch11.MUTANTS) == (
        set(batch11.VARIANTS) - set(batch11.PENDING) - set(batch11.REJECTED)
    )
    for name, variant in batch11.MUTANTS.items():
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 11"
    assert len(batch11.VARIANTS) == 6
    assert set(batch11.RELABELLED) <= set(batch11.MUTANTS)
    assert not set(batch11.REJECTED) & set(MUTANTS)


def test_outsider_batch_12_is_registered_whole() -> None:
    """Every variant of batch 12 but the pending and rejected ones is a mutant, under its
    own name, with its (possibly relabelled) rule and the outsider's words."""
    assert set(batch12.MUTANTS) == (
        set(batch12.VARIANTS) - set(batch12.PENDING) - set(batch12.REJECTED)
    )
    for name, variant in batch12.MUTANTS.items():
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 12"
    assert len(batch12.VARIANTS) == 6
    assert set(batch12.RELABELLED) <= set(batch12.MUTANTS)
    assert not set(batch12.REJECTED) & set(MUTANTS)


def test_outsider_batch_13_is_registered_whole() -> None:
    """Every variant of batch 13 but the pending and rejected ones is a mutant, under its
    own name and rule."""
    assert set(batch13.MUTANTS) == (
        set(batch13.VARIANTS) - set(batch13.PENDING) - set(batch13.REJECTED)
    )
    for name, variant in batch13.MUTANTS.items():
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 13"
    assert len(batch13.VARIANTS) == 6
    assert set(batch13.RELABELLED) <= set(batch13.MUTANTS)
    assert not set(batch13.REJECTED) & set(MUTANTS)


def test_outsider_batch_14_is_registered_whole() -> None:
    """Every variant of batch 14 but the pending and rejected ones is a mutant, under its
    own name and rule (none is pending: four were killed on the first try, two since)."""
    assert set(batch14.MUTANTS) == (
        set(batch14.VARIANTS) - set(batch14.PENDING) - set(batch14.REJECTED)
    )
    for name, variant in batch14.MUTANTS.items():
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == "outsider batch 14"
    assert len(batch14.VARIANTS) == 6
    assert not batch14.PENDING
    assert set(batch14.RELABELLED) <= set(batch14.MUTANTS)
    assert not set(batch14.REJECTED) & set(MUTANTS)
