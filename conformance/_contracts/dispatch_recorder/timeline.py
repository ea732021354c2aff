"""How ``seamspec explain`` draws dispatch-recorder events: one line each (``render``)
and who acted (``lanes``): the executor, the recorder (records, commits and the
journal), the tool, the model provider. "Record first" reads off the picture: the
recorder's bar ends before the tool's begins.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._core.timeline import short

__all__ = ["lanes", "render"]

_LANE = {
    "record_enter": "recorder",
    "record_exit": "recorder",
    "commit_enter": "recorder",
    "commit_exit": "recorder",
    "commit_changed": "recorder",
    "journal_fsync": "recorder",
    "journal_reopen": "recorder",
    "journal_refused": "recorder",
    "journal_verify": "recorder",
    "journal_check": "recorder",
    "journal_tampered": "recorder",
    "tool_run": "tool",
    "tool_exit": "tool",
    "provider_call": "provider",
}
_ORDER = ["executor", "recorder", "tool", "provider"]


def _outcome(event: dict[str, Any]) -> str:
    why = event.get("reason") or event.get("error") or ""
    return f"{event.get('outcome')} {short(why, 40) if why else ''}".rstrip()


def render(event: dict[str, Any]) -> str | None:
    kind = event["type"]
    if kind == "turn_start":
        return "turn starts"
    if kind == "turn_end":
        return f"turn {_outcome(event)}"
    if kind == "provider_call":
        return (
            f"provider call, step {event.get('step')} ({len(event.get('messages') or [])} messages)"
        )
    if kind == "record_enter":
        return f"  -> record #{event.get('n')} {event.get('kind')} for {event.get('call')}"
    if kind == "record_exit":
        return f"  <- record #{event.get('n')} {_outcome(event)}"
    if kind == "commit_enter":
        return f"  -> commit #{event.get('n')} ({len(event.get('messages') or [])} messages)"
    if kind == "commit_exit":
        return f"  <- commit #{event.get('n')} {_outcome(event)}"
    if kind == "commit_changed":
        return f"commit #{event.get('n')}'s list changed afterwards ({len(event.get('messages') or [])} messages)"
    if kind == "tool_run":
        return f"  -> {event.get('tool')} ({event.get('call')}) args {short(event.get('args'), 40)}"
    if kind == "tool_exit":
        return f"  <- {event.get('call')} result {short(event.get('result'), 40)}"
    if kind == "approval":
        return f"approval for {event.get('call')}: {event.get('approved')}"
    if kind in ("journal_fsync", "journal_check", "journal_verify", "journal_tampered"):
        return _journal(kind, event)
    if kind == "journal_reopen":
        return "journal closed and opened again"
    if kind == "journal_refused":
        return f"recorder refuses to open the journal: {short(event.get('error'), 60)}"
    if kind == "wait_unmet":
        return f"** step {event.get('step')}: {event.get('waited_for')} never came; the turn was over **"
    if kind == "cancel_requested":
        return "** cancel **"
    if kind == "gate_released":
        late = " (after the time limit)" if event.get("after_limit") else ""
        return f"gate {event.get('gate')} released{late}"
    return None


def _journal(kind: str, event: dict[str, Any]) -> str:
    if kind == "journal_fsync":
        if event.get("journal") is False:
            return f"fsync of ANOTHER file ({event.get('file')}), not the journal"
        if event.get("failed") is True:
            return "journal fsync FAILED (the kit's fault): nothing made durable"
        return f"journal fsync ({event.get('durable_bytes')} bytes durable)"
    if kind == "journal_check":
        if not event.get("exists"):
            return "kit reads the journal: no file"
        verdict = "valid" if event.get("ok") else f"INVALID: {event.get('reason')}"
        earlier = event.get("existing_entries")
        held = f", {earlier} of them written before the session" if earlier else ""
        return (
            f"kit reads the journal ({event.get('entries')} entries{held}, fsyncs "
            f"{event.get('fsync_evidence')}): {verdict}"
        )
    if kind == "journal_tampered":
        failed = f" (not possible: {event['error']})" if event.get("error") else ""
        return f"kit tampers: {event.get('op')}{failed}"
    kit = event.get("kit") or {}
    says = "valid" if event.get("ok") else f"invalid at {event.get('bad_index')}"
    wants = "valid" if kit.get("ok") else f"invalid at {kit.get('bad_index')}"
    return f"verifier says {says} (kit: {wants}) {event.get('reason') or ''}".rstrip()


def lanes(trace: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The lane of every event: executor, recorder, tool or provider."""
    of_event = [_LANE.get(event["type"], "executor") for event in trace]
    return [lane for lane in _ORDER if lane in of_event or lane == "executor"], of_event
