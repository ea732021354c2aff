"""Which scenarios cite which rules."""

from __future__ import annotations

from collections.abc import Iterable

from seamspec.conformance._core.catalogue import catalogue
from seamspec.conformance._core.scenario import Scenario

__all__ = ["rule_coverage"]


def rule_coverage(scenarios: Iterable[Scenario]) -> dict[str, list[str]]:
    """Every catalogue rule ID mapped to the sorted IDs of the scenarios citing it."""
    coverage: dict[str, list[str]] = {rule.id: [] for rule in catalogue()}
    for scenario in scenarios:
        for rule_id in scenario.rules:
            coverage.setdefault(rule_id, []).append(scenario.id)
    return {rule_id: sorted(ids) for rule_id, ids in coverage.items()}
