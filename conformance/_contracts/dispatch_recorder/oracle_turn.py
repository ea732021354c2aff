"""The DR oracle's turn checks: the commit barrier and what each commit holds, a failed
commit, the default commit, cancellation, and time limits the kit had to enforce itself.

Per-call checks are in ``oracle.py``; both read the trace through ``oracle_trace.Evidence``.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.model import (
    behaviour_for,
    calls_of,
    cancel_bound,
    failed,
)
from seamspec.conformance._contracts.dispatch_recorder.oracle_trace import Evidence

__all__ = ["check_turn"]

#: Events that make the turn go on: none may follow a failed commit or a cancellation.
_GOING_ON = ("provider_call", "tool_run", "record_enter", "commit_enter")


def check_turn(ev: Evidence) -> None:
    if ev.recorder is not None and (ev.journal or ev.recorder.get("commit_default")):
        _check_default(ev)
    elif ev.recorder is not None:
        _check_barrier(ev)
        _check_contents(ev)
        _check_failed_commit(ev)
    _check_cancel(ev)
    _check_kit_timeout(ev)


def _check_default(ev: Evidence) -> None:
    """A recorder without its own commit: the protocol's default is OK (DR-COMMIT-DEFAULT)."""
    if ev.cancel_i is None and ev.turn_end and ev.turn_end.get("outcome") == "error":
        ev.flag(
            "DR-COMMIT-DEFAULT",
            f"the turn failed ({ev.turn_end.get('error')}) although the recorder has no "
            "commit of its own",
        )


def _check_barrier(ev: Evidence) -> None:
    """Between provider call k and k + 1, step k's commit entered and returned OK.

    Commits are matched to steps by where they happen, not by their counter, so a commit
    of something that is no step (the prompt, say) is DR-COMMIT-STEP's, not this rule's.
    """
    provider = ev.all("provider_call")
    commits = ev.all("commit_enter")
    for k in range(len(provider) - 1):
        enter = [i for i in commits if provider[k] < i < provider[k + 1]]
        oks = [ev.first("commit_exit", n=ev.events[i].get("n"), outcome="ok") for i in enter]
        if not any(ok is not None and ok < provider[k + 1] for ok in oks):
            ev.flag(
                "DR-COMMIT-BARRIER",
                f"step {k}: provider call {k + 1} happened before a commit_accepted_step of "
                f"step {k} returned OK",
            )
            continue
        step_calls = {c["id"] for s, c in calls_of(ev.given) if s == k}
        # An id a later step proposes again: its events after the next provider call are
        # that later call's, not this step's.
        reused = {c["id"] for s, c in calls_of(ev.given) if s > k} & step_calls
        late = [
            e
            for i, e in enumerate(ev.events[enter[0] :], start=enter[0])
            if e["type"] in ("tool_run", "record_enter")
            and e.get("call") in step_calls
            and (e.get("call") not in reused or i < provider[k + 1])
        ]
        if late:
            ev.flag("DR-COMMIT-BARRIER", f"step {k}: committed before its tool calls were done")


def _snapshot(ev: Evidence, step: int) -> list[dict[str, Any]] | None:
    """The transcript the model saw before ``step`` (the final one after the last step)."""
    found = ev.first("provider_call", step=step)
    if found is not None:
        return list(ev.events[found].get("messages") or [])
    if ev.completed and ev.turn_end and ev.first("provider_call", step=step - 1) is not None:
        return list(ev.turn_end.get("messages") or [])
    return None


