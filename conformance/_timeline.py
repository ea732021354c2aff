"""Draws a trace as a timeline a person can read (``seamspec explain``).

Each contract may register a line renderer for its event types; anything else is drawn
generically as ``type key=value ...``, so a new contract is readable from day one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["render_timeline"]

Renderer = Callable[[dict[str, Any]], str | None]


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _generic(event: dict[str, Any]) -> str:
    fields = " ".join(f"{k}={_short(v, 40)}" for k, v in event.items() if k != "type")
    return f"{event['type']} {fields}".rstrip()


def _woc(event: dict[str, Any]) -> str | None:
    kind = event["type"]
    if kind == "call_start":
        return f"call {event['call']}: chain.{event['hook']}({event['path']})"
    if kind == "hook_enter":
        sees = "absent" if event.get("sees") is None else _short(event.get("sees"), 40)
        return f"  -> {event['observer']}.{event['hook']}  [{event['call']}] file: {sees}"
    if kind == "hook_exit":
        outcome = event.get("outcome")
        detail = _short(event.get("value")) if outcome == "returned" else event.get("error", "")
        return f"  <- {event['observer']}.{event['hook']}  [{event['call']}] {outcome} {detail}".rstrip()
    if kind == "call_end":
        detail = (
            _short(event.get("value"))
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
            else _short(event.get("content_before"), 40)
        )
        return f"tool {event['call']}: {event['tool']} {event['path']} (file before: {before})"
    if kind == "tool_result":
        return f"tool {event['call']} -> ok={event.get('ok')} text={_short(event.get('text'), 70)}"
    if kind == "warning":
        return f"warning: {event.get('message')}"
    if kind == "files":
        return "files at the end: " + (
            ", ".join(f"{k}={_short(v, 30)}" for k, v in event.get("files", {}).items()) or "(none)"
        )
    return None


RENDERERS: dict[str, Renderer] = {"write-observer-chain": _woc}


def render_timeline(contract: str, trace: list[dict[str, Any]]) -> list[str]:
    renderer = RENDERERS.get(contract)
    lines = []
    for index, event in enumerate(trace, start=1):
        line = (renderer(event) if renderer else None) or _generic(event)
        lines.append(f"{index:3}  {line}")
    return lines
