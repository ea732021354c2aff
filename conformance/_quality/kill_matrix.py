"""The kill matrix: every deliberately broken implementation against the suite.

A mutant is *killed* when some scenario fails it (status ``fail``: an error or a hang is
not a verdict). It is *caught for the right reason* when at least one killing scenario
cites the rule the mutant breaks; otherwise the suite only catches it by accident, and
the rule's own scenarios are not sharp enough.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from seamspec.conformance._core.catalogue import catalogue
from seamspec.conformance._core.runner import Runner
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._quality.mutants import all_mutants, mutant_adapter

__all__ = ["MutantOutcome", "kill_matrix", "mutant_names"]


@dataclass
class MutantOutcome:
    name: str
    rule: str
    statement: str
    contract: str
    killed_by: list[str] = field(default_factory=list)
    killed_by_citing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

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
        }


def _judge_one(name: str, scenarios: list[Scenario]) -> MutantOutcome:
    mutant = all_mutants()[name]
    contract = catalogue()[mutant.rule].contract
    outcome = MutantOutcome(name, mutant.rule, mutant.statement, contract)
    adapter = mutant_adapter(name)
    try:
        runner = Runner(adapter, timeout=60.0)
        for scenario in scenarios:
            if scenario.contract != contract:
                continue
            result = runner.run_one(scenario)
            if result.status == "fail":
                outcome.killed_by.append(scenario.id)
                if mutant.rule in scenario.rules:
                    outcome.killed_by_citing.append(scenario.id)
            elif result.status == "error":
                outcome.errors.append(scenario.id)
    finally:
        adapter.close()
    return outcome


def mutant_names(contracts: Iterable[str] | None = None) -> list[str]:
    """The mutants ``kill_matrix`` runs for ``contracts`` (all when None), in name order."""
    wanted = set(contracts) if contracts else None
    return [
        name
        for name, mutant in sorted(all_mutants().items())
        if wanted is None or catalogue()[mutant.rule].contract in wanted
    ]


def kill_matrix(
    scenarios: list[Scenario],
    *,
    contracts: Iterable[str] | None = None,
    jobs: int = 1,
    on_outcome: Callable[[MutantOutcome], None] | None = None,
) -> list[MutantOutcome]:
    names = mutant_names(contracts)
    outcomes: list[MutantOutcome] = []
    if jobs == 1:
        for name in names:
            outcome = _judge_one(name, scenarios)
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
        return outcomes
    # Reported as each mutant finishes (so progress is steady), returned in name order.
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_judge_one, name, scenarios) for name in names]
        for future in as_completed(futures):
            outcome = future.result()
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
    return sorted(outcomes, key=lambda o: names.index(o.name))