def _check_contents(ev: Evidence) -> None:
    """DR-COMMIT-STEP: each commit holds its step's messages; DR-CONTEXT-PLACE; DR-COMMIT-FINAL."""
    provider = ev.all("provider_call")
    committed: dict[int, int] = {}
    for i in ev.all("commit_enter"):
        step = sum(1 for p in provider if p < i) - 1
        if step < 0:
            ev.flag("DR-COMMIT-STEP", "a commit came before the provider proposed any step")
            continue
        committed[step] = committed.get(step, 0) + 1
        if committed[step] == 2:
            ev.flag("DR-COMMIT-STEP", f"step {step} was committed more than once")
        misplaced = _misplaced_context(list(ev.events[i].get("messages") or []))
        if misplaced:
            ev.flag(
                "DR-CONTEXT-PLACE",
                f"commit {ev.events[i].get('n')} (step {step}): {misplaced}; each call's "
                "context goes just before its own result",
            )
        unordered = _out_of_proposal_order(ev, step, list(ev.events[i].get("messages") or []))
        if unordered:
            ev.flag(
                "DR-CONTEXT-PLACE",
                f"commit {ev.events[i].get('n')} (step {step}): {unordered}; each call's "
                "messages sit in the order the model proposed the calls",
            )
        before, after = _snapshot(ev, step), _snapshot(ev, step + 1)
        if before is None or after is None or after[: len(before)] != before:
            continue  # the turn stopped, or its transcript was rewritten: nothing to compare
        want, got = after[len(before) :], list(ev.events[i].get("messages") or [])
        if got != want:
            ev.flag(
                "DR-COMMIT-STEP",
                f"commit {ev.events[i].get('n')} (step {step}) held {_roles(got)}; the step "
                f"added {_roles(want)} to the transcript{_first_difference(got, want)}",
            )
    for i in ev.all("commit_changed"):
        changed = ev.events[i]
        held = next(
            (e.get("messages") for e in ev.events if e["type"] == "commit_enter"
             and e.get("n") == changed.get("n")), None,
        )  # fmt: skip
        if changed.get("tool_calls_changed"):
            ev.flag(
                "DR-COMMIT-STEP",
                f"commit {changed.get('n')}'s assistant message was changed after it was "
                "handed over: its tool_calls are not the ones proposed when it was committed "
                "(the list and its messages are the recorder's to keep)",
            )
            continue
        ev.flag(
            "DR-COMMIT-STEP",
            f"commit {changed.get('n')}'s list was changed after it was handed over: it held "
            f"{_roles(list(held or []))}, and at the turn's end {_roles(list(changed.get('messages') or []))} "
            "(the list is the recorder's to keep)",
        )
    last = len(provider) - 1
    final = [i for i in ev.all("commit_exit", outcome="ok") if last >= 0 and i > provider[last]]
    if ev.completed and ev.cancel_i is None and last >= 0 and not final:
        ev.flag("DR-COMMIT-FINAL", f"the final step ({last}) was never committed")


def _misplaced_context(messages: list[dict[str, Any]]) -> str | None:
    """Why a ``context`` message is not followed by its own call's result, if one is not.

    The commit is compared with the transcript too, but an implementation that puts the
    contexts in the wrong place does so in both; so the place is checked on its own: a
    context message is followed by its call's ``tool`` message (or another context of the
    same call), never by another call's result or by nothing (DR-CONTEXT-PLACE, seamspec's
    decision: upstream's DR-COMMIT-STEP asks only that the commit match the transcript).
    """
    for j, message in enumerate(messages):
        if message.get("role") != "context":
            continue
        call = message.get("tool_call_id")
        following = messages[j + 1] if j + 1 < len(messages) else None
        if following is None:
            return f"the context of {call} is the commit's last message, with no result after it"
        if following.get("tool_call_id") != call or following.get("role") not in (
            "tool",
            "context",
        ):
            return (
                f"the context of {call} is followed by {_roles([following])[0]}, not by "
                f"{call}'s result"
            )
    return None


def _out_of_proposal_order(ev: Evidence, step: int, messages: list[dict[str, Any]]) -> str | None:
    """Why a commit's results are not in the order the step proposed their calls, if not.

    A harness that reorders a step's results (by call id, say) does so in the transcript
    and the commit alike, so comparing the two cannot see it; the order is checked against
    the scenario's own proposal instead. Only a commit holding exactly one result per
    proposed call is judged here (a missing or extra result is DR-COMMIT-STEP's), and
    the rule is seamspec's (DR-CONTEXT-PLACE): upstream's commit need only match the
    transcript, and it names no executor that orders results.
    """
    proposed = [str(c.get("id")) for s, c in calls_of(ev.given) if s == step]
    held = [str(m.get("tool_call_id")) for m in messages if m.get("role") == "tool"]
    if held == proposed or sorted(held) != sorted(proposed):
        return None
    return f"its results are for {', '.join(held)}, but the model proposed {', '.join(proposed)}"


def _roles(messages: list[dict[str, Any]]) -> list[str]:
    return [f"{m.get('role')}:{m.get('tool_call_id') or ''}".rstrip(":") for m in messages]


