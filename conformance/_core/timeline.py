"""Draws a trace as a timeline a person can read (``seamspec explain``), and places each
event in a lane for the pictures (``seamspec explain --svg``, the HTML report).

A contract room may draw its own event types (a ``timeline`` module with ``render``) and
say who did each event (``lanes(trace)``: the lanes in drawing order and the lane of
every event, the empty lane for an event not to draw); anything else is drawn
generically as ``type key=value ...`` in a single lane, so a new contract is readable
from day one.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from seamspec.conformance._core.registry import CONTRACTS, room

__all__ = ["LaneEvent", "Renderer", "align", "lane_events", "render_timeline", "short"]

Renderer = Callable[[dict[str, Any]], str | None]


def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _generic(event: dict[str, Any]) -> str:
    fields = " ".join(f"{k}={short(v, 40)}" for k, v in event.items() if k != "type")
    return f"{event['type']} {fields}".rstrip()


def _renderer(contract: str) -> Renderer | None:
    found = room(contract).optional_module("timeline") if contract in CONTRACTS else None
    renderer: Renderer | None = getattr(found, "render", None)
    return renderer


def render_timeline(contract: str, trace: list[dict[str, Any]]) -> list[str]:
    renderer = _renderer(contract)
    lines = []
    for index, event in enumerate(trace, start=1):
        line = (renderer(event) if renderer else None) or _generic(event)
        lines.append(f"{index:3}  {line}")
    return lines


#: Event fields that differ between two correct runs (thread labels, counters, sizes):
#: left out when deciding whether two events are "the same" in an aligned picture.
_VOLATILE = frozenset({"thread", "invocation", "durable_bytes", "durable_entries", "payload"})


@dataclass(frozen=True)
class LaneEvent:
    """One event as a picture draws it: where (lane), what (label), and its shape."""

    index: int
    lane: str
    label: str
    #: ``enter`` opens a bar in its lane that the next ``exit`` there closes.
    shape: Literal["enter", "exit", "point"]
    #: What two runs must agree on for this event to count as the same one.
    key: str


def _shape(kind: str) -> Literal["enter", "exit", "point"]:
    if kind.endswith(("_enter", "_start", "_run")):
        return "enter"
    if kind.endswith(("_exit", "_end", "_result")):
        return "exit"
    return "point"


def lane_events(
    contract: str, trace: list[dict[str, Any]], limit: int = 70
) -> tuple[list[str], list[LaneEvent]]:
    """The lanes of ``trace`` in drawing order, and its events placed in them, in order."""
    found = room(contract).optional_module("timeline") if contract in CONTRACTS else None
    assign = getattr(found, "lanes", None)
    order, of_event = assign(trace) if assign else (["trace"], ["trace"] * len(trace))
    renderer = _renderer(contract)
    events = []
    for index, (event, lane) in enumerate(zip(trace, of_event, strict=True)):
        if not lane:
            continue
        label = ((renderer(event) if renderer else None) or _generic(event)).strip()
        if len(label) > limit:
            label = label[: limit - 3] + "..."
        stable = {k: v for k, v in event.items() if k not in _VOLATILE}
        key = lane + " " + json.dumps(stable, sort_keys=True, default=str)
        events.append(LaneEvent(index, lane, label, _shape(str(event["type"])), key))
    return [lane for lane in order if any(e.lane == lane for e in events)], events


Row = tuple[LaneEvent | None, LaneEvent | None, bool]


def align(expected: list[LaneEvent], observed: list[LaneEvent]) -> list[Row]:
    """Rows of (expected, observed, same): equal runs side by side, differences apart."""
    matcher = difflib.SequenceMatcher(
        None, [e.key for e in expected], [e.key for e in observed], autojunk=False
    )
    rows: list[Row] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            rows += [(expected[a0 + i], observed[b0 + i], True) for i in range(a1 - a0)]
            continue
        left, right = expected[a0:a1], observed[b0:b1]
        for i in range(max(len(left), len(right))):
            rows.append(
                (left[i] if i < len(left) else None, right[i] if i < len(right) else None, False)
            )
    return rows
