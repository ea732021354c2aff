"""A shell-output trace, indexed: which call got which ID, ended how, and when.

The oracle's rules read this index instead of the raw event list, so each rule is a few
lines about the contract rather than about finding events.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from seamspec.conformance._contracts.shell_output.model import (
    CALL_VERBS,
    budget,
    cap,
    expected_output,
    step_verb,
)

__all__ = ["STREAMS", "Call", "History"]

STREAMS = ("stdout", "stderr")


@dataclass
class Call:
    """One `run`, `start` or `open` step, and what the trace says happened to it."""

    ident: str
    verb: str
    body: dict[str, Any]
    invocation: int | None = None
    invocation_at: int | None = None
    end: dict[str, Any] | None = None
    end_at: int | None = None
    finish_at: int | None = None
    cancel_at: int | None = None
    kit_timeouts: list[int] = field(default_factory=list)


class History:
    """Every call of the scenario and every callback, by invocation, with trace indexes."""

    def __init__(self, request: dict[str, Any], trace: list[dict[str, Any]]) -> None:
        self.given = request["given"]
        self.when = request["when"]
        self.trace = trace
        self.budget = budget(self.given)
        self.cap = cap(self.given)
        self.entries = {o["name"]: o for o in self.given.get("observers", [])}
        self.calls: dict[str, Call] = {}
        for step in self.when:
            verb = step_verb(step)
            if verb in CALL_VERBS:
                self.calls[step[verb]["id"]] = Call(step[verb]["id"], verb, step[verb])
        self.caller: set[str] = set()
        self.drains: set[str] = set()
        self.by_invocation: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.idle = False
        self.waits: list[tuple[int, dict[str, Any]]] = []
        for i, e in enumerate(trace):
            kind = e.get("type")
            call = self.calls.get(str(e.get("call")))
            if kind == "thread":
                (self.caller if e.get("role") == "caller" else self.drains).add(e.get("thread", ""))
            elif kind in ("callback_enter", "callback_exit"):
                self.by_invocation[int(e.get("invocation", -1))].append((i, e))
            elif kind == "idle":
                self.idle = bool(e.get("ok"))
            elif kind == "kit_timeout" and call is None:
                self.waits.append((i, e))
            elif call is None:
                continue
            elif kind == "invocation":
                call.invocation, call.invocation_at = int(e["invocation"]), i
            elif kind == "run_end":
                call.end, call.end_at = e, i
            elif kind == "finish_requested":
                call.finish_at = i
            elif kind == "cancel_requested":
                call.cancel_at = i
            elif kind == "kit_timeout":
                call.kit_timeouts.append(i)

    def in_flight(self, at: int, *, exclude: int | None = None) -> set[int]:
        """Invocations with a callback entered but not exited at trace index ``at``."""
        busy = set()
        for invocation, events in self.by_invocation.items():
            if invocation == exclude:
                continue
            open_ = 0
            for i, e in events:
                if i >= at:
                    break
                open_ += 1 if e["type"] == "callback_enter" else -1
            if open_ > 0:
                busy.add(invocation)
        return busy

    def offers(self, call: Call, stream: str, before: int | None = None) -> bytes:
        """Session scenarios: the bytes offered to ``call`` on ``stream`` before an index."""
        return b"".join(
            bytes.fromhex(e.get("hex", ""))
            for i, e in enumerate(self.trace)
            if e.get("type") == "offer"
            and e.get("call") == call.ident
            and e.get("stream") == stream
            and (before is None or i < before)
        )

    def allowed(self, call: Call) -> dict[str, bytes]:
        """Per stream, the bytes that could be accepted: all the child wrote, or what was
        offered while the session was still active."""
        if call.verb == "open":
            ends = [i for i in (call.finish_at, call.cancel_at) if i is not None]
            stop = min(ends) if ends else None
            return {s: self.offers(call, s, stop) for s in STREAMS}
        return expected_output(call.body.get("script", []))

    # -- when a call stopped ------------------------------------------------------------

    def stop_point(self, call: Call) -> tuple[str, int, str] | None:
        """For an invocation that ended without completing: (rule, trace index, why)."""
        if call.cancel_at is not None and (
            call.finish_at is None or call.cancel_at < call.finish_at
        ):
            return "SOO-CANCEL", call.cancel_at, "cancellation"
        end = call.end or {}
        if end.get("outcome") == "returned" and end.get("result", {}).get("timed_out"):
            return "SOO-TIMEOUT", call.end_at or 0, "the time limit"
        if end.get("outcome") == "raised":
            return "SOO-ERROR-NO-FINISH", call.end_at or 0, "the invocation failed"
        if end.get("outcome") == "cancelled":
            return "SOO-CANCEL", call.end_at or 0, "the kit cancelled it"
        return None

    def completed(self, call: Call) -> bool:
        if call.verb == "open":
            return call.finish_at is not None
        return call.end is not None and call.end.get("outcome") == "returned"
