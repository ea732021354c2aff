"""The oracle's rules about what a process call returned, and how long its caller waited.

The result is judged against the emitter's script (it is data: the kit knows every byte
the child writes and how it ends): SOO-ENVELOPE for a completed command (SOO-RESULT-BYTES,
strict, where its streams are the lossy text upstream keeps instead), SOO-FINISH for
one that "completed" while a grandchild still held its pipes, SOO-TIMEOUT
and SOO-TIMEOUT-RESULT for a timed-out one, SOO-TIMEOUT-GROUP for what a time limit
left running. Durations are the driver's own measurements (``elapsed``), judged against
the step's ``within`` under the rule that promises the bound.
"""

from __future__ import annotations

from seamspec.conformance._contracts.shell_output.history import STREAMS, Call, History
from seamspec.conformance._contracts.shell_output.model import (
    detached_grandchildren,
    ends_by_signal,
    expected_exit,
    expected_output,
    has_grandchild,
    time_limit,
)

__all__ = ["check_bounds", "check_envelope", "upstream_text"]

Violation = tuple[str, str]


def check_envelope(
    history: History,
    call: Call,
    *,
    panicked: bool,
    finish_raised: bool,
    shown: dict[str, bytes] | None = None,
) -> list[Violation]:
    """The call's result against its script; ``shown`` is what its observer was given."""
    end = call.end
    if end is None:
        return []
    script = call.body.get("script", [])
    culprit = ["SOO-PANIC"] if panicked else ["SOO-FINISH-PANIC"] if finish_raised else []
    if call.body.get("missing_program") or call.body.get("not_executable"):
        if end.get("outcome") == "returned":
            return [
                (
                    "SOO-ERROR-NO-FINISH",
                    f"{call.ident}: a program that cannot run returned a result",
                )
            ]
        return []
    if end.get("outcome") == "raised":
        # The emitter always spawns: a script that ends by itself (an exit of any status,
        # a signal of its own) is a child that ran and exited, which completed and did
        # not fail (SOO-ERROR-NO-FINISH), whatever its status reads like (126, 127).
        ran = ["SOO-ERROR-NO-FINISH"] if expected_exit(script) is not None else []
        return [
            (rule, f"{call.ident}: the command raised {end.get('error')}")
            for rule in ["SOO-ENVELOPE", *ran, *culprit]
        ]
    if end.get("outcome") != "returned":
        return []
    result = end.get("result", {})
    if result.get("timed_out"):
        return _timed_out(history, call, result, shown or {})
    if expected_exit(script) is None:
        return [("SOO-TIMEOUT", f"{call.ident}: a command that hangs returned without timing out")]
    if has_grandchild(script):
        return [
            (
                "SOO-FINISH",
                f"{call.ident}: returned as completed (not timed out) although a grandchild "
                "still held the pipes: the child's exit alone is not completion",
            )
        ]
    written = expected_output(script)
    want: dict[str, object] = {"exit_code": expected_exit(script), "timed_out": False}
    if ends_by_signal(script):
        # How a signal death is reported (Python's negative code, a shell's 128 + N, a
        # missing code) is the runner's; only "not an exit of 0" is judged.
        del want["exit_code"]
        if result.get("exit_code") == 0:
            want["exit_code"] = "not 0 (the child was killed by a signal)"
    for s in STREAMS:
        want[f"{s}_hex"] = written[s][: history.cap].hex()
        want[f"{s}_truncated"] = len(written[s]) > history.cap
    wrong = {k: (result.get(k), v) for k, v in want.items() if result.get(k) != v}
    as_text = _as_upstream_text(wrong, written, history.cap)
    wrong = {k: v for k, v in wrong.items() if k not in as_text}
    out: list[Violation] = []
    if as_text:
        out.append(
            (
                "SOO-RESULT-BYTES",
                f"{call.ident}: the result's streams are decoded text, not the bytes the "
                f"child wrote (observed, expected): {as_text}",
            )
        )
    if wrong:
        out += [
            (rule, f"{call.ident}: result fields (observed, expected): {wrong}")
            for rule in ["SOO-ENVELOPE", *culprit]
        ]
    return out


def upstream_text(data: bytes, cap: int) -> bytes:
    """What upstream's envelope holds for a stream that wrote ``data``, as bytes.

    Upstream keeps the first ``cap`` bytes read, lossy-decodes them (an undecodable byte
    or a sequence cut at the cap becomes U+FFFD) and cuts that text back to a character
    boundary within the cap (shell_tool.rs:1954-1957, 1961-1969, applied at 1010-1016).
    That form meets SOO-ENVELOPE; only seamspec's SOO-RESULT-BYTES (strict) wants bytes.
    """
    text = data[:cap].decode("utf-8", "replace").encode("utf-8")
    end = min(len(text), cap)
    while end and end < len(text) and (text[end] & 0xC0) == 0x80:
        end -= 1
    return text[:end]


def _as_upstream_text(
    wrong: dict[str, tuple[object, object]], written: dict[str, bytes], cap: int
) -> dict[str, tuple[object, object]]:
    """The wrong fields a runner that keeps its result as upstream's lossy text explains.

    A stream equal to :func:`upstream_text` of what was written is that form; so is its
    truncation flag set because the decoded text outgrew the cap (upstream flags a text
    longer than the cap, 1010-1011). Anything else stays SOO-ENVELOPE's.
    """
    out: dict[str, tuple[object, object]] = {}
    for s in STREAMS:
        key = f"{s}_hex"
        if key not in wrong or wrong[key][0] != upstream_text(written[s], cap).hex():
            continue
        out[key] = wrong[key]
        grown = len(written[s][:cap].decode("utf-8", "replace").encode("utf-8")) > cap
        if grown and wrong.get(f"{s}_truncated") == (True, False):
            out[f"{s}_truncated"] = wrong[f"{s}_truncated"]
    return out


