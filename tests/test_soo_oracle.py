"""The shell-output oracle on hand-written traces: findings no Python run produces.

The kit's own driver always times its calls and always ends a call with ``run_end``, and
no mutant can time out without a time limit unless a scenario waited on a clock. An
adapter in another language can still send such traces; the oracle must judge them
under the right rule rather than crash or stay silent. The contract page lists these
branches under "Oracle coverage".
"""

from __future__ import annotations

from typing import Any

import pytest

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


def _ids_trace(*, readers_before_b: bool) -> list[dict[str, Any]]:
    """soo-ids-follow-creation-not-output, with a's ID drawn only at its first output."""
    ok = {"exit_code": 0, "timed_out": False, "stdout_truncated": False}
    found = {"type": "thread", "role": "drain", "call": "a", "thread": "t9", "seen_by": "kit"}
    trace: list[dict[str, Any]] = [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        {"type": "run_start", "call": "a"},
        *([found] if readers_before_b else []),
        {"type": "gate_released", "gate": "a-running"},
        {"type": "run_start", "call": "b"},
        *([] if readers_before_b else [found]),
    ]
    for call, observer, ident, text in (("b", "second", 1, "b"), ("a", "first", 2, "a")):
        trace += [
            {"type": "invocation", "call": call, "invocation": ident},
            *(
                {"type": kind, "observer": observer, "hook": hook, "invocation": ident,
                 "thread": f"p{ident}", **extra}
                for hook, extra in (("on_output", {"stream": "stdout", "hex": text.encode().hex()}),
                                    ("on_finish", {}))
                for kind in ("callback_enter", "callback_exit")
            ),
            {"type": "run_end", "call": call, "outcome": "returned", "elapsed": 0.1,
             "result": {**ok, "stdout_hex": text.encode().hex(), "stderr_hex": "",
                        "stderr_truncated": False}},
        ]  # fmt: skip
    return [*trace, {"type": "idle", "ok": True}]


def test_a_call_whose_pipes_were_read_first_was_created_first() -> None:
    """SOO-IDS: readers the kit found before the other call started prove creation order."""
    request = _request("soo-ids-follow-creation-not-output")
    findings = check(request, {}, _ids_trace(readers_before_b=True))
    assert (
        "SOO-IDS",
        "a had its child's pipes read before b started, yet b got the lower ID 1 (a got 2)",
    ) in findings


def test_readers_found_only_after_the_other_call_started_prove_nothing() -> None:
    """Without that evidence (an adapter over the wire reports none) only `then` can tell."""
    request = _request("soo-ids-follow-creation-not-output")
    assert "SOO-IDS" not in _rules(check(request, {}, _ids_trace(readers_before_b=False)))


def _missed_finish_trace(first_raised: str | None) -> list[dict[str, Any]]:
    """soo-session-finish-panic-next-session: s2 never gets on_output nor on_finish.

    ``first_raised`` is the hook that raised in s1 (None: nothing raised).
    """
    enter = {"type": "callback_enter", "observer": "pane", "invocation": 1, "thread": "t2"}

    def exit_(hook: str) -> dict[str, Any]:
        outcome = "raised" if hook == first_raised else "returned"
        return {**enter, "type": "callback_exit", "hook": hook, "outcome": outcome}

    s1: list[dict[str, Any]] = [
        {"type": "run_start", "call": "s1"},
        {"type": "invocation", "call": "s1", "invocation": 1},
        {"type": "offer", "call": "s1", "stream": "stdout", "hex": "78"},
        {**enter, "hook": "on_output", "stream": "stdout", "hex": "78"},
        exit_("on_output"),
        {"type": "finish_requested", "call": "s1"},
    ]
    if first_raised != "on_output":
        s1 += [{**enter, "hook": "on_finish"}, exit_("on_finish")]
    return [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        *s1,
        {"type": "run_start", "call": "s2"},
        {"type": "invocation", "call": "s2", "invocation": 2},
        {"type": "offer", "call": "s2", "stream": "stdout", "hex": "79"},
        {"type": "finish_requested", "call": "s2"},
        {"type": "kit_timeout", "observer": "pane", "hook": "on_finish", "waiting": "entered"},
        {"type": "idle", "ok": True},
    ]


