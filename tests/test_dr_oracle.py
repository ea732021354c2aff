"""The DR oracle, ``then`` and linter on hand-written traces and scenarios.

The Python driver always ends a record it traced, so a record that never returned can
only come from an adapter in another language; it is checked here, on the smallest
trace that shows it, and listed on the contract page ("Oracle coverage"). The rest of
this file pins the new ``then`` vocabulary (commit contents, ``never_visible``,
``order``) and the linter's guard against gates that would race a short time limit.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from seamspec.conformance import load_adapter
from seamspec.conformance._contracts.dispatch_recorder import driver, expect, model, oracle

REWRITE = {"pre": {"rewrite": '{"cmd":"ls -1"}'}}


def _request(policy: dict[str, Any], recorder: dict[str, Any] | None) -> dict[str, Any]:
    given = {
        "provider": [{"calls": [{"id": "c1", "tool": "shell", "args": '{"cmd":"ls"}'}]}],
        "policy": {"c1": policy},
        "recorder": recorder,
    }
    return {"id": "dr-x", "contract": "dispatch-recorder", "given": given, "when": []}


def _payload(new_args: str = '{"cmd":"ls -1"}') -> dict[str, Any]:
    return {
        "tool_call_id": "c1",
        "tool_name": "shell",
        "kind": "input_rewrite",
        "original_args": '{"cmd":"ls"}',
        "new_args": new_args,
    }


def _record_enter(n: int = 0) -> dict[str, Any]:
    payload = _payload()
    return {"type": "record_enter", "n": n, "call": "c1", "tool": "shell",
            "kind": "input_rewrite", "payload": payload}  # fmt: skip


def _messages(*contents: tuple[str, str | None, str]) -> list[dict[str, Any]]:
    return [{"role": r, "tool_call_id": c, "content": t} for r, c, t in contents]


def test_a_record_that_never_returned_counts_as_failed() -> None:
    """Another language's adapter may leave a record without its end: it did not succeed."""
    request = _request(REWRITE, {})
    trace: list[dict[str, Any]] = [
        {"type": "turn_start"},
        {"type": "provider_call", "step": 0, "messages": _messages(("user", None, "go"))},
        _record_enter(),
        {
            "type": "tool_run",
            "call": "c1",
            "tool": "shell",
            "args": '{"cmd":"ls -1"}',
            "context": [],
        },
    ]
    found = oracle.check(request, {}, trace)
    assert ("DR-REWRITE-FAIL", "c1: its input_rewrite record failed (never returned) yet the "
            "tool ran") in found  # fmt: skip
    assert any(rule == "DR-RECORD-FIRST" for rule, _ in found)


def test_the_same_finding_is_reported_once() -> None:
    request = _request(REWRITE, {"record": {"error": "no"}})
    run = {"type": "tool_run", "call": "c1", "tool": "shell", "args": "{}", "context": []}
    trace = [
        _record_enter(),
        {"type": "record_exit", "n": 0, "outcome": "error", "reason": "no"},
        run,
        dict(run),
    ]
    found = oracle.check(request, {}, trace)
    assert len(found) == len(set(found))
    assert (
        "DR-REWRITE-FAIL",
        "c1: its input_rewrite record failed (error) yet the tool ran",
    ) in found


def test_commit_contents_and_counts_in_then() -> None:
    step = _messages(("assistant", None, ""), ("tool", "c1", "ok"))
    trace = [{"type": "commit_enter", "n": 0, "messages": step}]
    good = [[{"role": "assistant"}, {"role": "tool", "call": "c1", "content": "ok"}]]
    assert expect.check({}, {"commits": good}, trace) == []
    assert expect.check({}, {"commits": 1}, trace) == []
    wrong = copy.deepcopy(good)
    wrong[0][1]["content_contains"] = "fine"
    assert expect.check({}, {"commits": wrong}, trace) == [
        ("", "commit 0, message 1: content 'ok' lacks 'fine'")
    ]
    short = [[{"role": "assistant"}]]
    assert (
        "expected 1 message(s), observed ['assistant', 'tool:c1']"
        in expect.check({}, {"commits": short}, trace)[0][1]
    )
    assert expect.check({}, {"commits": [[], []]}, trace) == [
        ("", "commit_accepted_step calls: expected 2, observed 1")
    ]


