"""The kill matrix: every deliberately broken implementation against the suite.

A mutant is *killed* when a scenario that **cites the rule it breaks** fails it: status
``fail`` (an error or a hang is not a verdict) with a finding at MUST level that counts
under the rule's profile (a mutant of an upstream rule must fail the default profile).
Only a SHOULD rule that no MUST scenario cites (WOC-FAIL-WARN: a wrong warning count never
makes a chain non-conforming) is killed at SHOULD level. The meta-tests of each room
(``tests/test_*_mutants.py``) ask more where the room's oracle can give it: that the
oracle itself names the rule. A mutant that only other
scenarios fail is *caught elsewhere*: the suite catches it by accident, and the rule's own
scenarios are not sharp enough. One that nothing fails *survived*.

The matrix looks for the first kill, not for every one. Each mutant runs its contract's
scenarios only: those citing its rule first (shortest deliberate waits first), stopping
at the first that kills it; only when none does, the other scenarios of its contract, to
tell "caught elsewhere" from "survived". So ``killed_by`` lists the scenarios run before
the search stopped that failed the mutant, not every scenario that would. Mutants run
side by side in threads: each scenario gets a fresh event loop and fresh objects, and
most of a mutant's time is spent waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from seamspec.conformance._core.catalogue import catalogue
from seamspec.conformance._core.runner import Runner, ScenarioResult
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._core.schedule import expected_wait, side_by_side
from seamspec.conformance._quality.mutants import all_mutants, mutant_adapter

__all__ = ["MutantOutcome", "kill_level", "kill_matrix", "kills", "mutant_names"]

#: Mutants judged at once by default: each mostly waits on its scenarios.
SIDE_BY_SIDE = 8


@dataclass
class MutantOutcome:
    name: str
    rule: str
    statement: str
    contract: str
    killed_by: list[str] = field(default_factory=list)
    killed_by_citing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: How many scenarios ran before the search stopped.
    scenarios_run: int = 0

    @property
    def verdict(self) -> str:
        if self.killed_by_citing:
            return "killed"
        if self.killed_by:
            return "caught-elsewhere"
        return "survived"

    def to_json(self) -> dict[str, Any]:
        return {
            "mutant": self.name,
            "rule": self.rule,
            "contract": self.contract,
            "statement": self.statement,
            "verdict": self.verdict,
            "killed_by": self.killed_by,
            "killed_by_citing": self.killed_by_citing,
            "errors": self.errors,
            "scenarios_run": self.scenarios_run,
        }


def kill_level(rule_id: str, scenarios: Iterable[Scenario]) -> str:
    """The level a kill of a mutant of ``rule_id`` needs: MUST, unless the rule is a
    SHOULD rule that no MUST scenario cites (it has no MUST side to fail)."""
    rule = catalogue()[rule_id]
    if rule.level == "MUST":
        return "MUST"
    cited_at = {s.level for s in scenarios if rule_id in s.rules}
    return "MUST" if "MUST" in cited_at else "SHOULD"


def kills(result: ScenarioResult, rule_id: str, level: str) -> bool:
    """Whether ``result`` kills a mutant of ``rule_id`` for the right reason (module doc)."""
    if result.status != "fail" or rule_id not in result.scenario.rules:
        return False
    profile = catalogue()[rule_id].profile
    return any(f.level == level and f.counts_under(profile) for f in result.findings)


def _judge_one(name: str, scenarios: list[Scenario]) -> MutantOutcome:
    mutant = all_mutants()[name]
    contract = catalogue()[mutant.rule].contract
    outcome = MutantOutcome(name, mutant.rule, mutant.statement, contract)
    mine = [s for s in scenarios if s.contract == contract]
    level = kill_level(mutant.rule, mine)
    citing = sorted((s for s in mine if mutant.rule in s.rules), key=expected_wait)
    others = [s for s in mine if mutant.rule not in s.rules]
    adapter = mutant_adapter(name)
    try:
        runner = Runner(adapter, timeout=60.0)
        for scenario in citing:
            if _record(outcome, runner.run_one(scenario), level):
                return outcome
        for scenario in others:
            _record(outcome, runner.run_one(scenario), level)
    finally:
        adapter.close()
    return outcome


def _record(outcome: MutantOutcome, result: ScenarioResult, level: str) -> bool:
    """Note one result; True when it kills the mutant (the search can stop)."""
    outcome.scenarios_run += 1
    if result.status == "error":
        outcome.errors.append(result.scenario.id)
    elif result.status == "fail":
        outcome.killed_by.append(result.scenario.id)
        if kills(result, outcome.rule, level):
            outcome.killed_by_citing.append(result.scenario.id)
            return True
    return False


@cache
def _names() -> tuple[str, ...]:
    return tuple(sorted(all_mutants()))


def mutant_names(contracts: Iterable[str] | None = None) -> list[str]:
    """The mutants ``kill_matrix`` runs for ``contracts`` (all when None), in name order."""
    wanted = set(contracts) if contracts else None
    return [
        name
        for name in _names()
        if wanted is None or catalogue()[all_mutants()[name].rule].contract in wanted
    ]


def kill_matrix(
    scenarios: list[Scenario],
    *,
    contracts: Iterable[str] | None = None,
    names: Iterable[str] | None = None,
    jobs: int = SIDE_BY_SIDE,
    on_outcome: Callable[[MutantOutcome], None] | None = None,
) -> list[MutantOutcome]:
    """Each mutant's outcome, in name order; ``on_outcome`` sees them as they finish.

    ``names`` picks mutants by name (with ``contracts``, both must match).
    """
    chosen = mutant_names(contracts)
    if names is not None:
        wanted = set(names)
        unknown = wanted - set(all_mutants())
        if unknown:
            raise KeyError(f"no such mutant: {', '.join(sorted(unknown))}")
        chosen = [name for name in chosen if name in wanted]
    outcomes = side_by_side(
        lambda name: _judge_one(name, scenarios),
        chosen,
        max(1, jobs),
        on_done=on_outcome or (lambda _: None),
        stop=lambda _: False,
    )
    return sorted(outcomes, key=lambda o: chosen.index(o.name))
