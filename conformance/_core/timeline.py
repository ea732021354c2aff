"""Draws a trace as a timeline a person can read (``seamspec explain``).

A contract room may draw its own event types (a ``timeline`` module with ``render``);
anything else is drawn generically as ``type key=value ...``, so a new contract is
readable from day one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seamspec.conformance._core.registry import CONTRACTS, room

__all__ = ["Renderer", "render_timeline", "short"]

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