def test_never_visible_looks_at_every_message_the_model_can_see() -> None:
    secret = _messages(("tool", "c1", "token=SECRET-1"))
    for kind in ("provider_call", "commit_enter", "turn_end"):
        found = expect.check(
            {}, {"never_visible": ["SECRET-1"]}, [{"type": kind, "messages": secret}]
        )
        assert len(found) == 1, kind
        assert "SECRET-1" in found[0][1], kind
    hidden = [{"type": "tool_exit", "call": "c1", "result": "token=SECRET-1"}]
    assert expect.check({}, {"never_visible": ["SECRET-1"]}, hidden) == []


def test_order_names_the_events_in_the_trace() -> None:
    trace = [
        {"type": "provider_call", "step": 0, "messages": []},
        _record_enter(),
        {"type": "record_exit", "n": 0, "outcome": "ok"},
        {"type": "tool_run", "call": "c1"},
        {"type": "commit_enter", "n": 0, "messages": []},
        {"type": "commit_exit", "n": 0, "outcome": "ok"},
        {"type": "turn_end", "outcome": "completed", "messages": []},
    ]
    at = model.event_positions(trace)
    assert at["recorded:c1:input_rewrite"] == 2
    assert at["committed:0"] == 5
    ok = [["provider:0", "record:c1:input_rewrite", "recorded:c1:input_rewrite", "tool:c1",
           "commit:0", "committed:0", "turn_end"]]  # fmt: skip
    assert expect.check({}, {"order": ok}, trace) == []
    assert expect.check({}, {"order": [["tool:c1", "recorded:c1:input_rewrite"]]}, trace) == [
        ("", "order: recorded:c1:input_rewrite happened before tool:c1")
    ]
    assert (
        "never happened: ['approval:c1']"
        in expect.check({}, {"order": [["tool:c1", "approval:c1"]]}, trace)[0][1]
    )


def _lint(given: dict[str, Any], when: list[dict[str, Any]], then: dict[str, Any]) -> list[str]:
    data = {"given": given, "when": when, "then": then, "requires": ["record-time-limit"]}
    return [message for _, message in model.lint(data)]


def test_the_linter_refuses_gates_that_race_a_short_limit() -> None:
    given: dict[str, Any] = {
        "provider": [{"calls": [{"id": "c1", "tool": "t", "args": "{}"}]}],
        "policy": {"c1": {"pre": {"rewrite": '{"x":1}'}}},  # one record to wait for
        "recorder": {"record": {"gate": "g"}},
        "record_time_limit": 0.2,
    }
    when: list[dict[str, Any]] = [
        {"start_turn": "t1"},
        {"wait_record": {}},
        {"release": "g"},
        {"join": "t1"},
    ]
    assert any("races the 0.2 s record_time_limit" in m for m in _lint(given, when, {}))
    late = copy.deepcopy(given)
    late["recorder"]["record"]["late"] = True  # deaf to the limit: a release could race it
    assert _lint(late, when, {}) == ["a `late` record needs a `release_late` or `cancel` step"]
    late_released = [*when[:2], {"release_late": "g"}, when[3]]
    assert _lint(late, late_released, {}) == []
    cancelled = [*when[:2], {"cancel": "t1"}, *when[2:]]
    assert _lint(given, cancelled, {}) == []  # released only after the turn was cancelled
    generous = {**given, "record_time_limit": 5.0}
    assert _lint(generous, when, {}) == []


def test_the_linter_refuses_healthy_records_under_a_short_limit() -> None:
    """A record that answers at once races a short limit on a loaded machine (a flake)."""
    given: dict[str, Any] = {
        "provider": [{"calls": [{"id": "c1", "tool": "t", "args": "{}"}]}],
        "policy": {"c1": {"pre": {"rewrite": '{"x":1}'}, "redact": "{}"}},
        "recorder": {"record": [{"ok": True}, {"hang": True}]},
        "record_time_limit": 0.25,
    }
    when: list[dict[str, Any]] = [{"turn": "t1"}]
    problems = _lint(given, when, {})
    assert problems == [
        "this record answers on its own under a 0.25 s record_time_limit, and would race it "
        "on a loaded machine: give a record_time_limit of 1 s or more, or script every "
        "record to hang or be late"
    ]
    assert _lint({**given, "record_time_limit": 1.0}, when, {}) == []
    hung = {**given, "recorder": {"record": {"hang": True}}}
    assert _lint(hung, when, {}) == []
    unscripted = {**given, "recorder": {"commit": {"hang": True}}, "commit_time_limit": 0.05}
    assert any("this commit" not in m and "this record" in m for m in _lint(unscripted, when, {}))


