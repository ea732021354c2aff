"""The dispatch-recorder oracle: every universal DR rule, checked on any trace.

From ``given`` (the scripted provider, policy, approver and recorder) and the trace, the
oracle derives what a conforming executor and turn loop must have done, above all that no
mutation takes effect before its record returned OK, and that a result whose redaction
was proposed (with a recorder present) never reaches anything the model can see. This
module judges each proposed call; ``oracle_turn.py`` judges the turn (commits,
cancellation, time limits the kit had to enforce), ``oracle_journal.py`` the journal.
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
from seamspec.conformance._contracts.dispatch_recorder.oracle_trace import (
    FAIL_RULES,
    Evidence,
    Violation,
)
from seamspec.conformance._contracts.dispatch_recorder.oracle_turn import check_turn
from seamspec.reference import WITHHELD_NOTICE, denial_text

__all__ = ["caveats", "check"]

#: What every denial starts with (DR-OUTCOME-TEXT).
DENIED = denial_text("")
_NOT_MUTATIONS = ("allow", "deny", "approval")


class _Call:
    """The checks of one proposed call."""

    def __init__(
        self, ev: Evidence, call: dict[str, Any], step: int = 0, nth: int | None = None
    ) -> None:
        self.ev, self.call, self.cid, self.nth = ev, call, call["id"], nth
        self.policy = policy_for(ev.given, self.cid)
        self.pre = pre_kind(self.policy)
        #: A call id reused in another step (``nth``: which of its calls this is): only the
        #: events between the provider call that proposed it and the next one are its own.
        window = range(len(ev.events)) if nth is None else ev.step_window(step)
        self.records = [
            r for r in ev.records if r["enter"].get("call") == self.cid and r["i"] in window
        ]
        self.runs = [i for i in ev.all("tool_run", call=self.cid) if i in window]
        exits = [ev.events[i] for i in ev.all("tool_exit", call=self.cid) if i in window]
        self.result: str | None = next((str(e["result"]) for e in exits if "result" in e), None)
        #: The tool raised: its result is the implementation's own failure text, which the
        #: kit knows only from the redaction record the implementation made of it.
        self.raised = self.result is None and any("raised" in e for e in exits)
        #: What the post-dispatch policy was asked about (its ``redaction_asked`` events):
        #: for a tool that raised, the only place the kit learns its failure text.
        self.asked = [
            str(ev.events[i].get("result"))
            for i in ev.all("redaction_asked", call=self.cid)
            if i in window
        ]
        self.message = ev.tool_message(self.cid, nth)
        self.approval_i = next((i for i in ev.all("approval", call=self.cid) if i in window), None)

    def flag(self, rule: str, message: str) -> None:
        self.ev.flag(rule, f"{self.cid}: {message}")

    def ended_by(self, why: str) -> bool:
        """A failed record (not a cancellation) ended the turn with an error."""
        ended = bool(self.ev.turn_end and self.ev.turn_end.get("outcome") == "error")
        # A commit fails by its answer, or by its script: one that answers OK only past
        # commit_time_limit (``late``) failed although its exit says ok.
        script = (self.ev.recorder or {}).get("commit")
        commit_failed = any(
            e["type"] == "commit_exit"
            and (e.get("outcome") != "ok" or failed(behaviour_for(script, int(e.get("n", 0)))))
            for e in self.ev.events
        )
        return why != "cancelled" and ended and not commit_failed and self.ev.cancel_i is None

    def run(self) -> None:
        self.check_kinds()
        if self.ev.recorder is None:
            self.check_absent()
            return
        self.check_own_authorisation()
        if self.pre == "approval":
            self.check_approval()
        if self.pre == "deny" and self.message is not None:
            reason = self.policy["pre"]["deny"]
            if self.message != denial_text(reason):
                self.flag(
                    "DR-OUTCOME-TEXT",
                    f"denied with {self.message!r}; expected {denial_text(reason)!r}",
                )
        pre_record = None
        if self.pre in PRE_KINDS:
            pre_record = self.check_pre()
            if pre_record is None:
                return
        if "redact" in self.policy and (self.result is not None or self.failure_text()):
            self.check_post()
            # Records are listed in trace order, so this also catches the redaction
            # recorded before the pre-dispatch mutation.
            kinds = [r["enter"].get("kind") for r in self.records]
            if pre_record is not None and kinds != [PRE_KINDS[self.pre], "result_redaction"]:
                self.flag(
                    "DR-BOTH",
                    f"has a pre-dispatch mutation and a redaction; records "
                    f"were {kinds}, expected [{PRE_KINDS[self.pre]}, result_redaction]",
                )

    def check_kinds(self) -> None:
        """Records of mutations the policy never made, or of results that never existed."""
        possible = set()
        if self.ev.recorder is not None and self.pre in PRE_KINDS:
            possible.add(PRE_KINDS[self.pre])
        if self.ev.recorder is not None and "redact" in self.policy:
            possible.add("result_redaction")
        for r in self.records:
            kind = r["enter"].get("kind")
            if kind not in possible:
                rule = "DR-NO-MUTATION" if self.pre in _NOT_MUTATIONS else "DR-ONE-RECORD"
                with_ = "with" if "redact" in self.policy else "without"
                self.flag(
                    rule,
                    f"recorded a {kind} although the policy decided {self.pre} {with_} a redaction",
                )
            elif kind == "result_redaction" and self.result is None and not self.raised:
                rule = "DR-BOTH" if self.pre in PRE_KINDS else "DR-NO-MUTATION"
                self.flag(
                    rule,
                    "recorded a result_redaction, yet the tool never ran, so "
                    "there was no result to redact",
                )

    def check_own_authorisation(self) -> None:
        """DR-RECORD-FIRST: a tool runs with what its own call's records authorised, nothing
        more: no context but its own injection's, no arguments but the proposed ones or its
        own rewrite's (whether those records succeeded is ``check_pre``'s to judge)."""
        if self.pre == "approval":
            return  # an approved call runs as proposed: DR-APPROVAL judges it
        own = [str(self.policy["pre"]["inject"])] if self.pre == "inject" else []
        for i in self.runs:
            run = self.ev.events[i]
            extra = [c for c in run.get("context") or [] if c not in own]
            if extra:
                self.flag(
                    "DR-RECORD-FIRST",
                    f"ran with context {extra!r} that no record of its own authorised "
                    "(another call's injection authorises only that call)",
                )
            if self.pre != "rewrite" and run.get("args") != self.call["args"]:
                self.flag(
                    "DR-RECORD-FIRST",
                    f"ran with args {run.get('args')!r}, which no rewrite of its own "
                    f"authorised; it proposed {self.call['args']!r}",
                )

    def one(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        mine = [r for r in self.records if r["enter"].get("kind") == kind]
        if len(mine) > 1:
            self.flag("DR-ONE-RECORD", f"{len(mine)} records of its {kind}; expected exactly one")
        if not mine:
            return None
        got = mine[0]["enter"].get("payload")
        if got != payload:
            self.flag("DR-ONE-RECORD", f"recorded {got!r}; the mutation was {payload!r}")
        return mine[0]

    def check_pre(self) -> dict[str, Any] | None:
        """The pre-dispatch record, if it succeeded; every finding about it either way."""
        cid, value, kind = self.cid, self.policy["pre"][self.pre], PRE_KINDS[self.pre]
        payload: dict[str, Any] = {"tool_call_id": cid, "tool_name": self.call["tool"]}
        payload["kind"] = kind
        if self.pre == "rewrite":
            payload.update({"original_args": self.call["args"], "new_args": value})
        else:
            payload["context"] = value
        record = self.one(kind, payload)
        fail_rule = "DR-REWRITE-FAIL" if self.pre == "rewrite" else "DR-INJECT-FAIL"
        if record is None and self.pre == "rewrite" and value == self.call["args"]:
            # Upstream does not say whether a rewrite that changes nothing is a mutation;
            # seamspec records it (DR-REWRITE-UNCHANGED), so skipping it is only that.
            if self.runs or (self.ev.cancel_i is None and self.message is not None):
                self.flag(
                    "DR-REWRITE-UNCHANGED",
                    "its rewrite to the very same arguments was never recorded",
                )
            return None
        if record is None:
            if self.runs:
                self.flag("DR-RECORD-FIRST", f"the tool ran but its {kind} was never recorded")
                self.flag("DR-ONE-RECORD", f"its {kind} was never recorded")
            elif self.ev.cancel_i is None and self.message is not None:
                self.flag("DR-ONE-RECORD", f"its {kind} was never recorded")
                self.check_not_skipped(kind)
            return None
        done_i = record["exit_i"] if record["exit_i"] is not None else len(self.ev.events)
        if any(i < done_i for i in self.runs):
            self.flag("DR-RECORD-FIRST", f"the tool ran before the {kind} record returned")
        why = self.ev.failure(record)
        if why is None:
            self.check_applied(value)
            return record
        if why == "cut off":
            self.flag(
                "DR-HANG",
                f"its {kind} record answered OK within its limit, yet the executor cut "
                "it off: the time limit must be the record's own",
            )
        rules = [fail_rule, *([FAIL_RULES[why]] if why in FAIL_RULES else [])]
        rules = ["DR-CANCEL"] if why == "cancelled" else rules
        for rule in rules if self.runs else ():
            self.flag(rule, f"its {kind} record failed ({why}) yet the tool ran")
        leaked = (
            self.ev.shows(value, cid, ("context",)) is not None
            if self.nth is None
            else self.ev.context_leaked(value, cid, self.message)
        )
        if self.pre == "inject" and leaked:
            for rule in rules:
                self.flag(
                    rule, f"its injection record failed ({why}) yet the context reached the model"
                )
        if why == "cancelled":
            return None
        if self.ev.completed and self.message is None:
            self.flag(fail_rule, f"its {kind} could not be recorded, but the model got no denial")
        if self.ended_by(why):
            for rule in [fail_rule, *([FAIL_RULES[why]] if why in FAIL_RULES else [])]:
                self.flag(rule, f"a failed {kind} record ({why}) ended the turn")
        if self.message is not None and not self.runs and not self.message.startswith(DENIED):
            self.flag(
                "DR-OUTCOME-TEXT",
                f"its {kind} could not be recorded; the model got "
                f"{self.message!r}, which is not a denial ({DENIED!r}...)",
            )
        reason = self.ev.scripted(record).get("error")
        if reason and self.message is not None and reason not in self.message:
            self.flag(
                "DR-OUTCOME-TEXT",
                f"the denial {self.message!r} does not give the recorder's reason {reason!r}",
            )
        return None

    def check_not_skipped(self, kind: str) -> None:
        """A mutation the call answered for but never recorded, after other records
        timed out: the limit is each record's own (DR-HANG), so earlier hung signers do
        not excuse skipping this one (a circuit breaker fails a healthy record unmade)."""
        if "record_time_limit" not in self.ev.given:
            return
        hung = [r for r in self.ev.records if self.ev.failure(r) in ("hang", "late")]
        if hung:
            self.flag(
                "DR-HANG",
                f"its {kind} was never recorded after {len(hung)} other record(s) timed "
                "out: every record must be made, each with its own time limit",
            )

    def check_applied(self, value: str) -> None:
        """A recorded pre-dispatch mutation: the tool runs, with exactly what was recorded."""
        rule = "DR-REWRITE" if self.pre == "rewrite" else "DR-INJECT"
        kind = PRE_KINDS[self.pre]
        if not self.runs and self.ev.cancel_i is None:
            self.flag(rule, f"the {kind} was recorded but the tool never ran")
        for i in self.runs:
            run = self.ev.events[i]
            if self.pre == "rewrite" and run.get("args") != value:
                self.flag(
                    rule, f"ran with {run.get('args')!r}; the recorded new_args are {value!r}"
                )
            if self.pre == "inject" and run.get("context") != [value]:
                self.flag(
                    rule,
                    f"ran with context {run.get('context')!r}; the recorded injection is {value!r}",
                )

    def failure_text(self) -> str | None:
        """A raised tool's failure text: what the kit's post-dispatch policy was asked
        about (its ``redaction_asked`` event), else what the first redaction record carries.

        The contract does not fix that text, so a raised tool is judged only once the
        policy was asked about it or a redaction of it was recorded: from then on it is the
        original the record must carry (DR-ONE-RECORD) and DR-REDACT-FAIL withholds.
        """
        if not self.raised:
            return None
        if self.asked:
            # The text the policy redacted is the original the record must carry.
            return self.asked[0]
        for r in self.records:
            payload = r["enter"].get("payload") or {}
            if r["enter"].get("kind") == "result_redaction" and "original_result" in payload:
                return str(payload["original_result"])
        return None

    def check_post(self) -> dict[str, Any] | None:
        cid, redacted = self.cid, str(self.policy["redact"])
        original = str(self.result) if self.result is not None else str(self.failure_text())
        payload = {"tool_call_id": cid, "tool_name": self.call["tool"]}
        payload.update(
            {"kind": "result_redaction", "original_result": original, "redacted_result": redacted}
        )
        record = self.one("result_redaction", payload)
        why = "never recorded" if record is None else self.ev.failure(record)
        done_i = len(self.ev.events) if record is None else record["exit_i"]
        done_i = len(self.ev.events) if done_i is None else done_i
        if why == "cut off":
            self.flag(
                "DR-HANG",
                "its redaction record answered OK within its limit, yet the executor "
                "cut it off: the time limit must be the record's own",
            )
        rule = "DR-REDACT" if why is None else "DR-REDACT-FAIL"
        leak = self.ev.shows(original, cid, ("tool",)) if original != redacted else None
        if leak is not None:
            self.flag(
                rule,
                f"the original result {original!r} reached the model (redaction "
                f"{why or 'recorded'})",
            )
            if why in FAIL_RULES:
                self.flag(
                    FAIL_RULES[why], f"the redaction record {why}, yet the original was released"
                )
        shown = self.ev.shows(redacted, cid, ("tool",)) if redacted != original else None
        if shown is not None and (shown < done_i or why is not None):
            self.flag(
                "DR-RECORD-FIRST",
                "the redacted result was released before (or without) a successful record",
            )
            if why in FAIL_RULES:
                self.flag(FAIL_RULES[why], f"the redaction record {why}, yet it was released")
        if why is None and self.message is not None and self.message != redacted:
            self.flag(
                "DR-REDACT", f"released {self.message!r}; the recorded redaction is {redacted!r}"
            )
        if record is None and self.ev.cancel_i is None and self.message is not None:
            self.check_not_skipped("redaction")
            if original == redacted:
                # Upstream does not say whether a redaction that changes nothing is a
                # mutation; seamspec records it (DR-REDACT-UNCHANGED), so skipping it is
                # only that.
                self.flag(
                    "DR-REDACT-UNCHANGED",
                    "its redaction to the very same result was never recorded",
                )
            else:
                self.flag("DR-ONE-RECORD", "its result_redaction was never recorded")
        if why not in (None, "cancelled", "never recorded"):
            if self.ended_by(str(why)):
                self.flag("DR-REDACT-FAIL", f"a failed redaction record ({why}) ended the turn")
            if self.message is not None and self.message != WITHHELD_NOTICE:
                self.flag(
                    "DR-OUTCOME-TEXT",
                    f"the redaction could not be recorded; the model "
                    f"got {self.message!r}, not {WITHHELD_NOTICE!r}",
                )
        return record

    def check_approval(self) -> None:
        wired = self.ev.given.get("approver", True)
        yes = wired and bool(self.policy.get("approve", False))
        asked = self.approval_i
        if yes:
            if not self.runs and self.ev.cancel_i is None and self.ev.completed:
                self.flag("DR-APPROVAL", "the approver approved it, yet the tool never ran")
            for i in self.runs:
                run = self.ev.events[i]
                if run.get("args") != self.call["args"] or run.get("context"):
                    self.flag(
                        "DR-APPROVAL",
                        f"approved, it ran with {run.get('args')!r} and "
                        f"context {run.get('context')!r}, not as proposed",
                    )
                if asked is None or asked > i:
                    self.flag("DR-APPROVAL", "the tool ran before the approver answered")
            return
        who = "the approver refused it" if wired else "no approver is wired"
        if self.runs:
            self.flag("DR-APPROVAL", f"{who}, yet the tool ran")
        if self.ev.completed and self.message is None:
            self.flag("DR-APPROVAL", f"{who}, but the model got no denial")
        reason = str(self.policy["pre"]["approval"])
        denial = self.message is not None and self.message.startswith(DENIED)
        if self.message is not None and not self.runs and not (denial and reason in self.message):
            self.flag(
                "DR-OUTCOME-TEXT",
                f"{who}; the model got {self.message!r}, not a "
                f"denial ({DENIED!r}...) giving the reason {reason!r}",
            )

    def check_absent(self) -> None:
        cid = self.cid
        for i in self.runs:
            run = self.ev.events[i]
            if run.get("args") != self.call["args"] or run.get("context"):
                self.flag(
                    "DR-ABSENT",
                    f"with no recorder it ran with args {run.get('args')!r} "
                    f"and context {run.get('context')!r}; expected the proposed call "
                    "unchanged",
                )
        if (
            self.pre in PRE_KINDS
            and not self.runs
            and self.ev.cancel_i is None
            and (self.ev.completed)
        ):
            self.flag(
                "DR-ABSENT",
                f"with no recorder the {self.pre} must be dropped and the "
                "call run as proposed; it never ran",
            )
        context = self.policy["pre"].get("inject")
        if context is not None and self.ev.shows(context, cid, ("context",)) is not None:
            self.flag("DR-ABSENT", "with no recorder, context was injected anyway")
        redacted = "redact" in self.policy and self.result is not None
        if redacted and self.message is not None and self.message != self.result:
            self.flag(
                "DR-ABSENT",
                "with no recorder the result must be released "
                f"unredacted; the model got {self.message!r}",
            )


def check(
    request: dict[str, Any], _then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[Violation]:
    """Every universal DR rule this trace breaks, as (rule ID, explanation) pairs."""
    ev = Evidence(request, trace)
    proposed = list(calls_of(ev.given))
    ids = [call["id"] for _, call in proposed]
    for k, (step, call) in enumerate(proposed):
        reused = ids.count(call["id"]) > 1
        nth = ids[:k].count(call["id"]) if reused else None
        _Call(ev, call, step, nth).run()
    check_turn(ev)
    if ev.journal:
        for item in check_journal(ev.records, ev.events):
            ev.flag(*item)
    return ev.out


def caveats(
    request: dict[str, Any], _then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[Violation]:
    """Rules judged on the implementation's word alone: (rule ID, why), shown with a pass."""
    recorder = request["given"].get("recorder")
    return journal_caveats(trace) if recorder and recorder.get("journal") else []
