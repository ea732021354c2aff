"""The shell-output oracle on hand-written traces: findings no Python run produces.

The kit's own driver always times its calls and always ends a call with ``run_end``, and
no mutant can time out without a time limit unless a scenario waited on a clock. An
adapter in another language can still send such traces; the oracle must judge them
under the right rule rather than crash or stay silent. The contract page lists these
branches under "Oracle coverage".
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance import load_scenarios
from seamspec.conformance._contracts.shell_output.oracle import check


def _request(scenario_id: str) -> dict[str, Any]:
    scenario = next(s for s in load_scenarios() if s.id == scenario_id)
    return scenario.request()


def _result(**fields: Any) -> dict[str, Any]:
    base = {
        "exit_code": None,
        "stdout_hex": "",
        "stderr_hex": "",
        "stdout_truncated": False,
        "stderr_truncated": False,
        "timed_out": True,
    }
    return {**base, **fields}


def _rules(findings: list[tuple[str, str]]) -> set[str]:
    return {rule for rule, _ in findings}


def test_a_timeout_without_a_time_limit_is_soo_timeout() -> None:
    request = _request("soo-exit-code-and-streams")  # no time limit anywhere
    trace: list[dict[str, Any]] = [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        {"type": "run_start", "call": "a"},
        {"type": "run_end", "call": "a", "outcome": "returned", "result": _result()},
        {"type": "idle", "ok": True},
    ]
    findings = check(request, {}, trace)
    assert ("SOO-TIMEOUT", "a: timed out with no time limit") in findings


def test_a_bounded_call_without_elapsed_is_judged_under_the_bound() -> None:
    request = _request("soo-timeout-result-silent-child")  # run a, within 1.5, timeout 0.3
    trace: list[dict[str, Any]] = [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        {"type": "run_start", "call": "a"},
        {"type": "run_end", "call": "a", "outcome": "returned", "result": _result()},
        {"type": "idle", "ok": True},
    ]
    findings = check(request, {}, trace)
    assert ("SOO-TIMEOUT", "a: the trace does not say how long the call took") in findings


def test_a_bounded_cancel_without_elapsed_is_soo_cancel() -> None:
    request = _request("soo-session-cancel-returns-within")
    trace: list[dict[str, Any]] = [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        {"type": "run_start", "call": "s"},
        {"type": "invocation", "call": "s", "invocation": 7},
        {"type": "offer", "call": "s", "stream": "stdout", "hex": "6f6e65"},
        {"type": "cancel_requested", "call": "s"},
        {"type": "cancel_returned", "call": "s"},
        {"type": "idle", "ok": True},
    ]
    findings = check(request, {}, trace)
    assert ("SOO-CANCEL", "s: the trace does not say how long cancel took") in findings


def test_a_call_that_never_ended_is_no_result_finding_and_no_crash() -> None:
    request = _request("soo-exit-code-and-streams")
    trace: list[dict[str, Any]] = [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        {"type": "run_start", "call": "a"},
        {"type": "idle", "ok": True},
    ]
    assert "SOO-ENVELOPE" not in _rules(check(request, {}, trace))
