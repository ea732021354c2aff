"""Generated write-observer-chain scenarios (the shipped strategy), judged by the oracle.

The reference must satisfy the oracle and the derived expectations on any generated
scenario; a chain that reverses after_write must be caught on some of them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from seamspec.conformance import judge, load_adapter
from seamspec.conformance._contracts.write_observer_chain.model import flatten
from seamspec.conformance._contracts.write_observer_chain.strategies import woc_scenarios
from seamspec.conformance._quality.fuzz import fuzz, scenario_from_document

REFERENCE = load_adapter("reference")


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(woc_scenarios())
def test_reference_satisfies_the_oracle(document: dict[str, Any]) -> None:
    scenario = scenario_from_document(document)
    assert judge(scenario, REFERENCE.run(scenario.request())) == []


def test_reversed_after_write_is_found_and_shrunk() -> None:
    failure = fuzz(
        load_adapter("mutant:woc-after-reversed"), "write-observer-chain", examples=300, seed=1
    )
    assert failure is not None
    assert "WOC-ORDER-AFTER" in failure.detail
    # Shrunk, yet with at least two observers: the least that can show an order.
    assert len(flatten(failure.document["given"]["observers"])) >= 2
