"""The dispatch-recorder oracle: every universal DR rule, checked on any trace.

From ``given`` (the scripted provider, policy and recorder) and the trace, the oracle
derives what a conforming executor and turn loop must have done, above all that no
mutation takes effect before its record returned OK, and that a result whose redaction
was proposed (with a recorder present) never reaches anything the model can see.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.model import (
    PRE_KINDS,
    behaviour_for,
    calls_of,
    failed,
    policy_for,
    pre_kind,
)
from seamspec.conformance._contracts.dispatch_recorder.oracle_journal import (
    caveats as journal_caveats,
)
from seamspec.conformance._contracts.dispatch_recorder.oracle_journal import check_journal

__all__ = ["caveats", "check"]

Violation = tuple[str, str]
#: Events whose ``messages`` the model (or whoever resumes the turn) can see.
VISIBLE = ("provider_call", "commit_enter", "turn_end")
FAIL_RULES = {"raised": "DR-RAISE", "hang": "DR-HANG", "late": "DR-HANG"}


class _Oracle:
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
        self.cancel_i = self._first("cancel_requested")
        end = self._first("turn_end")
        self.turn_end = trace[end] if end is not None else None

    def _first(self, kind: str, **fields: Any) -> int | None:
        for i, e in enumerate(self.events):
            if e["type"] == kind and all(e.get(k) == v for k, v in fields.items()):
                return i
        return None

    def _all(self, kind: str, **fields: Any) -> list[int]:
        return [
            i
            for i, e in enumerate(self.events)
            if e["type"] == kind and all(e.get(k) == v for k, v in fields.items())
        ]

    def flag(self, rule: str, message: str) -> None:
        if (rule, message) not in self.out:
            self.out.append((rule, message))

    def failure(self, record: dict[str, Any]) -> str | None:
        """Why this record must count as failed (``None``: it succeeded)."""
        scripted = None
        if not self.journal and self.recorder is not None:
            scripted = failed(behaviour_for(self.recorder.get("record"), record["enter"]["n"]))
        exit_ = record["exit"]
        if exit_ is None:
            return "cancelled" if self.cancel_i is not None else scripted or "never returned"
        outcome = exit_.get("outcome")
        if outcome == "cancelled":
            if scripted in ("hang", "late"):
                return scripted
            return "cancelled" if self.cancel_i is not None else "hang"
        if outcome != "ok":
            return str(outcome)
        return scripted

    def visible(
        self, after: int = -1, before: int | None = None
    ) -> list[tuple[int, dict[str, Any]]]:
        """(event index, message) the model could see, within (after, before)."""
        found: list[tuple[int, dict[str, Any]]] = []
        for i, e in enumerate(self.events[: before if before is not None else len(self.events)]):
            if i > after and e["type"] in VISIBLE:
                found.extend((i, m) for m in e.get("messages", []))
        return found

    def tool_message(self, call: str) -> str | None:
        """The last visible tool result of ``call``."""
        found = [
            m["content"]
            for _, m in self.visible()
            if m.get("role") == "tool" and m.get("tool_call_id") == call
        ]
        return found[-1] if found else None

    # ----------------------------------------------------------------------------------

    def run(self) -> list[Violation]:
        for _, call in calls_of(self.given):
            self.check_call(call)
        self.check_commits()
        self.check_cancel()
        if self.journal:
            for item in check_journal(self.records, self.events):
                self.flag(*item)
        return self.out

    def check_call(self, call: dict[str, Any]) -> None:
        cid, policy = call["id"], policy_for(self.given, call["id"])
        pre = pre_kind(policy)
        records = [r for r in self.records if r["enter"].get("call") == cid]
        runs = self._all("tool_run", call=cid)
        exits = [self.events[i] for i in self._all("tool_exit", call=cid)]
        expected_kinds = []
        if self.recorder is not None:
            if pre in PRE_KINDS:
                expected_kinds.append(PRE_KINDS[pre])
            if "redact" in policy:
                expected_kinds.append("result_redaction")
        for r in records:
            if r["enter"].get("kind") not in expected_kinds:
                rule = "DR-NO-MUTATION" if pre in ("allow", "deny", "approval") else "DR-ONE-RECORD"
                self.flag(
                    rule,
                    f"{cid}: recorded a {r['enter'].get('kind')} although the policy decided {pre} {'with' if 'redact' in policy else 'without'} a redaction",
                )
        if self.recorder is None:
            self.check_absent(call, policy, runs, exits)
            return
        pre_record = None
        if pre in PRE_KINDS:
            pre_record = self.check_pre(call, policy, pre, records, runs)
            if pre_record is None:
                return
        if "redact" in policy and exits and "result" in exits[0]:
            post = self.check_post(call, policy, records, exits[0]["result"])
            kinds = [r["enter"].get("kind") for r in records]
            if pre_record is not None and kinds != [PRE_KINDS[pre], "result_redaction"]:
                self.flag(
                    "DR-BOTH",
                    f"{cid}: has a pre-dispatch mutation and a redaction; records were {kinds}, expected [{PRE_KINDS[pre]}, result_redaction]",
                )
            elif pre_record is not None and post is not None and post["i"] < pre_record["i"]:
                self.flag(
                    "DR-BOTH", f"{cid}: the redaction was recorded before the pre-dispatch mutation"
                )

    def _one(
        self, cid: str, kind: str, records: list[dict[str, Any]], payload: dict[str, Any]
    ) -> dict[str, Any] | None:
        mine = [r for r in records if r["enter"].get("kind") == kind]
        if len(mine) > 1:
            self.flag(
                "DR-ONE-RECORD", f"{cid}: {len(mine)} records of its {kind}; expected exactly one"
            )
        if not mine:
            return None
        got = mine[0]["enter"].get("payload")
        if got != payload:
            self.flag("DR-ONE-RECORD", f"{cid}: recorded {got!r}; the mutation was {payload!r}")
        return mine[0]

    def check_pre(
        self,
        call: dict[str, Any],
        policy: dict[str, Any],
        pre: str,
        records: list[dict[str, Any]],
        runs: list[int],
    ) -> dict[str, Any] | None:
        cid, value = call["id"], policy["pre"][pre]
        kind = PRE_KINDS[pre]
        payload: dict[str, Any] = {"tool_call_id": cid, "tool_name": call["tool"], "kind": kind}
        payload.update(
            {"original_args": call["args"], "new_args": value}
            if pre == "rewrite"
            else {"context": value}
        )
        record = self._one(cid, kind, records, payload)
        fail_rule = "DR-REWRITE-FAIL" if pre == "rewrite" else "DR-INJECT-FAIL"
        if record is None:
            if runs:
                self.flag(
                    "DR-RECORD-FIRST", f"{cid}: the tool ran but its {kind} was never recorded"
                )
                self.flag("DR-ONE-RECORD", f"{cid}: its {kind} was never recorded")
            elif self.cancel_i is None and self.tool_message(cid) is not None:
                self.flag("DR-ONE-RECORD", f"{cid}: its {kind} was never recorded")
            return None
        done_i = record["exit_i"] if record["exit_i"] is not None else len(self.events)
        for i in runs:
            if i < done_i:
                self.flag(
                    "DR-RECORD-FIRST", f"{cid}: the tool ran before the {kind} record returned"
                )
        why = self.failure(record)
        if why is None:
            if not runs and self.cancel_i is None:
                self.flag(
                    "DR-REWRITE" if pre == "rewrite" else "DR-INJECT",
                    f"{cid}: the {kind} was recorded but the tool never ran",
                )
            for i in runs:
                run = self.events[i]
                if pre == "rewrite" and run.get("args") != value:
                    self.flag(
                        "DR-REWRITE",
                        f"{cid}: ran with {run.get('args')!r}; the recorded new_args are {value!r}",
                    )
                if pre == "inject" and run.get("context") != [value]:
                    self.flag(
                        "DR-INJECT",
                        f"{cid}: ran with context {run.get('context')!r}; the recorded injection is {value!r}",
                    )
            return record
        rules = [fail_rule] + ([FAIL_RULES[why]] if why in FAIL_RULES else [])
        if why == "cancelled":
            rules = ["DR-CANCEL"]
        if runs:
            for rule in rules:
                self.flag(rule, f"{cid}: its {kind} record failed ({why}) yet the tool ran")
        if pre == "inject":
            for _, m in self.visible():
                if value in m.get("content", ""):
                    for rule in rules:
                        self.flag(
                            rule,
                            f"{cid}: its injection record failed ({why}) yet the context reached the model",
                        )
                    break
        if why != "cancelled":
            message = self.tool_message(cid)
            if self.turn_end and self.turn_end.get("outcome") == "completed" and not message:
                self.flag(
                    fail_rule,
                    f"{cid}: its {kind} could not be recorded, but the model got no denial",
                )
        return None

    def check_post(
        self,
        call: dict[str, Any],
        policy: dict[str, Any],
        records: list[dict[str, Any]],
        original: str,
    ) -> dict[str, Any] | None:
        cid, redacted = call["id"], str(policy["redact"])
        payload = {
            "tool_call_id": cid,
            "tool_name": call["tool"],
            "kind": "result_redaction",
            "original_result": original,
            "redacted_result": redacted,
        }
        record = self._one(cid, "result_redaction", records, payload)
        why = "never recorded" if record is None else self.failure(record)
        done_i = (
            len(self.events) if record is None or record["exit_i"] is None else record["exit_i"]
        )
        rule = "DR-REDACT" if why is None else "DR-REDACT-FAIL"
        for i, m in self.visible():
            content = m.get("content", "")
            if original in content and original != redacted:
                self.flag(
                    rule,
                    f"{cid}: the original result {original!r} reached the model (redaction {why or 'recorded'})",
                )
                if why in FAIL_RULES:
                    self.flag(
                        FAIL_RULES[why],
                        f"{cid}: the redaction record {why}, yet the original was released",
                    )
            if (
                m.get("tool_call_id") == cid
                and redacted in content
                and (i < done_i or why is not None)
            ):
                self.flag(
                    "DR-RECORD-FIRST",
                    f"{cid}: the redacted result was released before (or without) a successful record",
                )
        message = self.tool_message(cid)
        if why is None and message is not None and message != redacted:
            self.flag(
                "DR-REDACT", f"{cid}: released {message!r}; the recorded redaction is {redacted!r}"
            )
        if record is None and self.cancel_i is None and message is not None:
            self.flag("DR-ONE-RECORD", f"{cid}: its result_redaction was never recorded")
        return record

    def check_absent(
        self,
        call: dict[str, Any],
        policy: dict[str, Any],
        runs: list[int],
        exits: list[dict[str, Any]],
    ) -> None:
        cid = call["id"]
        for i in runs:
            run = self.events[i]
            if run.get("args") != call["args"] or run.get("context"):
                self.flag(
                    "DR-ABSENT",
                    f"{cid}: with no recorder it ran with args {run.get('args')!r} and context {run.get('context')!r}; expected the proposed call unchanged",
                )
        pre = pre_kind(policy)
        if (
            pre in PRE_KINDS
            and not runs
            and self.cancel_i is None
            and self.turn_end
            and self.turn_end.get("outcome") == "completed"
        ):
            self.flag(
                "DR-ABSENT",
                f"{cid}: with no recorder the {pre} must be dropped and the call run as proposed; it never ran",
            )
        if pre == "inject":
            for _, m in self.visible():
                if policy["pre"]["inject"] in m.get("content", "") and m.get("role") != "user":
                    self.flag("DR-ABSENT", f"{cid}: with no recorder, context was injected anyway")
        if "redact" in policy and exits and "result" in exits[0]:
            message = self.tool_message(cid)
            if message is not None and message != exits[0]["result"]:
                self.flag(
                    "DR-ABSENT",
                    f"{cid}: with no recorder the result must be released unredacted; the model got {message!r}",
                )

    def check_commits(self) -> None:
        if self.recorder is None or self.journal or self.recorder.get("commit_default"):
            if (
                self.recorder is not None
                and self.cancel_i is None
                and self.turn_end
                and self.turn_end.get("outcome") == "error"
            ):
                self.flag(
                    "DR-COMMIT-DEFAULT",
                    f"the turn failed ({self.turn_end.get('error')}) although the recorder has no commit of its own",
                )
            return
        provider = self._all("provider_call")
        commits = self._all("commit_enter")
        for k in range(len(provider) - 1):
            enter = [i for i in commits if self.events[i].get("n") == k]
            ok_exit = self._first("commit_exit", n=k, outcome="ok")
            nxt = provider[k + 1]
            if not enter or ok_exit is None or ok_exit > nxt:
                self.flag(
                    "DR-COMMIT-BARRIER",
                    f"step {k}: provider call {k + 1} happened before commit_accepted_step({k}) returned OK",
                )
                continue
            step_calls = {c["id"] for s, c in calls_of(self.given) if s == k}
            late = [
                e
                for e in self.events[enter[0] :]
                if e["type"] in ("tool_run", "record_enter") and e.get("call") in step_calls
            ]
            if late:
                self.flag(
                    "DR-COMMIT-BARRIER", f"step {k}: committed before its tool calls were done"
                )
        script = self.recorder.get("commit")
        for i in commits:
            n = self.events[i]["n"]
            why = failed(behaviour_for(script, n))
            exit_i = self._first("commit_exit", n=n)
            if why is None and exit_i is not None and self.events[exit_i].get("outcome") == "ok":
                continue
            after = [
                e
                for e in self.events[i + 1 :]
                if e["type"] in ("provider_call", "tool_run", "record_enter", "commit_enter")
            ]
            if after:
                self.flag(
                    "DR-COMMIT-FAIL",
                    f"commit {n} failed ({why or self.events[exit_i or i].get('outcome')}) yet the turn went on: {after[0]['type']}",
                )
            if self.cancel_i is None and (
                self.turn_end is None or self.turn_end.get("outcome") != "error"
            ):
                self.flag(
                    "DR-COMMIT-FAIL",
                    f"commit {n} failed ({why}) but the turn did not end with an error",
                )
            break

    def check_cancel(self) -> None:
        """DR-CANCEL after a cancellation; otherwise, a failed record must not end the turn."""
        if self.cancel_i is None:
            ended = self.turn_end and self.turn_end.get("outcome") == "error"
            commit_failed = any(
                e["type"] == "commit_exit" and e.get("outcome") != "ok" for e in self.events
            )
            if ended and not commit_failed and self.recorder and "commit" not in self.recorder:
                for why in filter(None, map(self.failure, self.records)):
                    rule = FAIL_RULES.get(why, "DR-RAISE")
                    self.flag(rule, f"a failed record ({why}) ended the turn")
            return
        for e in self.events[self.cancel_i + 1 :]:
            if e["type"] in ("tool_run", "provider_call", "commit_enter"):
                self.flag("DR-CANCEL", f"after the cancellation: {e['type']} {e.get('call', '')}")
        if self.turn_end is not None and self.turn_end.get("outcome") != "cancelled":
            outcome = self.turn_end.get("outcome")
            self.flag("DR-CANCEL", f"cancelled during a record, the turn ended {outcome}")


def check(
    request: dict[str, Any], _then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[Violation]:
    """Every universal DR rule this trace breaks, as (rule ID, explanation) pairs."""
    return _Oracle(request, trace).run()


def caveats(
    request: dict[str, Any], _then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[Violation]:
    """Rules judged on the implementation's word alone: (rule ID, why), shown with a pass."""
    recorder = request["given"].get("recorder")
    return journal_caveats(trace) if recorder and recorder.get("journal") else []
