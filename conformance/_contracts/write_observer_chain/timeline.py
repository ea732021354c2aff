"""How ``seamspec explain`` draws write-observer-chain events: one line each (``render``)
and the lane of each, caller or observer (``lanes``), for the pictures."""

from __future__ import annotations

from typing import Any

from seamspec.conformance._core.timeline import short

__all__ = ["lanes", "render"]


def render(event: dict[str, Any]) -> str | None:
    kind = event["type"]
    if kind == "call_start":
        return f"call {event['call']}: chain.{event['hook']}({event['path']})"
    if kind == "hook_enter":
        sees = "absent" if event.get("sees") is None else short(event.get("sees"), 40)
        return f"  -> {event['observer']}.{event['hook']}  [{event['call']}] file: {sees}"
    if kind == "hook_exit":
        outcome = event.get("outcome")
        detail = short(event.get("value")) if outcome == "returned" else event.get("error", "")
        return f"  <- {event['observer']}.{event['hook']}  [{event['call']}] {outcome} {detail}".rstrip()
    if kind == "call_end":
        detail = (
            short(event.get("value"))
            if event.get("outcome") == "returned"
            else event.get("error", "")
        )
        return f"call {event['call']} {event.get('outcome')} {detail}".rstrip()
    if kind == "cancel_requested":
        return f"** cancel {event['call']} **"
    if kind == "gate_released":
        return f"gate {event['gate']} released"
    if kind == "tool_start":
        before = (
            "absent"
            if event.get("content_before") is None
            else short(event.get("content_before"), 40)
        )
        return f"tool {event['call']}: {event['tool']} {event['path']} (file before: {before})"
    if kind == "tool_result":
        return f"tool {event['call']} -> ok={event.get('ok')} text={short(event.get('text'), 70)}"
    if kind == "warning":
        return f"warning: {event.get('message')}"
    if kind == "files":
        return "files at the end: " + (
            ", ".join(f"{k}={short(v, 30)}" for k, v in event.get("files", {}).items()) or "(none)"
        )
    return None


def lanes(trace: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Who did each event: the caller (the chain's user and its tools), or an observer.

    Returns the lanes in drawing order (the caller, then each observer as it first
    appears) and the lane of every event, so a picture shows which hook ran when.
    """
    of_event = []
    order = ["caller"]
    for event in trace:
        observer = event.get("observer")
        lane = (
            str(observer)
            if event["type"] in ("hook_enter", "hook_exit", "restored") and observer
            else "caller"
        )
        if lane not in order:
            order.append(lane)
        of_event.append(lane)
    return order, of_event
