"""The DR oracle's reading of a trace: records paired with their ends, what the model could
see, and why each record must count as failed.

Kept apart from the rules (``oracle.py`` for each call, ``oracle_turn.py`` for the turn) so
that every check reads the evidence the same way: above all :meth:`Evidence.failure`,
which tells a record the scenario scripted to fail from one the implementation cut off.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.model import behaviour_for, failed

__all__ = ["FAIL_RULES", "VISIBLE", "Evidence", "Violation"]

Violation = tuple[str, str]
#: Events whose ``messages`` the model (or whoever resumes the turn) can see.
VISIBLE = ("provider_call", "commit_enter", "turn_end")
#: The rule a failed record breaks besides the call's own fail rule, by why it failed.
FAIL_RULES = {"raised": "DR-RAISE", "hang": "DR-HANG", "late": "DR-HANG"}


class Evidence:
    """One trace read against its scenario's ``given`` and ``when``."""

    def __init__(self, request: dict[str, Any], trace: list[dict[str, Any]]) -> None:
        self.given: dict[str, Any] = request["given"]
        self.when: list[dict[str, Any]] = request["when"]
        self.events = trace
        self.recorder: dict[str, Any] | None = self.given.get("recorder")
        self.journal = bool(self.recorder and self.recorder.get("journal"))
        self.out: list[Violation] = []
        self.records: list[dict[str, Any]] = []  # enter index, enter, exit index, exit
        for i, e in enumerate(trace):
            if e["type"] == "record_enter":
                self.records.append({"i": i, "enter": e, "exit_i": None, "exit": None})
            elif e["type"] == "record_exit":
                for r in self.records:
                    if r["enter"].get("n") == e.get("n") and r["exit"] is None:
                        r["exit_i"], r["exit"] = i, e
        self.cancel_i = self.first("cancel_requested")
        end = self.first("turn_end")
        self.turn_end = trace[end] if end is not None else None
        self.completed = bool(self.turn_end and self.turn_end.get("outcome") == "completed")

    def first(self, kind: str, **fields: Any) -> int | None:
        for i, e in enumerate(self.events):
            if e["type"] == kind and all(e.get(k) == v for k, v in fields.items()):
                return i
        return None

    def all(self, kind: str, **fields: Any) -> list[int]:
        return [
            i
            for i, e in enumerate(self.events)
            if e["type"] == kind and all(e.get(k) == v for k, v in fields.items())
        ]

    def flag(self, rule: str, message: str) -> None:
        if (rule, message) not in self.out:
            self.out.append((rule, message))

    def scripted(self, record: dict[str, Any]) -> dict[str, Any]:
        """The behaviour the scenario scripted for this record (``{}``: the journal's)."""
        if self.journal or self.recorder is None:
            return {}
        return behaviour_for(self.recorder.get("record"), int(record["enter"].get("n", 0)))

    def failure(self, record: dict[str, Any]) -> str | None:
        """Why this record must count as failed (``None``: it succeeded).

        ``cancelled``: the caller cancelled the turn. ``cut off``: the scenario scripted a
        record that answers OK at once (or once its gate, since released, opened), yet the
        implementation stopped it: a time limit that is not the record's own.
        """
        behaviour = self.scripted(record)
        scripted = failed(behaviour)
        exit_ = record["exit"]
        if exit_ is None:
            return "cancelled" if self.cancel_i is not None else scripted or "never returned"
        outcome = exit_.get("outcome")
        if outcome == "cancelled":
            if scripted in ("hang", "late"):
                return scripted
            if self.cancel_i is not None and self.cancel_i < record["exit_i"]:
                return "cancelled"
            gate = behaviour.get("gate")
            released = self.first("gate_released", gate=gate) if gate is not None else None
            late = released is not None and "after_limit" in self.events[released]
            if released is not None and "after" in self.events[released] and not self.journal:
                # `release_after` opens the gate well inside the record's own limit (the
                # linter sees to it): whenever the cut-off came, it was not that limit.
                return "cut off"
            if gate is not None and (released is None or late or released > record["exit_i"]):
                # Blocked on a gate still shut when the limit came: one never released,
                # released after the cut-off, or one `release_late` opened only past the
                # limit (on a loaded machine the cut-off may be traced after that release).
                return "hang"
            return "hang" if self.journal else "cut off"
        if outcome != "ok":
            return str(outcome)
        return scripted

    def visible(self) -> list[tuple[int, dict[str, Any]]]:
        """(event index, message) of everything the model or a resumed turn could see."""
        return [
            (i, m)
            for i, e in enumerate(self.events)
            if e["type"] in VISIBLE
            for m in e.get("messages") or []
        ]

    def tool_message(self, call: str, nth: int | None = None) -> str | None:
        """The last visible tool result of ``call``.

        With ``nth`` (a call id the provider reused in several steps), the result of its
        ``nth`` call: the ``nth`` tool message of that id in the fullest message list the
        model or a resumed turn could see.
        """
        if nth is not None:
            lists = [
                [m for m in e.get("messages") or [] if m.get("role") == "tool"]
                for e in self.events
                if e["type"] in VISIBLE
            ]
            mine = [[m for m in ms if m.get("tool_call_id") == call] for ms in lists]
            fullest = max(mine, key=len, default=[])
            return str(fullest[nth].get("content")) if nth < len(fullest) else None
        found = [
            m.get("content")
            for _, m in self.visible()
            if m.get("role") == "tool" and m.get("tool_call_id") == call
        ]
        return str(found[-1]) if found else None

    def step_window(self, step: int) -> range:
        """Event indices from the provider call for ``step`` up to the next provider call."""
        asked = self.all("provider_call")
        steps = [self.events[i].get("step") for i in asked]
        if step not in steps:
            return range(0)
        start = asked[steps.index(step)]
        later = [i for i in asked if i > start]
        return range(start, later[0] if later else len(self.events))

    def shows(self, text: str, call: str, roles: tuple[str, ...]) -> int | None:
        """Where the model could first see ``text`` (``None``: nowhere).

        Text with something besides whitespace counts anywhere in any message but the
        user's prompt; empty or whitespace-only text only as the whole content of one of
        ``call``'s own messages with one of these roles, since it hides in any other text.
        """
        for i, m in self.visible():
            content = str(m.get("content", ""))
            if text.strip() and m.get("role") != "user" and text in content:
                return i
            if m.get("role") in roles and m.get("tool_call_id") == call and content == text:
                return i
        return None

    def context_leaked(self, text: str, call: str, message: str | None) -> bool:
        """Whether a context for a call id the provider reused reached the model although
        this call's injection failed.

        The same text is legitimately visible from the id's other calls, so :meth:`shows`
        cannot tell; instead the most ``context`` messages of ``call`` holding ``text`` in
        any one list the model or a resumed turn could see must not outnumber that id's
        recorded injections of it, and this call's own result must not quote it.
        """
        if text.strip() and message is not None and text in message:
            return True
        shown = max(
            (
                sum(
                    1
                    for m in e.get("messages") or []
                    if m.get("role") == "context"
                    and m.get("tool_call_id") == call
                    and m.get("content") == text
                )
                for e in self.events
                if e["type"] in VISIBLE
            ),
            default=0,
        )
        recorded = sum(
            1
            for r in self.records
            if r["enter"].get("call") == call
            and r["enter"].get("kind") == "context_injection"
            and (r["enter"].get("payload") or {}).get("context") == text
            and self.failure(r) is None
        )
        return shown > recorded
