"""Generated write-observer-chain scenarios (the shipped strategy), judged by the oracle.

A chain that reverses after_write must be caught on some of them. That the reference
satisfies the oracle on generated scenarios is the ``fuzz`` nox session's proof (100 per
contract, seeded), not repeated here.
"""

from __future__ import annotations

from seamspec.conformance import load_adapter
from seamspec.conformance._contracts.write_observer_chain.model import flatten
from seamspec.conformance._quality.fuzz import fuzz, fuzz_contract


def test_reversed_after_write_is_found_and_shrunk() -> None:
    failure = fuzz(
        load_adapter("mutant:woc-after-reversed"), "write-observer-chain", examples=300, seed=1
    )
    assert failure is not None
    assert "WOC-ORDER-AFTER" in failure.detail
    # Shrunk, yet with at least two observers: the least that can show an order.
    assert len(flatten(failure.document["given"]["observers"])) >= 2


def test_without_shrinking_the_search_stops_at_the_first_failing_example() -> None:
    """``shrink=False`` (what the kit's own reachability tests use) finds the same bug
    with the same seed, judges fewer examples, and says its finding is not shrunk."""
    adapter = load_adapter("mutant:woc-after-reversed")
    shrunk = fuzz_contract(adapter, "write-observer-chain", examples=300, seed=1)
    quick = fuzz_contract(adapter, "write-observer-chain", examples=300, seed=1, shrink=False)
    assert [f.kind for f in quick.findings] == ["failure"]
    (found,) = quick.findings
    assert "WOC-ORDER-AFTER" in found.detail
    assert not found.shrunk
    assert "shrinking was turned off" in found.note
    assert "not fully shrunk" in found.yaml_text("woc-fuzz-found-1")
    assert shrunk.findings[0].shrunk
    assert 0 < quick.judged < shrunk.judged
