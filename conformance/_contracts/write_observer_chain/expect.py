"""Judges a write-observer-chain trace against the scenario's own ``then``."""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.write_observer_chain.joins import (
    blank_line_join,
    carries_annotations,
)

__all__ = ["check"]


def _first(trace: list[dict[str, Any]], **fields: Any) -> dict[str, Any] | None:
    return next((e for e in trace if all(e.get(k) == v for k, v in fields.items())), None)


def check(
    _request: dict[str, Any], then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """Each way the trace differs from ``then``, as ("", explanation)."""
    out: list[tuple[str, str]] = []
    if "calls" in then:
        got = [
            f"{e.get('observer')}.{e.get('hook')}" for e in trace if e.get("type") == "hook_enter"
        ]
        if got != then["calls"]:
            out.append(("", f"hook calls: expected {then['calls']}, observed {got}"))
    for call, want in then.get("results", {}).items():
        end = _first(trace, type="call_end", call=call)
        if end is None:
            out.append(("", f"{call}: the call never ended"))
        elif "cancelled" in want and end.get("outcome") != "cancelled":
            out.append(
                (
                    "",
                    f"{call}: expected cancellation to propagate, observed {end.get('outcome')} {end.get('value', end.get('error'))!r}",
                )
            )
        elif "joins" in want and (
            end.get("outcome") != "returned" or not blank_line_join(want["joins"], end.get("value"))
        ):
            out.append(
                (
                    "",
                    f"{call}: expected the annotations {want['joins']!r} in this order, "
                    f"separated by blank lines; observed {end.get('outcome')} {end.get('value', end.get('error'))!r}",
                )
            )
        elif "returns" in want and (
            end.get("outcome") != "returned" or end.get("value") != want["returns"]
        ):
            observed = (
                end.get("value")
                if end.get("outcome") == "returned"
                else f"<{end.get('outcome')}: {end.get('error')}>"
            )
            out.append(
                ("", f"{call}: expected to return {want['returns']!r}, observed {observed!r}")
            )
    for call, want in then.get("tools", {}).items():
        result = _first(trace, type="tool_result", call=call)
        if want.get("cancelled"):
            if result is not None or _first(trace, type="tool_cancelled", call=call) is None:
                shown = f"a result (ok={result.get('ok')})" if result else "no end"
                out.append(
                    ("", f"{call}: expected the cancellation to propagate, observed {shown}")
                )
            continue
        if result is None:
            out.append(("", f"{call}: no tool result"))
            continue
        if "ok" in want and result.get("ok") != want["ok"]:
            out.append(
                (
                    "",
                    f"{call}: expected ok={want['ok']}, observed ok={result.get('ok')} ({result.get('message')!r})",
                )
            )
        if "annotation" in want:
            message, text, ann = (
                result.get("message", ""),
                result.get("text", ""),
                want["annotation"],
            )
            expected_text = message if ann is None else f"{message}\n\n{ann}"
            if text != expected_text:
                out.append(
                    ("", f"{call}: expected result text {expected_text!r}, observed {text!r}")
                )
        if "annotations" in want and not carries_annotations(
            result.get("text"), str(result.get("message", "")), want["annotations"]
        ):
            out.append(
                (
                    "",
                    f"{call}: expected the tool's message and then the annotations "
                    f"{want['annotations']!r}; observed result text {result.get('text')!r}",
                )
            )
        if "message_contains" in want and want["message_contains"] not in result.get("message", ""):
            out.append(
                (
                    "",
                    f"{call}: message {result.get('message')!r} does not contain {want['message_contains']!r}",
                )
            )
        if "text_endswith" in want and not str(result.get("text", "")).endswith(
            want["text_endswith"]
        ):
            out.append(
                (
                    "",
                    f"{call}: result text {result.get('text')!r} does not end with {want['text_endswith']!r}",
                )
            )
    if "files" in then:
        snapshot = _first(trace, type="files")
        files = snapshot.get("files", {}) if snapshot else {}
        if snapshot is None:
            # Without the snapshot every expected absence would look met.
            out.append(
                (
                    "",
                    "the trace has no files event, so no expected file can be checked "
                    "(the driver emits one at the end of every scenario)",
                )
            )
        for path, content in then["files"].items():
            if files.get(path) != content:
                out.append(("", f"file {path}: expected {content!r}, observed {files.get(path)!r}"))
    for key, content in then.get("seen", {}).items():
        observer, hook = key.rsplit(".", 1)
        enter = _first(trace, type="hook_enter", observer=observer, hook=hook)
        if enter is None:
            out.append(("", f"{key} was never called"))
        elif enter.get("sees") != content:
            out.append(("", f"{key} saw {enter.get('sees')!r}; expected {content!r}"))
    for observer, count in then.get("warnings", {}).items():
        warned = sum(
            1 for e in trace if e.get("type") == "warning" and e.get("observer") == observer
        )
        if warned != count:
            out.append(("", f"warnings for {observer}: expected {count}, observed {warned}"))
    return out