def test_the_linter_keeps_release_after_well_inside_the_limit() -> None:
    given: dict[str, Any] = {
        "provider": [{"calls": [{"id": "c1", "tool": "t", "args": "{}"}]}],
        "policy": {"c1": {"pre": {"rewrite": '{"x":1}'}}},
        "recorder": {"record": {"gate": "g"}},
        "record_time_limit": 4,
    }
    when: list[dict[str, Any]] = [
        {"start_turn": "t1"},
        {"release_after": {"gate": "g", "seconds": 2.5}},
        {"join": "t1"},
    ]
    assert _lint(given, when, {}) == []
    tight = [when[0], {"release_after": {"gate": "g", "seconds": 3.5}}, when[2]]
    assert any(
        "leaves less than 1 s of the 4 s record_time_limit" in m for m in _lint(given, tight, {})
    )
    unlimited = {k: v for k, v in given.items() if k != "record_time_limit"}
    assert "`release_after` is measured against `record_time_limit`: give one" in _lint(
        unlimited, when, {}
    )
    other = [when[0], {"release_after": {"gate": "nope", "seconds": 1}}, when[2]]
    assert "gate 'nope' is not used by any recorder behaviour" in _lint(given, other, {})


def test_the_linter_allows_a_call_id_reused_in_a_later_step_only() -> None:
    call = {"id": "c1", "tool": "t", "args": "{}"}
    later: dict[str, Any] = {"provider": [{"calls": [call]}, {"calls": [call]}], "recorder": {}}
    assert _lint(later, [{"turn": "t1"}], {}) == []
    same: dict[str, Any] = {"provider": [{"calls": [call, call]}], "recorder": {}}
    assert _lint(same, [{"turn": "t1"}], {}) == [
        "tool call ids must be unique within a step; repeated: ['c1']"
    ]


def test_the_linter_checks_names_in_order_and_commits() -> None:
    given: dict[str, Any] = {
        "provider": [{"calls": [{"id": "c1", "tool": "t", "args": "{}"}]}],
        "recorder": {},
        "tools": {"t": {"gate": "slow"}},
    }
    when: list[dict[str, Any]] = [
        {"start_turn": "t1"},
        {"wait_tool": {}},
        {"release_late": "slow"},
        {"join": "t1"},
    ]
    then: dict[str, Any] = {
        "order": [["tool:c9", "release:nope"]],
        "commits": [[{"role": "tool", "call": "c7"}]],
    }
    found = _lint(given, when, then)
    assert "'c9' is not a proposed call id" in found
    assert "'nope' is not a gate" in found
    assert "'c7' is not a proposed call id" in found
    assert "`release_late` waits for `record_time_limit`: give one" in found


def test_a_context_is_judged_by_its_place_in_the_commit() -> None:
    """A context right before its own call's result is in place; before another call's
    result, or as the commit's last message, it is not (DR-COMMIT-STEP)."""
    from seamspec.conformance._contracts.dispatch_recorder.oracle_turn import (
        _misplaced_context,
    )

    def m(role: str, call: str | None = None) -> dict[str, str | None]:
        return {"role": role, "tool_call_id": call, "content": ""}

    assert (
        _misplaced_context([m("assistant"), m("tool", "c1"), m("context", "c2"), m("tool", "c2")])
        is None
    )
    hoisted = _misplaced_context(
        [m("assistant"), m("context", "c2"), m("tool", "c1"), m("tool", "c2")]
    )
    assert hoisted is not None
    assert "followed by tool:c1" in hoisted
    last = _misplaced_context([m("assistant"), m("context", "c1")])
    assert last is not None
    assert "last message" in last


