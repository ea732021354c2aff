"""Judges a shell-output trace against the scenario's own ``then``.

Everything here is read from what the kit's scripted observers received (``outputs``,
``chunks``, ``finishes``, ``callbacks``), what the driver recorded of each call's result
(``results``), and the invocation IDs as :class:`History` establishes them from the
callbacks (``ids``), which are relative: 1 is the lowest ID any call took, so no
scenario depends on where the implementation's counter happens to stand.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.shell_output.history import STREAMS, History

__all__ = ["check"]


def _chunks(trace: list[dict[str, Any]], observer: str, stream: str) -> list[bytes]:
    return [
        bytes.fromhex(e.get("hex", ""))
        for e in trace
        if e.get("type") == "callback_enter"
        and e.get("hook") == "on_output"
        and e.get("observer") == observer
        and e.get("stream") == stream
    ]


def _wanted(want: dict[str, Any], stream: str) -> Any:
    """The expectation for ``stream`` as bytes (or a list of bytes), or None."""
    if stream in want:
        value = want[stream]
        return [str(v).encode() for v in value] if isinstance(value, list) else str(value).encode()
    if f"{stream}_hex" in want:
        value = want[f"{stream}_hex"]
        return (
            [bytes.fromhex(v) for v in value] if isinstance(value, list) else bytes.fromhex(value)
        )
    return None


def _calls(trace: list[dict[str, Any]], observer: str, hook: str) -> int:
    return sum(
        1
        for e in trace
        if e.get("type") == "callback_enter"
        and e.get("hook") == hook
        and e.get("observer") == observer
    )


def check(
    request: dict[str, Any], then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """Each way the trace differs from ``then``, as ("", explanation)."""
    out: list[tuple[str, str]] = []
    for observer, want in then.get("outputs", {}).items():
        for stream in STREAMS:
            expected = _wanted(want, stream)
            got = b"".join(_chunks(trace, observer, stream))
            if expected is not None and got != expected:
                out.append(("", f"{observer} observed {stream} {got!r}; expected {expected!r}"))
    for observer, want in then.get("chunks", {}).items():
        for stream in STREAMS:
            expected = _wanted(want, stream)
            chunks = _chunks(trace, observer, stream)
            if expected is not None and chunks != expected:
                out.append(
                    ("", f"{observer} got the {stream} chunks {chunks!r}; expected {expected!r}")
                )
    for observer, count in then.get("finishes", {}).items():
        got_count = _calls(trace, observer, "on_finish")
        if got_count != count:
            out.append(("", f"{observer}: on_finish called {got_count} times; expected {count}"))
    for observer, counts in then.get("callbacks", {}).items():
        for hook, count in counts.items():
            got_count = _calls(trace, observer, hook)
            if got_count != count:
                out.append(("", f"{observer}: {hook} called {got_count} times; expected {count}"))
    out.extend(_results(then, trace))
    out.extend(_ids(request, then, trace))
    return out


def _results(then: dict[str, Any], trace: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for call, want in then.get("results", {}).items():
        end = next((e for e in trace if e.get("type") == "run_end" and e.get("call") == call), None)
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
    return out


def _ids(
    request: dict[str, Any], then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """``then.ids``, relative: the lowest ID taken by any call of the scenario counts as 1."""
    wanted = then.get("ids", {})
    if not wanted:
        return []
    calls = History(request, trace).calls
    taken = [c.invocation for c in calls.values() if c.invocation is not None]
    base = min(taken) - 1 if taken else 0
    out: list[tuple[str, str]] = []
    for ident, want in wanted.items():
        got = calls[ident].invocation if ident in calls else None
        relative = None if got is None else got - base
        if relative != want:
            shown = "none" if got is None else f"{relative} (the counter said {got})"
            out.append(
                ("", f"{ident}: invocation ID {shown}; expected {'none' if want is None else want}")
            )
    return out
