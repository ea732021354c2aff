"""Traces drawn as lanes: each contract room says who did each event, the kit draws.

The pictures must put events where they happened (a callback on a new thread in a new
lane, a tool run before its record above the record) and shade what differs from the
reference, or they teach the wrong thing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from seamspec._cli import main
from seamspec.conformance import load_adapter, load_scenarios
from seamspec.conformance._core.timeline import align, lane_events
from seamspec.conformance._reports.lanes_svg import lanes_svg

SVG = "{http://www.w3.org/2000/svg}"


def _trace(impl: str, scenario_id: str) -> tuple[str, list[dict[str, Any]]]:
    (scenario,) = [s for s in load_scenarios() if s.id == scenario_id]
    adapter = load_adapter(impl)
    try:
        return scenario.contract, adapter.run(scenario.request())
    finally:
        adapter.close()


def test_write_observer_chain_lanes_are_the_caller_and_each_observer() -> None:
    contract, trace = _trace("reference", "woc-join-two-annotations")
    lanes, events = lane_events(contract, trace)
    assert lanes == ["caller", "fmt", "diag"]
    hooks = [(e.lane, e.shape) for e in events if "after_write" in e.label and "->" in e.label]
    assert hooks == [("fmt", "enter"), ("diag", "enter")]


def test_shell_output_lanes_show_a_callback_on_a_thread_of_its_own() -> None:
    contract, good = _trace("reference", "soo-callbacks-on-presentation-thread")
    lanes, _ = lane_events(contract, good)
    assert lanes == ["caller", "drain 1", "drain 2", "presentation 1"]
    _, bad = _trace("mutant:soo-thread-per-callback", "soo-callbacks-on-presentation-thread")
    bad_lanes, _ = lane_events(contract, bad)
    assert len([lane for lane in bad_lanes if lane.startswith("presentation")]) > 1


def test_dispatch_recorder_lanes_show_a_tool_run_before_its_record() -> None:
    contract, good = _trace("reference", "dr-rewrite-recorded-runs-new-args")
    lanes, events = lane_events(contract, good)
    assert lanes == ["executor", "recorder", "tool", "provider"]
    order = [e.lane for e in events if e.lane in ("recorder", "tool")]
    assert order.index("recorder") < order.index("tool")
    _, bad = _trace("mutant:dr-apply-before-record", "dr-rewrite-recorded-runs-new-args")
    _, bad_events = lane_events(contract, bad)
    bad_order = [e.lane for e in bad_events if e.lane in ("recorder", "tool")]
    assert bad_order.index("tool") < bad_order.index("recorder")


def test_two_runs_of_the_reference_align_without_differences() -> None:
    """Thread labels differ between runs; lanes are numbered by role, so nothing differs."""
    contract, one = _trace("reference", "soo-session-queued-then-finish")
    _, two = _trace("reference", "soo-session-queued-then-finish")
    rows = align(lane_events(contract, one)[1], lane_events(contract, two)[1])
    assert all(same for _, _, same in rows)
    assert 'class="differs"' not in lanes_svg(contract, one, two)


def _texts(svg: str, cls: str) -> list[str]:
    root = ET.fromstring(svg)
    # the visible text: a <title> child is a tooltip, not part of it
    return [
        ((t.text or "") + "".join(child.tail or "" for child in t)).strip()
        for t in root.iter(f"{SVG}text")
        if t.get("class") == cls
    ]


def test_svg_draws_lanes_and_events_in_order() -> None:
    contract, trace = _trace("reference", "woc-join-two-annotations")
    svg = lanes_svg(contract, trace)
    root = ET.fromstring(svg)  # well-formed, standalone
    assert root.tag == f"{SVG}svg"
    assert _texts(svg, "lane") == ["caller", "fmt", "diag"]
    labels = _texts(svg, "label")
    _, events = lane_events(contract, trace)
    assert labels == [e.label for e in events]
    ys = [float(t.get("y", "0")) for t in root.iter(f"{SVG}text") if t.get("class") == "label"]
    assert ys == sorted(ys)
    circles = [c for c in root.iter(f"{SVG}circle") if c.get("class") == "event"]
    assert [c.get("data-lane") for c in circles] == [e.lane for e in events]


def test_svg_puts_the_expected_next_to_the_observed_where_they_differ() -> None:
    contract, expected = _trace("reference", "woc-join-two-annotations")
    _, observed = _trace("mutant:woc-after-reversed", "woc-join-two-annotations")
    svg = lanes_svg(contract, observed, expected, observed_name="observed (mutant)")
    root = ET.fromstring(svg)
    assert _texts(svg, "panel-title") == ["expected (the reference)", "observed (mutant)"]
    shaded = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "differs"]
    assert shaded
    rows = align(lane_events(contract, expected)[1], lane_events(contract, observed)[1])
    assert len(shaded) == sum(1 for _, _, same in rows if not same)
    # the mutant calls diag before fmt: its first hook row is a difference, drawn in red
    first = next(row for row in rows if row[1] is not None and "->" in row[1].label)
    assert first[1] is not None
    assert first[1].lane == "diag"
    assert not first[2]


def test_explain_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alone, beside = tmp_path / "ref.svg", tmp_path / "mutant.svg"
    assert main(["explain", "dr-rewrite-recorded-runs-new-args", "--svg", str(alone)]) == 0
    assert 'class="differs"' not in alone.read_text()
    assert len(_texts(alone.read_text(), "panel-title")) == 1
    args = ["explain", "dr-rewrite-recorded-runs-new-args", "--svg", str(beside)]
    assert main([*args, "--impl", "mutant:dr-apply-before-record"]) == 0
    text = beside.read_text()
    assert 'class="differs"' in text
    assert _texts(text, "panel-title")[0] == "expected (the reference)"
    assert f"lanes: {beside}" in capsys.readouterr().out
    assert main(["explain", "WOC-JOIN", "--svg", str(tmp_path / "x.svg")]) == 2
    assert not (tmp_path / "x.svg").exists()