def _timed_out(
    history: History, call: Call, result: dict[str, object], shown: dict[str, bytes]
) -> list[Violation]:
    out: list[Violation] = []
    if time_limit(history.given, call.body) is None:
        out.append(("SOO-TIMEOUT", f"{call.ident}: timed out with no time limit"))
    if result.get("exit_code") is not None:
        out.append(
            (
                "SOO-TIMEOUT-RESULT",
                f"{call.ident}: timed out yet reports exit code {result.get('exit_code')}",
            )
        )
    written = expected_output(call.body.get("script", []))
    for s in STREAMS:
        got = bytes.fromhex(str(result.get(f"{s}_hex", "")))
        if not written[s][: history.cap].startswith(got):
            out.append(
                (
                    "SOO-TIMEOUT-RESULT",
                    f"{call.ident}: {s} of the timed-out result is {got!r}, "
                    "not what the child wrote before it was killed",
                )
            )
        elif len(got) < min(len(shown.get(s, b"")), history.cap):
            # The runner captures every byte before offering it: what the observer was
            # shown had been read, so the result must hold it (this needs no clock).
            out.append(
                (
                    "SOO-TIMEOUT-RESULT",
                    f"{call.ident}: the timed-out result's {s} ({got!r}) lacks output the "
                    f"observer had already been shown ({shown[s]!r})",
                )
            )
    if call.group_alive:
        out.append(
            (
                "SOO-TIMEOUT-GROUP",
                f"{call.ident}: a process of the timed-out command was still running "
                "after the call returned (the time limit did not end its process group)",
            )
        )
    return out


def check_bounds(history: History, call: Call) -> list[Violation]:
    """Each ``within`` of the call's steps against what the driver measured."""
    out: list[Violation] = []
    bound = call.body.get("within")
    if bound is not None and call.end is not None:
        elapsed = call.end.get("elapsed")
        rule, why = _run_bound_rule(history, call)
        if not isinstance(elapsed, (int, float)):
            out.append((rule, f"{call.ident}: the trace does not say how long the call took"))
        elif elapsed > float(bound):
            out.append((rule, f"{call.ident}: returned after {elapsed:.2f} s, {why} ({bound} s)"))
    out += _not_before_limit(history, call)
    cancel_bound = _cancel_bound(history, call)
    if cancel_bound is not None and call.cancel_end is not None:
        elapsed = call.cancel_end.get("elapsed")
        if not isinstance(elapsed, (int, float)):
            out.append(("SOO-CANCEL", f"{call.ident}: the trace does not say how long cancel took"))
        elif elapsed > cancel_bound:
            out.append(
                (
                    "SOO-CANCEL",
                    f"{call.ident}: the cancellation took {elapsed:.2f} s, "
                    f"more than its bound ({cancel_bound} s)",
                )
            )
    return out


#: How much earlier than its limit the driver may see a timed-out call return (clocks).
EARLY_SLACK = 0.01


def _not_before_limit(history: History, call: Call) -> list[Violation]:
    """A timed-out call must not have returned before its limit (SOO-TIMEOUT, wall-clock).

    The driver starts its clock before the call, so a limit kept to the letter is never
    seen early; a limit rounded down (0.3 s taken as 0) is. A limit rounded up is judged
    by the scenarios' ``within`` (``timeout-fractional-limit-not-rounded-up`` puts the next
    whole second past its bound).
    """
    end = call.end
    limit = time_limit(history.given, call.body)
    if end is None or end.get("outcome") != "returned" or not limit:
        return []
    elapsed = end.get("elapsed")
    if not end.get("result", {}).get("timed_out") or not isinstance(elapsed, (int, float)):
        return []
    if elapsed >= float(limit) - EARLY_SLACK:
        return []
    return [
        (
            "SOO-TIMEOUT",
            f"{call.ident}: timed out after {elapsed:.3f} s, before its {limit} s limit",
        )
    ]


def _run_bound_rule(history: History, call: Call) -> tuple[str, str]:
    """The rule a late return breaks, from what was holding the call up when it ended."""
    at = call.end_at if call.end_at is not None else len(history.trace)
    blocked = call.invocation is not None and call.invocation in history.in_flight(at)
    if time_limit(history.given, call.body) is not None:
        if blocked:
            return (
                "SOO-NO-STALL",
                "past its bound although a blocked observer may not delay a time limit",
            )
        if detached_grandchildren(call.body.get("script", [])):
            return (
                "SOO-TIMEOUT",
                "past its bound: the call returns at its limit, whatever a process outside "
                "the command's group still does with the pipes",
            )
        if has_grandchild(call.body.get("script", [])):
            return (
                "SOO-TIMEOUT-GROUP",
                "past its bound: the time limit waited for a process it should have ended",
            )
        return "SOO-TIMEOUT", "past the bound its time limit promises"
    # The linter allows `within` only under a time limit or on a call that is cancelled.
    return "SOO-CANCEL", "past its bound although it was cancelled"


def _cancel_bound(history: History, call: Call) -> float | None:
    for step in history.when:
        body = step.get("cancel")
        if isinstance(body, dict) and body.get("id") == call.ident and "within" in body:
            return float(body["within"])
    return None
