"""The checker ``nox -s rust`` applies to the Rust example's report can fail, for each reason."""

from __future__ import annotations

from typing import Any

import yaml

from tests.rust_report import MANIFEST, problems


def _result(scenario: str, counts_as: str, detail: str = "") -> dict[str, Any]:
    return {
        "scenario": scenario,
        "contract": "shell-output",
        "counts_as": counts_as,
        "detail": detail,
    }


def _good() -> list[dict[str, Any]]:
    listed = yaml.safe_load(MANIFEST.read_text())["expected_failures"]
    results = [_result(name, "recommendation") for name in listed]
    results.append(_result("soo-capped-echo", "pass"))
    results.append(
        _result(
            "soo-budget-per-stream-process",
            "skip",
            "seamspec-rust-example does not declare the feature(s) soo-live-budget",
        )
    )
    return results


def test_a_report_that_keeps_the_promise_passes() -> None:
    assert problems({"results": _good()}) == []


def test_a_failure_is_reported() -> None:
    results = [*_good(), _result("soo-lifo-order", "failure", "[SOO-PIPE-ORDER] ...")]
    assert problems({"results": results}) == ["soo-lifo-order: failure: [SOO-PIPE-ORDER] ..."]


def test_a_skip_for_another_reason_is_reported() -> None:
    results = [*_good(), _result("soo-x", "skip", "the adapter raised Unsupported")]
    assert problems({"results": results}) == ["soo-x: skip: the adapter raised Unsupported"]


def test_the_recommendations_must_be_the_manifest() -> None:
    results = [r for r in _good() if r["scenario"] != "soo-timeout-unobserved"]
    results.append(_result("soo-capped-echo-2", "recommendation"))
    (found,) = problems({"results": results})
    assert "['soo-timeout-unobserved']" in found
    assert "['soo-capped-echo-2']" in found


def test_no_results_is_not_a_pass() -> None:
    assert problems({"results": []})
