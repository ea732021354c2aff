"""Meta-tests: the shipped shell-output scenarios must catch every mutant, for the right
reason and at the right level.

Each mutant in :mod:`seamspec.conformance._contracts.shell_output.mutants` breaks one
catalogue rule. The suite must give it a ``fail`` from a scenario that **cites that
rule**, at **MUST level** (every SOO rule is a MUST rule), under the **least profile the
rule counts in** (a mutant of an upstream rule must be caught by the default profile),
and with the **oracle naming the rule** in that same result: a catch by the scenario's
``then`` alone is not enough, since ``then`` cannot say which rule was broken. ``error``
never counts: a mutant caught only by crashing or hanging tells nothing about the rule's
scenarios.

The controls must pass everything under the strict profile, or a "caught" mutant might be
caught for the wrong reason: each outsider batch's own base implementation, which its
variants differ from in one place. The reference is a control too; that it passes every scenario (a status is the same
under either profile) is checked once, on the ``conformance`` session's reports of both
backends (``tests/reference_report.py``), not by one more run of it here.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from seamspec.conformance._contracts.shell_output.mutants import (
    MUTANTS,
    NOW_SEEN,
    mutant_adapter,
)
from seamspec.conformance._contracts.shell_output.outsiders import base as outsider_base
from seamspec.conformance._contracts.shell_output.outsiders import base2 as outsider_base2
from seamspec.conformance._contracts.shell_output.outsiders import base4 as outsider_base4
from seamspec.conformance._contracts.shell_output.outsiders import base5 as outsider_base5
from seamspec.conformance._contracts.shell_output.outsiders import base6 as outsider_base6
from seamspec.conformance._contracts.shell_output.outsiders import base7 as outsider_base7
from seamspec.conformance._contracts.shell_output.outsiders import base8 as outsider_base8
from seamspec.conformance._contracts.shell_output.outsiders import base9 as outsider_base9
from seamspec.conformance._contracts.shell_output.outsiders import base10 as outsider_base10
from seamspec.conformance._contracts.shell_output.outsiders import base11 as outsider_base11
from seamspec.conformance._contracts.shell_output.outsiders import base13 as outsider_base13
from seamspec.conformance._contracts.shell_output.outsiders import base14 as outsider_base14
from seamspec.conformance._contracts.shell_output.outsiders import (
    batch1,
    batch2,
    batch4,
    batch5,
    batch6,
    batch7,
    batch8,
    batch9,
    batch10,
    batch11,
    batch13,
    batch14,
)
from seamspec.conformance._core.runner import Finding

from ._mutant_matrix import describe, run_matrix

CONTRACT = "shell-output"
CONTROLS = (
    "outsider-base-1",
    "outsider-base-2",
    "outsider-base-4",
    "outsider-base-4-trio",
    "outsider-base-5",
    "outsider-base-5-trio",
    "outsider-base-6",
    "outsider-base-6-trio",
    "outsider-base-7",
    "outsider-base-7-trio",
    "outsider-base-8",
    "outsider-base-8-trio",
    "outsider-base-9",
    "outsider-base-9-trio",
    "outsider-base-10",
    "outsider-base-10-trio",
    "outsider-base-11",
    "outsider-base-11-trio",
    # base 13 on asyncio only: it waits on a threading.Event it polls with anyio.sleep and
    # never touches the event loop from a thread, so on trio the only backend-specific code
    # it runs is that sleep and anyio's cancel scopes, which reference-trio already covers
    # (its trio run would add CI time, not evidence).
    "outsider-base-13",
    # base 14 on asyncio only, for the same reason: threads and a threading.Event it polls
    # with anyio.sleep, no backend-specific code of its own.
    "outsider-base-14",
)

#: Scenarios run side by side: most of a run is spent waiting for children and gates,
#: and no mutant's verdict hinges on timing (bounds are gated and generous).
PARALLEL_RUNS = 12


@cache
def _all_results() -> dict[str, list[ScenarioResult]]:
    """Every control's and mutant's results (strict profile), computed once per session.

    The controls run every SOO scenario; a mutant runs the scenarios citing the rule it
    breaks (only those can count as catching it), the ones that wait least first, until
    one catches it as :func:`kills` demands. Every run judges by the strict profile, so
    each finding keeps the profile it counts under.
    """
    scenarios = [s for s in load_scenarios() if s.contract == CONTRACT]
    runners = {
        name: Runner(_adapter(name), timeout=30.0, profile="strict")
        for name in (*CONTROLS, *MUTANTS)
    }
    try:
        return run_matrix(
            runners,
            scenarios,
            MUTANTS,
            parallel=PARALLEL_RUNS,
            catches=lambda name, result: bool(kills(name, [result])),
        )
    finally:
        for runner in runners.values():
            runner.adapter.close()


def _adapter(name: str) -> Adapter:
    if name == "outsider-base-1":
        return outsider_base.build()
    if name == "outsider-base-2":
        return outsider_base2.build()
    if name.startswith("outsider-base-4"):
        return outsider_base4.build("trio" if name.endswith("-trio") else "asyncio")
    if name.startswith("outsider-base-5"):
        return outsider_base5.build("trio" if name.endswith("-trio") else "asyncio")
    if name.startswith("outsider-base-6"):
        return outsider_base6.build("trio" if name.endswith("-trio") else "asyncio")
    if name.startswith("outsider-base-7"):
        return outsider_base7.build("trio" if name.endswith("-trio") else "asyncio")
    if name.startswith("outsider-base-8"):
        return outsider_base8.build("trio" if name.endswith("-trio") else "asyncio")
    if name.startswith("outsider-base-9"):
        return outsider_base9.build("trio" if name.endswith("-trio") else "asyncio")
    if name.startswith("outsider-base-10"):
        return outsider_base10.build("trio" if name.endswith("-trio") else "asyncio")
    if name.startswith("outsider-base-11"):
        return outsider_base11.build("trio" if name.endswith("-trio") else "asyncio")
    if name == "outsider-base-13":
        return outsider_base13.build()
    if name == "outsider-base-14":
        return outsider_base14.build()
    return mutant_adapter(name)


def _counts(finding: Finding, profile: str) -> bool:
    return finding.level == "MUST" and (profile == "strict" or finding.profile == "upstream")


def kills(name: str, results: list[ScenarioResult]) -> list[ScenarioResult]:
    """The results that catch mutant ``name`` as this file demands (see the module doc)."""
    mutant = MUTANTS[name]
    profile = catalogue()[mutant.rule].profile
    return [
        r
        for r in results
        if r.status == "fail"
        and mutant.rule in r.scenario.rules
        and any(_counts(f, profile) for f in r.findings)
        and any(
            f.source == "oracle" and f.rule == mutant.rule and _counts(f, profile)
            for f in r.findings
        )
    ]


@pytest.mark.parametrize("control", CONTROLS)
def test_controls_pass_every_scenario(control: str) -> None:
    results = _all_results()[control]
    assert len(results) >= 30, "expected at least 30 shell-output scenarios"
    bad = [r for r in results if r.status != "pass"]
    assert not bad, f"{control} must pass the whole suite:\n" + "\n".join(map(describe, bad))


@pytest.mark.parametrize("name", list(MUTANTS))
def test_suite_catches_mutant(name: str) -> None:
    mutant = MUTANTS[name]
    citing = _all_results()[name]
    assert citing, f"no scenario cites {mutant.rule}, so nothing can catch {name}"
    assert kills(name, citing), (
        f"{name} ({mutant.statement}) broke {mutant.rule}, yet no scenario citing "
        f"{mutant.rule} failed it at MUST level under the "
        f"{catalogue()[mutant.rule].profile} profile with the oracle naming "
        f"{mutant.rule}. Citing scenarios:\n"
        + "\n".join(map(describe, citing))
        + f"\nTo see what else catches it: seamspec run --impl mutant:{name} --profile strict"
    )


def test_every_soo_rule_has_a_mutant() -> None:
    rules = {r.id for r in catalogue() if r.contract == CONTRACT}
    mutated = {mutant.rule for mutant in MUTANTS.values()}
    assert mutated <= rules, f"mutants name unknown rules: {sorted(mutated - rules)}"
    assert rules <= mutated, f"rules with no mutant: {sorted(rules - mutated)}"


def test_soo_mutants_load_as_adapters() -> None:
    adapter = load_adapter("mutant:soo-shared-budget")
    info = adapter.info()
    assert info.name == "seamspec-mutant-soo-shared-budget"
    assert info.details["breaks"] == "SOO-BUDGET"
    assert info.contracts == ("shell-output",)


@pytest.mark.parametrize(
    ("batch", "origin", "size"),
    [
        (batch1.MUTANTS, "outsider batch 1", 16),
        (batch2.MUTANTS, "outsider batch 2", 7),
        (batch4.MUTANTS, "outsider batch 4", 7),
        (batch5.MUTANTS, "outsider batch 5", 7),
        (batch6.MUTANTS, "outsider batch 6", 7),
        (batch7.MUTANTS, "outsider batch 7", 7),
        (batch8.MUTANTS, "outsider batch 8", 7),
        (batch9.MUTANTS, "outsider batch 9", 7),
        (batch10.MUTANTS, "outsider batch 10", 7),
        # batch 11 keeps every variant in VARIANTS, the ones not caught yet in PENDING
        (batch11.VARIANTS, "outsider batch 11", 7),
        (batch13.VARIANTS, "outsider batch 13", 7),
        (batch14.VARIANTS, "outsider batch 14", 7),
    ],
)
def test_outsider_batch_is_registered_whole(
    batch: Mapping[
        str,
        batch1.OutsiderMutant
        | batch2.OutsiderMutant
        | batch4.OutsiderMutant
        | batch5.OutsiderMutant
        | batch6.OutsiderMutant
        | batch7.OutsiderMutant
        | batch8.OutsiderMutant
        | batch9.OutsiderMutant
        | batch10.OutsiderMutant
        | batch11.OutsiderMutant
        | batch13.OutsiderMutant
        | batch14.OutsiderMutant,
    ],
    origin: str,
    size: int,
) -> None:
    """Every variant of a batch is a mutant, under its own name, rule and statement,
    except those it lists as unseen, pending or rejected."""
    for name, variant in batch.items():
        assert name.startswith(
            (
                "out-soo-",
                "out-soo4-",
                "out-soo5-",
                "out-soo6-",
                "out-soo7-",
                "out-soo8-",
                "out-soo9-",
                "out-soo10-",
                "out-soo11-",
                "out-b13soo-",
                "out-b14soo-",
            )
        )
        unseen = {
            *batch4.UNSEEN,
            *batch8.UNSEEN,
            *batch9.UNSEEN,
            *batch10.UNSEEN,
            *batch11.UNSEEN,
            *batch11.PENDING,
            *batch11.REJECTED,
            *batch13.UNSEEN,
            *batch13.PENDING,
            *batch13.REJECTED,
            *batch14.UNSEEN,
            *batch14.PENDING,
            *batch14.REJECTED,
        } - NOW_SEEN
        if name in unseen:
            assert name not in MUTANTS, f"{name} is listed as unseen, yet registered"
            continue
        mutant = MUTANTS[name]
        assert (mutant.rule, mutant.statement) == (variant.rule, variant.statement)
        assert mutant.origin == origin
    assert len(batch) == size
    assert set(MUTANTS) >= NOW_SEEN, "a variant no longer unseen must be registered"
    assert set(batch11.MUTANTS) == (
        set(batch11.VARIANTS) - set(batch11.PENDING) - set(batch11.REJECTED) - set(batch11.UNSEEN)
    )
    assert set(batch13.MUTANTS) == (
        set(batch13.VARIANTS) - set(batch13.PENDING) - set(batch13.REJECTED) - set(batch13.UNSEEN)
    )
    assert set(batch14.MUTANTS) == (
        set(batch14.VARIANTS) - set(batch14.PENDING) - set(batch14.REJECTED) - set(batch14.UNSEEN)
    )
    assert "out-soo9-timeout-kill-drain-then-cancel" in NOW_SEEN
    assert set(batch13.RELABELLED) <= set(batch13.MUTANTS)
    for name, (label, _why) in batch13.RELABELLED.items():
        assert label != batch13.MUTANTS[name].rule, name
    assert set(batch14.RELABELLED) <= set(batch14.MUTANTS)


@pytest.mark.parametrize("number", [1, 2, 4, 5, 6, 7, 8, 9])
def test_each_base_as_written_is_a_mutant(number: int) -> None:
    """Every base waited for the pipes after a time limit: the kit fixed it, the bug stays."""
    mutant = MUTANTS[f"out-soo-base{number}-timeout-waits-for-pipes"]
    assert (mutant.rule, mutant.origin) == ("SOO-TIMEOUT", f"outsider batch {number}")
    assert mutant.outsider is not None
    assert load_adapter("mutant:out-soo-late-chunk-after-finish").info().details["origin"] == (
        "outsider batch 1"
    )