def _first_difference(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> str:
    for g, w in zip(got, want, strict=False):
        if g != w:
            return f" (first difference: {g.get('content')!r}, expected {w.get('content')!r})"
    return ""


def _check_failed_commit(ev: Evidence) -> None:
    assert ev.recorder is not None
    script = ev.recorder.get("commit")
    for i in ev.all("commit_enter"):
        n = ev.events[i]["n"]
        why = failed(behaviour_for(script, n))
        exit_i = ev.first("commit_exit", n=n)
        outcome = ev.events[exit_i].get("outcome") if exit_i is not None else None
        if why is None and outcome == "ok":
            continue
        if ev.cancel_i is not None and (exit_i is None or ev.cancel_i < exit_i):
            return  # a cancellation, not a failed commit: DR-CANCEL judges it
        after = [e for e in ev.events[i + 1 :] if e["type"] in _GOING_ON]
        if after:
            ev.flag(
                "DR-COMMIT-FAIL",
                f"commit {n} failed ({why or outcome}) yet the turn went on: {after[0]['type']}",
            )
        if ev.turn_end is None or ev.turn_end.get("outcome") != "error":
            ev.flag(
                "DR-COMMIT-FAIL",
                f"commit {n} failed ({why or outcome}) but the turn did not end with an error",
            )
            return
        behaviour = behaviour_for(script, n)
        error = str(ev.turn_end.get("error", ""))
        if why is None and "gate" not in behaviour:
            # It answered OK at once: its own time limit, counted from the commit, cannot
            # have run out, so a clock started earlier (the step's) failed it.
            ev.flag(
                "DR-COMMIT-FAIL",
                f"commit {n} answered OK at once, yet the turn stopped with an error: {error}",
            )
        elif why == "error" and str(behaviour["error"]) not in error:
            ev.flag(
                "DR-COMMIT-FAIL",
                f"commit {n} answered the error {behaviour['error']!r}, and the turn's error "
                f"{error!r} does not hold that reason verbatim",
            )
        return


def _check_cancel(ev: Evidence) -> None:
    if ev.cancel_i is None:
        return
    for e in ev.events[ev.cancel_i + 1 :]:
        if e["type"] in _GOING_ON:
            ev.flag("DR-CANCEL", f"after the cancellation: {e['type']} {e.get('call', '')}".strip())
    if ev.turn_end is not None and ev.turn_end.get("outcome") != "cancelled":
        ev.flag(
            "DR-CANCEL",
            f"cancelled during a record or commit, the turn ended {ev.turn_end.get('outcome')}",
        )
    bound = cancel_bound(ev.when)
    if bound is None or ev.turn_end is None:
        return
    took = ev.turn_end.get("since_cancel")
    if not isinstance(took, (int, float)):
        ev.flag(
            "DR-CANCEL", "the trace does not say how long the turn took to end after the cancel"
        )
    elif took > bound:
        ev.flag(
            "DR-CANCEL",
            f"the turn ended {took:.2f} s after the cancellation, past the {bound:g} s "
            "bound: it waited for a record or commit that honours cancellation",
        )


def _check_kit_timeout(ev: Evidence) -> None:
    """The kit had to stop the turn: a record or commit ran past the implementation's limit.

    The kit's own deadline cancels the call it finds running, which then ends
    ``cancelled`` just before the ``kit_timeout`` event: a call counts as still running if
    it never ended, or ended cancelled with nothing else happening before the timeout.
    """
    timeout = ev.first("kit_timeout")
    if timeout is None or ev.cancel_i is not None:
        return
    for what, rule, limit in (
        ("record", "DR-HANG", "record_time_limit"),
        ("commit", "DR-COMMIT-FAIL", "commit_time_limit"),
    ):
        for i in ev.all(f"{what}_enter"):
            n = ev.events[i].get("n")
            exit_i = ev.first(f"{what}_exit", n=n)
            between = [] if exit_i is None else ev.events[exit_i + 1 : timeout]
            running = (
                exit_i is None
                or exit_i > timeout
                or (
                    ev.events[exit_i].get("outcome") == "cancelled"
                    and not any(e["type"] in _GOING_ON for e in between)
                )
            )
            if i < timeout and running and limit in ev.given:
                ev.flag(
                    rule,
                    f"{what} {n} was still running when the kit stopped the turn after "
                    f"{ev.events[timeout].get('seconds')} s, far past the "
                    f"{ev.given[limit]:g} s {limit}",
                )
