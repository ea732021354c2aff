"""The checker ``nox -s conformance`` applies to the reference's reports can fail, for each reason."""

from __future__ import annotations

from typing import Any

from tests.reference_report import problems

SUITE = ["a", "b", "c"]


def _report(*rows: tuple[str, str]) -> dict[str, Any]:
    return {"results": [{"scenario": s, "status": st, "detail": f"{st} detail"} for s, st in rows]}


def test_every_scenario_passed_in_order_is_no_problem() -> None:
    assert problems(_report(("a", "pass"), ("b", "pass"), ("c", "pass")), SUITE) == []


def test_a_skip_is_a_problem_although_the_verdict_conforms() -> None:
    found = problems(_report(("a", "pass"), ("b", "skip"), ("c", "pass")), SUITE)
    assert found == ["b: skip: skip detail"]


def test_results_out_of_the_suite_order_are_a_problem() -> None:
    (found,) = problems(_report(("b", "pass"), ("a", "pass"), ("c", "pass")), SUITE)
    assert "not the suite in its order" in found


def test_a_missing_scenario_is_named() -> None:
    (found,) = problems(_report(("a", "pass"), ("c", "pass")), SUITE)
    assert "missing ['b']" in found
