"""A shell-output trace, indexed: which call got which ID, ended how, and when.

The oracle's rules read this index instead of the raw event list, so each rule is a few
lines about the contract rather than about finding events.

A call's invocation ID is what its observer was *called with*, as the kit's scripted
observer saw it, wherever that can be told: when no other call of the scenario uses the
same observer, every callback it got belongs to that call. Only when an observer is
shared, or was never called, does the index fall back to the ID the implementation
reported (the ``invocation`` event), and then only an ID its callbacks confirm or
nothing contradicts. Where the two disagree, :attr:`History.id_problems` says so.
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
    #: The step's position in ``when``.
    step: int = 0
    #: The invocation ID as the kit established it (see the module's docstring).
    invocation: int | None = None
    #: The ID the implementation reported taking, and where in the trace.
    reported: int | None = None
    invocation_at: int | None = None
    #: Where the call began (``run_start``): anything traced before it came before it.
    start_at: int | None = None
    end: dict[str, Any] | None = None
    end_at: int | None = None
    finish_at: int | None = None
    cancel_at: int | None = None
    #: The ``cancel_returned`` event of the cancel step, if any.
    cancel_end: dict[str, Any] | None = None
    #: Where the kit first found a thread reading the child's pipes (``seen_by: kit``):
    #: by then the child runs and its output is being read, so the invocation exists.
    reading_at: int | None = None
    #: After a time limit: whether a process of the command was still running.
    group_alive: bool | None = None
    kit_timeouts: list[int] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return bool(self.body.get("refused"))

    @property
    def observer(self) -> str | None:
        return self.body.get("observer")


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
        for index, step in enumerate(self.when):
            verb = step_verb(step)
            if verb in CALL_VERBS:
                self.calls[step[verb]["id"]] = Call(step[verb]["id"], verb, step[verb], index)
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
                if call is not None and e.get("seen_by") == "kit" and call.reading_at is None:
                    call.reading_at = i
            elif kind in ("callback_enter", "callback_exit"):
                self.by_invocation[int(e.get("invocation", -1))].append((i, e))
            elif kind == "idle":
                self.idle = bool(e.get("ok"))
            elif kind == "kit_timeout" and call is None:
                self.waits.append((i, e))
            elif call is None:
                continue
            elif kind == "run_start":
                call.start_at = i
            elif kind == "invocation":
                call.reported, call.invocation_at = int(e["invocation"]), i
            elif kind == "run_end":
                call.end, call.end_at = e, i
            elif kind == "finish_requested":
                call.finish_at = i
            elif kind == "cancel_requested":
                call.cancel_at = i
            elif kind == "cancel_returned":
                call.cancel_end = e
            elif kind == "group_check":
                call.group_alive = bool(e.get("alive"))
            elif kind == "kit_timeout":
                call.kit_timeouts.append(i)
        #: (rule, explanation) for every way the reported IDs and the observed ones differ.
        self.id_problems: list[tuple[str, str]] = []
        self._attribute_ids()

    # -- invocation IDs -----------------------------------------------------------------

    def seen_by(self, observer: str) -> dict[int, int]:
        """The invocation IDs ``observer`` was called with, each with its first trace index."""
        seen: dict[int, int] = {}
        for invocation, events in self.by_invocation.items():
            for i, e in events:
                if e.get("observer") == observer:
                    seen.setdefault(invocation, i)
        return seen

    def users(self, observer: str) -> list[Call]:
        return [c for c in self.calls.values() if c.observer == observer]

    def _attribute_ids(self) -> None:
        for call in self.calls.values():
            call.invocation = call.reported
            if call.observer is None:
                continue
            seen = self.seen_by(call.observer)
            if len(self.users(call.observer)) > 1:
                continue  # shared: only the report can say which callbacks are whose
            if len(seen) > 1:
                self.id_problems.append(
                    (
                        "SOO-IDS",
                        f"{call.ident}: its observer {call.observer} was called with several "
                        f"invocation IDs {sorted(seen)} for one invocation",
                    )
                )
            if not seen:
                continue
            observed = min(seen, key=lambda k: seen[k])
            if call.reported is not None and call.reported != observed:
                self.id_problems.append(
                    (
                        "SOO-IDS",
                        f"{call.ident}: reported invocation ID {call.reported}, but its "
                        f"observer was called with {observed}",
                    )
                )
            call.invocation = observed
            if call.invocation_at is None:
                call.invocation_at = seen[observed]

    def with_ids(self) -> list[Call]:
        """The calls that took an ID, lowest ID first."""
        took = [c for c in self.calls.values() if c.invocation is not None]
        return sorted(took, key=lambda c: (c.invocation or 0, c.step))

    @staticmethod
    def created_before(first: Call, second: Call) -> str | None:
        """Why ``first`` was certainly created before ``second`` was even started, or None.

        Only then does "IDs increase in creation order" say which must be lower: two calls
        started back to back may take their IDs in either order. Either ``first`` had
        taken its ID already, or the kit had found its child's pipes being read: a runner
        reads the pipes of an invocation it has created (upstream opens the session, and
        takes the ID, before it starts its readers), so an ID taken only later, at the
        first output say, was taken out of creation order.
        """
        if second.start_at is None:
            return None
        if first.invocation_at is not None and first.invocation_at < second.start_at:
            return "took its ID"
        if first.reading_at is not None and first.reading_at < second.start_at:
            return "had its child's pipes read"
        return None

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
        if call.body.get("missing_program") or call.body.get("not_executable"):
            # Never spawned: no child wrote a byte, so no chunk is a prefix of its output.
            return {s: b"" for s in STREAMS}
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
        # A call the kit itself had to cancel (it hung) is judged by what held it up
        # (``kit_timeout``), not by its callbacks: whether it had completed, and so owed
        # on_finish, before the kit gave up is something the trace cannot tell.
        return None

    def completed(self, call: Call) -> bool:
        if call.verb == "open":
            return call.finish_at is not None
        return call.end is not None and call.end.get("outcome") == "returned"
