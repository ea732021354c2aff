"""Judges a shell-output trace against the scenario's own ``then``."""

from __future__ import annotations

from typing import Any

__all__ = ["check"]

STREAMS = ("stdout", "stderr")


def _delivered(trace: list[dict[str, Any]], observer: str, stream: str) -> bytes:
    return b"".join(
        bytes.fromhex(e.get("hex", ""))
        for e in trace
        if e.get("type") == "callback_enter"
        and e.get("hook") == "on_output"
        and e.get("observer") == observer
        and e.get("stream") == stream
    )


def _end(trace: list[dict[str, Any]], call: str) -> dict[str, Any] | None:
    return next((e for e in trace if e.get("type") == "run_end" and e.get("call") == call), None)


def check(
    _request: dict[str, Any], then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """Each way the trace differs from ``then``, as ("", explanation)."""
    out: list[tuple[str, str]] = []
    for observer, want in then.get("outputs", {}).items():
        for stream in STREAMS:
            expected: bytes | None = None
            if stream in want:
                expected = str(want[stream]).encode()
            elif f"{stream}_hex" in want:
                expected = bytes.fromhex(want[f"{stream}_hex"])
            got = _delivered(trace, observer, stream)
            if expected is not None and got != expected:
                out.append(("", f"{observer} observed {stream} {got!r}; expected {expected!r}"))
    for observer, count in then.get("finishes", {}).items():
        got_count = sum(
            1
            for e in trace
            if e.get("type") == "callback_enter"
            and e.get("hook") == "on_finish"
            and e.get("observer") == observer
        )
        if got_count != count:
            out.append(("", f"{observer}: on_finish called {got_count} times; expected {count}"))
    for call, want in then.get("results", {}).items():
        end = _end(trace, call)
        if end is None:
            out.append(("", f"{call}: the call never ended"))
            continue
        if "outcome" in want and end.get("outcome") != want["outcome"]:
            out.append(
                (
                    "",
                    f"{call}: outcome {end.get('outcome')} ({end.get('error', '')}); "
                    f"expected {want['outcome']}",
                )
            )
            continue
        result = end.get("result", {})
        for key, value in want.items():
            if key == "outcome":
                continue
            if key in STREAMS:
                got = bytes.fromhex(result.get(f"{key}_hex", ""))
                if got != str(value).encode():
                    out.append(("", f"{call}: result {key} {got!r}; expected {value!r}"))
            elif result.get(key) != value:
                out.append(("", f"{call}: result {key} = {result.get(key)!r}; expected {value!r}"))
    for call, want_id in then.get("ids", {}).items():
        got_id = next(
            (
                e.get("invocation")
                for e in trace
                if e.get("type") == "invocation" and e.get("call") == call
            ),
            None,
        )
        if got_id != want_id:
            out.append(("", f"{call}: invocation ID {got_id!r}; expected {want_id!r}"))
    return out