def _cancelled_turn(**end: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """dr-cancel-does-not-wait-for-the-record's shape: cancelled during the record."""
    request = _request(REWRITE, {"record": {"gate": "never"}})
    request["when"] = [
        {"start_turn": "t1"},
        {"wait_record": {"count": 1}},
        {"cancel": {"turn": "t1", "within": 1.0}},
        {"join": "t1"},
    ]
    trace: list[dict[str, Any]] = [
        {"type": "turn_start"},
        {"type": "provider_call", "step": 0, "messages": _messages(("user", None, "go"))},
        _record_enter(),
        {"type": "cancel_requested"},
        {"type": "record_exit", "n": 0, "outcome": "cancelled"},
        {"type": "turn_end", "outcome": "cancelled", **end},
    ]
    return request, trace


def test_a_bounded_cancellation_is_judged_on_since_cancel() -> None:
    """Within the bound passes; past it, or with no duration reported, is DR-CANCEL."""
    request, trace = _cancelled_turn(since_cancel=0.01)
    assert oracle.check(request, {}, trace) == []
    request, trace = _cancelled_turn(since_cancel=10.0)
    assert [rule for rule, _ in oracle.check(request, {}, trace)] == ["DR-CANCEL"]
    request, trace = _cancelled_turn()  # an adapter that does not say how long it took
    assert oracle.check(request, {}, trace) == [
        ("DR-CANCEL", "the trace does not say how long the turn took to end after the cancel")
    ]


def test_the_linter_refuses_a_bound_on_a_deaf_cancellation() -> None:
    data = {
        **_request(REWRITE, {"record": {"gate": "g", "late": True}}),
        "when": [
            {"start_turn": "t1"},
            {"wait_record": {"count": 1}},
            {"cancel": {"turn": "t1", "within": 1.0}},
            {"release": "g"},
            {"join": "t1"},
        ],
        "then": {},
    }
    assert any("deaf to cancellation" in why for _, why in model.lint(data))


def test_an_unchanged_rewrite_cancelled_before_its_record_is_no_finding() -> None:
    """No record, no run, no result: the turn was cancelled first, nothing was skipped."""
    same = {"pre": {"rewrite": '{"cmd":"ls"}'}}  # the call's own arguments
    request = _request(same, {})
    request["when"] = [{"start_turn": "t1"}, {"cancel": "t1"}, {"join": "t1"}]
    trace: list[dict[str, Any]] = [
        {"type": "turn_start"},
        {"type": "provider_call", "step": 0, "messages": _messages(("user", None, "go"))},
        {"type": "cancel_requested"},
        {"type": "turn_end", "outcome": "cancelled", "since_cancel": 0.01},
    ]
    assert oracle.check(request, {}, trace) == []
    skipped = [*trace[:2], {"type": "tool_run", "call": "c1", "tool": "shell",
                            "args": '{"cmd":"ls"}', "context": []}]  # fmt: skip
    assert (
        "DR-REWRITE-UNCHANGED",
        "c1: its rewrite to the very same arguments was never recorded",
    ) in (oracle.check(request, {}, skipped))


def test_a_raised_tool_is_judged_only_once_its_redaction_was_recorded() -> None:
    """A raised tool's failure text is the implementation's: without a redaction record
    of it the kit knows no original, so nothing is judged; with one, that record's
    ``original_result`` is the original DR-REDACT-FAIL withholds."""
    request = _request({"redact": "[tool failed] [redacted]"}, {"record": {"error": "down"}})
    text = "[tool failed] ScriptedFailure('token=sk-9')"
    start: list[dict[str, Any]] = [
        {"type": "turn_start"},
        {"type": "provider_call", "step": 0, "messages": _messages(("user", None, "go"))},
        {"type": "tool_run", "call": "c1", "tool": "shell", "args": '{"cmd":"ls"}', "context": []},
        {"type": "tool_exit", "call": "c1", "raised": "token=sk-9"},
    ]
    end = {"type": "turn_end", "outcome": "completed",
           "messages": _messages(("user", None, "go"), ("tool", "c1", text))}  # fmt: skip
    unjudged = oracle.check(request, {}, [*start, end])
    assert [f for f in unjudged if not f[0].startswith("DR-COMMIT")] == []  # no commit traced
    payload = {"tool_call_id": "c1", "tool_name": "shell", "kind": "result_redaction",
               "original_result": text, "redacted_result": "[tool failed] [redacted]"}  # fmt: skip
    recorded = [
        *start,
        {
            "type": "record_enter",
            "n": 0,
            "call": "c1",
            "tool": "shell",
            "kind": "result_redaction",
            "payload": payload,
        },
        {"type": "record_exit", "n": 0, "outcome": "error", "reason": "down"},
        end,
    ]
    rules = {rule for rule, _ in oracle.check(request, {}, recorded)}
    assert {"DR-REDACT-FAIL", "DR-OUTCOME-TEXT"} <= rules


def test_a_commit_list_changed_afterwards_is_named_dr_commit_step() -> None:
    """The driver's ``commit_changed``: the harness changed a list it had handed over."""
    request = _request({"pre": {"allow": True}}, {})
    step = _messages(("assistant", None, ""))
    trace: list[dict[str, Any]] = [
        {"type": "turn_start"},
        {"type": "provider_call", "step": 0, "messages": _messages(("user", None, "go"))},
        {"type": "commit_enter", "n": 0, "messages": step},
        {"type": "commit_exit", "n": 0, "outcome": "ok"},
        {"type": "commit_changed", "n": 0, "messages": []},
        {"type": "turn_end", "outcome": "completed", "messages": _messages(("user", None, "go"))},
    ]
    found = [m for rule, m in oracle.check(request, {}, trace) if rule == "DR-COMMIT-STEP"]
    assert any("changed after it was handed over" in m for m in found), found


def test_a_step_waiting_on_a_hung_turn_outlasts_the_kit_turn_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record with no time limit hangs while a step waits for a later commit: the kit's
    turn limit stops the turn and the trace is judged (DR-HANG), never an error from the
    step giving up at the same moment (the two limits were equal, and the same scenario
    counted as a failure or an error by chance)."""
    monkeypatch.setattr(driver, "TURN_LIMIT", 0.3)
    monkeypatch.setattr(driver, "WAIT_LIMIT", 0.3)  # as long as the turn's: raced before
    request = _request(REWRITE, {"record": {"hang": True}, "commit": {"gate": "g", "late": True}})
    request["given"].update(record_time_limit=0.05, commit_time_limit=0.05)
    request["when"] = [{"start_turn": "t1"}, {"release_late": "g"}, {"join": "t1"}]
    mutant = load_adapter("mutant:dr-limit-ignored")
    try:
        trace = mutant.run(request)
    finally:
        mutant.close()
    kinds = [event["type"] for event in trace]
    assert "kit_timeout" in kinds
    assert "wait_unmet" in kinds
    assert any(rule == "DR-HANG" for rule, _ in oracle.check(request, {}, trace))


@pytest.mark.parametrize(
    ("run", "says"),
    [
        ({"args": '{"cmd":"ls"}', "context": ["another call's context"]}, "context"),
        ({"args": '{"cmd":"ls -la"}', "context": []}, "args"),
    ],
)
def test_an_allowed_call_runs_only_with_what_its_own_records_authorised(
    run: dict[str, Any], says: str
) -> None:
    """DR-RECORD-FIRST (outsider batch 9): an allowed call has no record of its own, so
    a context or arguments other than its proposed ones are a mutation nothing authorised."""
    request = _request({"pre": {"allow": True}}, {})
    trace: list[dict[str, Any]] = [
        {"type": "turn_start"},
        {"type": "provider_call", "step": 0, "messages": _messages(("user", None, "go"))},
        {"type": "tool_run", "call": "c1", "tool": "shell", **run},
        {"type": "tool_exit", "call": "c1", "result": "ok"},
        {"type": "turn_end", "outcome": "completed",
         "messages": _messages(("user", None, "go"), ("tool", "c1", "ok"))},
    ]  # fmt: skip
    found = [m for rule, m in oracle.check(request, {}, trace) if rule == "DR-RECORD-FIRST"]
    assert len(found) == 1, found
    assert f"ran with {says}" in found[0]