def test_a_callback_waited_for_in_vain_names_the_earlier_raise() -> None:
    """The missing callback is SOO-FINISH-PANIC or SOO-PANIC after a raise, never SOO-LIVE."""
    request = _request("soo-session-finish-panic-next-session")
    cases = {"on_finish": "SOO-FINISH-PANIC", "on_output": "SOO-PANIC", None: "SOO-FINISH"}
    for raised, rule in cases.items():
        waits = [
            (r, m)
            for r, m in check(request, {}, _missed_finish_trace(raised))
            if m.startswith("pane ")
        ]
        assert [r for r, _ in waits] == [rule], (raised, waits)


def _cancelled_with(*chunks: tuple[str, str]) -> list[dict[str, Any]]:
    """A cancelled run ``a`` whose observer ``pane`` got ``chunks`` (stream, text), one
    before the cancellation and the rest after it, each returning at once."""
    trace: list[dict[str, Any]] = [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        {"type": "run_start", "call": "a"},
        {"type": "invocation", "call": "a", "invocation": 1},
    ]
    for n, (stream, text) in enumerate(chunks):
        if n == 1:
            trace.append({"type": "cancel_requested", "call": "a"})
        common = {"observer": "pane", "hook": "on_output", "invocation": 1, "thread": "t2"}
        trace.append(
            {"type": "callback_enter", **common, "stream": stream, "hex": text.encode().hex()}
        )
        trace.append({"type": "callback_exit", **common, "outcome": "returned"})
    if len(chunks) < 2:
        trace.append({"type": "cancel_requested", "call": "a"})
    trace += [
        {"type": "run_end", "call": "a", "outcome": "cancelled", "elapsed": 0.01},
        {"type": "cancel_returned", "call": "a", "elapsed": 0.01},
        {"type": "idle", "ok": True},
    ]
    return trace


def test_output_a_detached_grandchild_wrote_after_the_kill_is_soo_cancel() -> None:
    """One callback may begin after the cancellation; never one with what was written after it."""
    request = _request("soo-cancel-detached-grandchild-writes-after-kill")
    findings = check(request, {}, _cancelled_with(("stdout", "one"), ("stdout", "late\n")))
    assert [m for r, m in findings if r == "SOO-CANCEL"] == [
        "a (invocation 1): stdout delivered b'late\\n', which a detached grandchild wrote only "
        "after the child was killed, after the cancellation: chunks must stop being accepted "
        "at once, before the runner ends the command's processes"
    ]
    assert check(request, {}, _cancelled_with(("stdout", "one"))) == []


def _timed_out_with(*chunks: tuple[str, str], returned: bool = True) -> list[dict[str, Any]]:
    """A run ``a`` whose observer got ``chunks`` and which then timed out (or, with
    ``returned=False``, which the kit had to give up on)."""
    trace: list[dict[str, Any]] = [
        {"type": "thread", "role": "caller", "invocation": None, "thread": "t1"},
        {"type": "run_start", "call": "a"},
        {"type": "invocation", "call": "a", "invocation": 1},
    ]
    for stream, text in chunks:
        common = {"observer": "pane", "hook": "on_output", "invocation": 1, "thread": "t2"}
        trace.append(
            {"type": "callback_enter", **common, "stream": stream, "hex": text.encode().hex()}
        )
        trace.append({"type": "callback_exit", **common, "outcome": "returned"})
    if returned:
        result = {"timed_out": True, "exit_code": None, "stdout_hex": b"one".hex()}
        trace.append(
            {
                "type": "run_end",
                "call": "a",
                "outcome": "returned",
                "elapsed": 2.01,
                "result": result,
            }
        )
    else:
        trace.append({"type": "kit_timeout", "call": "a", "waiting": "join"})
        trace.append({"type": "run_end", "call": "a", "outcome": "cancelled", "elapsed": 9.0})
    trace.append({"type": "idle", "ok": True})
    return trace


@pytest.mark.parametrize("returned", [True, False], ids=["timed-out", "kit-gave-up"])
def test_output_a_detached_grandchild_wrote_after_the_limit_is_soo_timeout(
    returned: bool,
) -> None:
    """Batch 9's kill-drain-then-cancel: what the grandchild wrote after the kill was shown."""
    request = _request("soo-timeout-detached-grandchild-writes-after-kill")
    late = _timed_out_with(("stdout", "one"), ("stderr", "late too\n"), returned=returned)
    assert [m for r, m in check(request, {}, late) if r == "SOO-TIMEOUT"][:1] == [
        "a (invocation 1): stderr delivered b'late too\\n', which a detached grandchild wrote "
        "only after the child was killed, after the time limit fired: chunks must stop being "
        "accepted at once, before the runner ends the command's processes"
    ]
    assert check(request, {}, _timed_out_with(("stdout", "one"))) == []
