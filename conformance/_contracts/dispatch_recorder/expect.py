"""Judges a dispatch-recorder trace against the scenario's own ``then``."""

from __future__ import annotations

import itertools
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.model import event_positions

__all__ = ["check"]

#: Events whose ``messages`` the model (or whoever resumes the turn) can see.
_VISIBLE = ("provider_call", "commit_enter", "turn_end")


def _tool_message(trace: list[dict[str, Any]], call: str) -> str | None:
    found = [
        m["content"]
        for e in trace
        if e["type"] in ("provider_call", "commit_enter", "turn_end")
        for m in e.get("messages", [])
        if m.get("role") == "tool" and m.get("tool_call_id") == call
    ]
    return found[-1] if found else None


def _message_differs(want: dict[str, Any], got: dict[str, Any]) -> str | None:
    """Why message ``got`` is not the one ``want`` describes (``None``: it is)."""
    for key, field in (("role", "role"), ("call", "tool_call_id"), ("content", "content")):
        if key in want and got.get(field) != want[key]:
            return f"{key} {got.get(field)!r}, expected {want[key]!r}"
    if "content_contains" in want and want["content_contains"] not in str(got.get("content")):
        return f"content {got.get('content')!r} lacks {want['content_contains']!r}"
    return None


def _check_commits(want: list[list[dict[str, Any]]], trace: list[dict[str, Any]]) -> list[str]:
    commits = [e.get("messages") or [] for e in trace if e["type"] == "commit_enter"]
    if len(commits) != len(want):
        return [f"commit_accepted_step calls: expected {len(want)}, observed {len(commits)}"]
    out = []
    for k, (wanted, got) in enumerate(zip(want, commits, strict=True)):
        roles = [f"{m.get('role')}:{m.get('tool_call_id') or ''}".rstrip(":") for m in got]
        if len(got) != len(wanted):
            out.append(f"commit {k}: expected {len(wanted)} message(s), observed {roles}")
            continue
        for j, (w, g) in enumerate(zip(wanted, got, strict=True)):
            why = _message_differs(w, g)
            if why is not None:
                out.append(f"commit {k}, message {j}: {why}")
    return out


def _check_visible(never: list[str], trace: list[dict[str, Any]]) -> list[str]:
    out = []
    for text in never:
        for e in trace:
            seen = [m for m in e.get("messages") or [] if text in str(m.get("content"))]
            if e["type"] in _VISIBLE and seen:
                where = f"{e['type']} {e.get('step', e.get('n', ''))}".rstrip()
                out.append(
                    f"the model could see {text!r}: {seen[0].get('role')} message in {where}"
                )
                break
    return out


def _check_order(orders: list[list[str]], trace: list[dict[str, Any]]) -> list[str]:
    at = event_positions(trace)
    out = []
    for sequence in orders:
        missing = [name for name in sequence if name not in at]
        if missing:
            out.append(f"order {sequence}: never happened: {missing}")
            continue
        for before, after in itertools.pairwise(sequence):
            if at[before] > at[after]:
                out.append(f"order: {after} happened before {before}")
    return out


def check(
    _request: dict[str, Any], then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """Each way the trace differs from ``then``, as ("", explanation)."""
    out: list[tuple[str, str]] = []
    if "records" in then:
        records = [f"{e.get('call')}:{e.get('kind')}" for e in trace if e["type"] == "record_enter"]
        if records != then["records"]:
            out.append(("", f"records: expected {then['records']}, observed {records}"))
    for call, want in then.get("calls", {}).items():
        runs = [e for e in trace if e["type"] == "tool_run" and e.get("call") == call]
        if "ran" in want and bool(runs) != want["ran"]:
            out.append(("", f"{call}: expected ran={want['ran']}, observed {len(runs)} run(s)"))
        if "args" in want and (not runs or runs[0].get("args") != want["args"]):
            args = runs[0].get("args") if runs else "<never ran>"
            out.append(("", f"{call}: expected to run with {want['args']!r}, observed {args!r}"))
        if "context" in want and (not runs or runs[0].get("context") != want["context"]):
            context = runs[0].get("context") if runs else "<never ran>"
            out.append(("", f"{call}: expected context {want['context']!r}, observed {context!r}"))
        message = _tool_message(trace, call)
        if "result" in want and message != want["result"]:
            out.append(("", f"{call}: the model saw {message!r}; expected {want['result']!r}"))
        if "result_contains" in want and want["result_contains"] not in (message or ""):
            out.append(
                (
                    "",
                    f"{call}: the model saw {message!r}; expected it to contain {want['result_contains']!r}",
                )
            )
    if isinstance(then.get("commits"), int):
        got = sum(1 for e in trace if e["type"] == "commit_enter")
        if got != then["commits"]:
            out.append(
                ("", f"commit_accepted_step calls: expected {then['commits']}, observed {got}")
            )
    elif "commits" in then:
        out.extend(("", text) for text in _check_commits(then["commits"], trace))
    out.extend(("", text) for text in _check_visible(then.get("never_visible", []), trace))
    out.extend(("", text) for text in _check_order(then.get("order", []), trace))
    if "provider_calls" in then:
        got = sum(1 for e in trace if e["type"] == "provider_call")
        if got != then["provider_calls"]:
            out.append(("", f"provider calls: expected {then['provider_calls']}, observed {got}"))
    if "turn" in then:
        end = next((e for e in trace if e["type"] == "turn_end"), None)
        want = then["turn"]
        outcome = end.get("outcome") if end else "<never ended>"
        if outcome != want["outcome"]:
            detail = end.get("error", "") if end else ""
            out.append(
                ("", f"turn: expected {want['outcome']}, observed {outcome} {detail}".rstrip())
            )
        elif "error_contains" in want and want["error_contains"] not in str(
            end and end.get("error")
        ):
            out.append(
                ("", f"turn error {end and end.get('error')!r} lacks {want['error_contains']!r}")
            )
    verifies = [e for e in trace if e["type"] == "journal_verify"]
    for index, want in enumerate(then.get("journal", [])):
        if index >= len(verifies):
            out.append(("", f"journal verification {index} never happened"))
            continue
        found = verifies[index]
        for key, value in want.items():
            if found.get(key) != value:
                out.append(
                    (
                        "",
                        f"journal verification {index}: expected {key}={value!r}, observed {found.get(key)!r} ({found.get('reason')})",
                    )
                )
    return out
