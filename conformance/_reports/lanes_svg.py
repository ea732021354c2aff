"""A trace drawn as lanes: one column per actor, one row per event, in order.

The contracts are about *who* does *what* *when*: an observer called on the wrong
thread, a tool run before its record, a hook that starts before the previous one ended.
A list of events hides that; lanes show it. Each contract room says which lane an event
belongs to (``timeline.lanes``); this module only draws. An ``_enter`` (or ``_start``)
event opens a bar in its lane that the matching ``_exit`` (or ``_end``) closes, so
overlap is visible at a glance.

Given a second trace (the reference's run of the same scenario), the two are drawn
side by side, rows aligned, and the rows where they differ are shaded: the expected next
to the observed. The result is a standalone SVG document, also valid inline in HTML.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from seamspec.conformance._core.timeline import LaneEvent, Row, align, lane_events

__all__ = ["lanes_svg"]

LANE_W = 112
ROW_H = 22
TOP = 62
SIDE = 12
MAX_ROWS = 400
CHAR_W = 7.0
_FONT = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px"
_SANS = "font-family:system-ui,sans-serif;font-size:12px"
_COLOURS = {"same": "#1f2328", "expected": "#1a7f37", "observed": "#cf222e"}


def _attr(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


class _Panel:
    """One column of lanes plus its label column, at horizontal offset ``x``."""

    def __init__(self, title: str, lanes: list[str], x: float, label_w: float) -> None:
        self.title, self.lanes, self.x, self.label_w = title, lanes, x, label_w
        self.width = len(lanes) * LANE_W + label_w

    def lane_x(self, lane: str) -> float:
        return self.x + LANE_W * self.lanes.index(lane) + LANE_W / 2

    def head(self, rows: int) -> list[str]:
        bottom = TOP + rows * ROW_H
        out = [
            f'<text class="panel-title" x="{self.x}" y="18" style="{_SANS};font-weight:600">'
            f"{escape(self.title)}</text>"
        ]
        for lane in self.lanes:
            x = self.lane_x(lane)
            name = lane if len(lane) <= 16 else lane[:15] + "..."
            out.append(
                f'<text class="lane" x="{x}" y="44" text-anchor="middle" style="{_SANS}">'
                f"<title>{escape(lane)}</title>{escape(name)}</text>"
            )
            out.append(
                f'<line x1="{x}" y1="52" x2="{x}" y2="{bottom}" stroke="#d0d7de" '
                'stroke-dasharray="3 3"/>'
            )
        return out

    def draw(self, cells: list[LaneEvent | None], colours: list[str]) -> list[str]:
        out: list[str] = []
        open_bars: dict[str, list[int]] = {}
        label_x = self.x + len(self.lanes) * LANE_W + 6
        for row, (event, colour) in enumerate(zip(cells, colours, strict=True)):
            if event is None:
                continue
            y = TOP + row * ROW_H + ROW_H / 2
            x = self.lane_x(event.lane)
            if event.shape == "enter":
                open_bars.setdefault(event.lane, []).append(row)
            elif event.shape == "exit" and open_bars.get(event.lane):
                start = open_bars[event.lane].pop()
                out.append(self._bar(event.lane, start, row, closed=True))
            out.append(
                f'<line x1="{x + 6}" y1="{y}" x2="{label_x - 4}" y2="{y}" stroke="#eaeef2"/>'
            )
            out.append(
                f'<circle class="event" data-lane="{_attr(event.lane)}" cx="{x}" cy="{y}" '
                f'r="4.5" fill="{colour}"/>'
            )
            out.append(
                f'<text class="label" data-lane="{_attr(event.lane)}" x="{label_x}" '
                f'y="{y + 4}" fill="{colour}" style="{_FONT};white-space:pre">'
                f"{escape(event.label)}</text>"
            )
        for lane, starts in open_bars.items():  # entered, never left: a dashed bar
            for start in starts:
                out.insert(0, self._bar(lane, start, len(cells) - 1, closed=False))
        return out

    def _bar(self, lane: str, start: int, end: int, *, closed: bool) -> str:
        x = self.lane_x(lane) - 5
        y = TOP + start * ROW_H + ROW_H / 2
        height = max(ROW_H / 2, (end - start) * ROW_H)
        dash = "" if closed else ' stroke-dasharray="4 3"'
        return (
            f'<rect class="bar" x="{x}" y="{y}" width="10" height="{height}" rx="3" '
            f'fill="#ddf4ff" stroke="#54aeff"{dash}/>'
        )


def _label_width(events: list[LaneEvent]) -> float:
    longest = max((len(e.label) for e in events), default=10)
    return min(70, max(16, longest)) * CHAR_W + 16


def lanes_svg(
    contract: str,
    observed: list[dict[str, Any]],
    expected: list[dict[str, Any]] | None = None,
    *,
    observed_name: str = "observed",
    expected_name: str = "expected (the reference)",
) -> str:
    """``observed`` as lanes; with ``expected``, both side by side with differences shaded."""
    order, seen = lane_events(contract, observed)
    if expected is None:
        rows: list[Row] = [(None, event, True) for event in seen]
        want: list[LaneEvent] = []
    else:
        want_order, want = lane_events(contract, expected)
        order = want_order + [lane for lane in order if lane not in want_order]
        rows = align(want, seen)
    hidden = max(0, len(rows) - MAX_ROWS)
    rows = rows[:MAX_ROWS]
    differs = any(not same for _, _, same in rows)
    panels: list[tuple[_Panel, int]] = []
    x = float(SIDE)
    if expected is not None:
        panel = _Panel(expected_name, order, x, _label_width(want))
        panels.append((panel, 0))
        x += panel.width + 2 * SIDE
    panels.append((_Panel(observed_name, order, x, _label_width(seen)), 1))
    width = x + panels[-1][0].width + SIDE
    height = TOP + max(1, len(rows)) * ROW_H + (44 if hidden or differs else 16)
    title = f"{contract}: {len(seen)} events in {len(order)} lanes" + (
        ", differences from the reference shaded" if differs else ""
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lanes" role="img" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'aria-label="{_attr(title)}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
    ]
    for index, (_, _, same) in enumerate(rows):
        if not same:
            y = TOP + index * ROW_H
            out.append(
                f'<rect class="differs" data-row="{index}" x="0" y="{y}" width="{width:.0f}" '
                f'height="{ROW_H}" fill="#fff1e5"/>'
            )
    for panel, side in panels:
        out += panel.head(len(rows))
        cells = [row[0] if side == 0 else row[1] for row in rows]
        if expected is None:
            colours = [_COLOURS["same"]] * len(rows)
        else:
            role = "expected" if side == 0 else "observed"
            colours = [_COLOURS["same"] if same else _COLOURS[role] for _, _, same in rows]
        out += panel.draw(cells, colours)
    notes = []
    if differs:
        notes.append(
            "shaded rows: the observed trace differs from the reference's here "
            "(green: what the reference did; red: what was observed)"
        )
    if hidden:
        notes.append(f"... and {hidden} more rows, not drawn")
    for i, note in enumerate(notes):
        y = TOP + len(rows) * ROW_H + 18 + 16 * i
        out.append(f'<text class="note" x="{SIDE}" y="{y}" style="{_SANS}">{escape(note)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
