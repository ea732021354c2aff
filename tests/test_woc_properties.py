"""Generated write-observer-chain scenarios (the shipped strategy), judged by the oracle.

A chain that reverses after_write must be caught on some of them. That the reference
satisfies the oracle on generated scenarios is the ``fuzz`` nox session's proof (100 per
contract, seeded), not repeated here.
"""

from __future__ import annotations

from seamspec.conformance import load_adapter
from seamspec.conformance._contracts.write_observer_chain.model import flatten
from seamspec.conformance._quality.fuzz import fuzz


def test_reversed_after_write_is_found_and_shrunk() -> None:
    failure = fuzz(
        load_adapter("mutant:woc-after-reversed"), "write-observer-chain", examples=300, seed=1
    )
    assert failure is not None
    assert "WOC-ORDER-AFTER" in failure.detail
    # Shrunk, yet with at least two observers: the least that can show an order.
    assert len(flatten(failure.document["given"]["observers"])) >= 2
