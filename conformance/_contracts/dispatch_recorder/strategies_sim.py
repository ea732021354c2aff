"""The walk through a generated dispatch-recorder turn, split from :mod:`.strategies`.

The strategy draws the turn (provider steps, calls, policy, timing shape); :class:`_Sim`
then walks it the way the rules fix it, drawing each record's and commit's outcome as it
goes, and collects what any conforming implementation must show (records, which tools
ran with which arguments and context, what the model saw, where the turn stopped) and the
rules the turn exercises. One concept: the rules' reading of a turn, apart from how the
turn is drawn.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from seamspec.conformance._contracts.dispatch_recorder.model import PRE_KINDS, failed

__all__ = ["COMMIT", "RECORD", "WITHHELD", "Sim", "scripted"]

#: The withheld notice a conforming executor releases when a redaction is not recorded.
WITHHELD = "[result withheld: its redaction could not be recorded]"
RECORD = ("ok", "ok", "ok", "error", "raise", "hang")
#: No hanging commit: a loop without a commit time limit would cost the kit's 10 s turn limit.
COMMIT = ("ok",) * 9 + ("error", "raise")


def scripted(kind: str, what: str) -> dict[str, Any]:
    """A scripted record or commit behaviour; ``what`` names the failing participant."""
    if kind == "error":
        return {"error": f"{what} refused"}
    if kind == "raise":
        return {"raise": f"{what} crashed"}
    if kind == "hang":
        return {"hang": True}
    if kind == "late":
        return {"gate": "slow", "late": True}
    if kind == "never":
        return {"gate": "never"}
    if kind in ("deaf", "deaf_late"):
        return {"gate": "signing" if what == "signer" else "receipt", "late": True}
    return {"ok": True}


class Sim:
    """Walks the turn the way the rules fix it, drawing each record and commit outcome."""

    def __init__(
        self,
        draw: st.DrawFn,
        recorder: str,
        shape: str,
        how: str,
        approver: bool,
        *,
        held: str | None = None,
    ) -> None:
        self.draw = draw
        self.recorder = recorder  # "none", "scripted", "default" or "journal"
        self.shape = shape  # one of SHAPES
        #: The call whose tool a ``slow_tool`` turn holds past the record limit: its
        #: records answer at once, so that the redaction after the tool is recorded (its
        #: own limit) and what a limit counted from the call's start or its first record
        #: cuts off shows.
        self.held = held
        self.how = how  # for a cancellation: one of CANCEL_HOW
        self.cancel = shape == "cancel_record"
        self.approver = approver  # False: no approver is wired
        self.record_script: list[dict[str, Any]] = []
        self.commit_script: list[dict[str, Any]] = []
        self.records: list[str] = []
        self.calls: dict[str, dict[str, Any]] = {}
        self.provider_calls = 0
        self.commits = 0
        self.turn: dict[str, Any] = {"outcome": "completed"}
        self.rules: set[str] = set()
        self.step = 0

    def record(self, cid: str, kind: str) -> str | None:
        """Make one record; ``None`` if it succeeds, else why it failed (or ``cancel``)."""
        n = len(self.records)
        self.records.append(f"{cid}:{kind}")
        if self.recorder == "journal":  # the real journal: durable, then OK
            self.rules.add("DR-JOURNAL-DURABLE")
            return None
        if self.cancel:
            choice = self.how
        elif cid == self.held:
            choice = "ok"
        else:
            late = n == 0 and self.step == 0 and self.shape == "plain"
            choice = self.draw(st.sampled_from(RECORD + (("late",) if late else ())))
        behaviour = scripted(choice, "signer")
        self.record_script.append(behaviour)
        if self.cancel:
            self.rules.add("DR-CANCEL")
            return "cancel"
        why = failed(behaviour)
        if why in ("hang", "late"):
            self.rules.add("DR-HANG")
        elif why == "raised":
            self.rules.add("DR-RAISE")
        return None if why is None else str(behaviour.get("error", "could not be recorded"))

    def call(self, call: dict[str, Any], policy: dict[str, Any]) -> bool:
        """Perform one call; ``False`` if the turn was cancelled during it."""
        cid, tool = call["id"], call["tool"]
        pre = next(iter(policy.get("pre", {"allow": True})))
        entry: dict[str, Any] = {}
        self.calls[cid] = entry
        args, context = call["args"], []
        if pre == "approval":
            self.rules.add("DR-APPROVAL")
        if pre == "deny" or (pre == "approval" and not (policy["approve"] and self.approver)):
            self.rules.add("DR-NO-MUTATION")
            entry.update(ran=False, result_contains=policy["pre"][pre])
            return True
        if pre in PRE_KINDS and self.recorder != "none":
            self.rules.update(("DR-RECORD-FIRST", "DR-ONE-RECORD"))
            self.rules.add("DR-REWRITE" if pre == "rewrite" else "DR-INJECT")
            if pre == "rewrite" and policy["pre"]["rewrite"] == args:
                self.rules.add("DR-REWRITE-UNCHANGED")  # recorded like any other rewrite
            why = self.record(cid, PRE_KINDS[pre])
            if why == "cancel":
                entry.update(ran=False)
                return False
            if why is not None:
                self.rules.add("DR-REWRITE-FAIL" if pre == "rewrite" else "DR-INJECT-FAIL")
                entry.update(ran=False, result_contains=why)
                return True
            if pre == "rewrite":
                args = policy["pre"]["rewrite"]
            else:
                context = [policy["pre"]["inject"]]
        elif pre in PRE_KINDS or (self.recorder == "none" and "redact" in policy):
            self.rules.add("DR-ABSENT")
        else:
            self.rules.add("DR-NO-MUTATION")
        result = f"{tool} ran with {args}"
        entry.update(ran=True, args=args, context=context)
        if "redact" in policy and self.recorder != "none":
            self.rules.update(("DR-REDACT", "DR-ONE-RECORD", "DR-RECORD-FIRST"))
            if pre in PRE_KINDS:
                self.rules.add("DR-BOTH")
            if policy["redact"] == result:
                self.rules.add("DR-REDACT-UNCHANGED")  # recorded like any other redaction
            why = self.record(cid, "result_redaction")
            if why == "cancel":
                return False
            if why is not None:
                self.rules.update(("DR-REDACT-FAIL", "DR-OUTCOME-TEXT"))
            result = WITHHELD if why is not None else policy["redact"]
        entry["result"] = result
        return True

    def _cancelled(self, calls: list[dict[str, Any]]) -> None:
        self.turn = {"outcome": "cancelled"}
        for other in calls:  # the cancelled step's messages are never seen
            for key in ("result", "result_contains"):
                self.calls.get(other["id"], {}).pop(key, None)

    def run(self, provider: list[dict[str, Any]], policy: dict[str, dict[str, Any]]) -> None:
        for self.step, step in enumerate(provider):
            self.provider_calls += 1
            calls = step.get("calls", [])
            for call in calls:
                if not self.call(call, policy.get(call["id"], {})):
                    self._cancelled(calls)
                    return
            if self.recorder == "scripted":
                self.rules.update(("DR-COMMIT-BARRIER", "DR-COMMIT-STEP"))
                if not calls:
                    self.rules.add("DR-COMMIT-FINAL")
                self.commits += 1
                if self.shape in ("cancel_commit", "commit_late") and self.commits == 1:
                    self.commit_script.append(scripted(self.how, "receipt store"))
                    if self.shape == "commit_late":  # past its limit: a failed commit
                        self.rules.update(("DR-COMMIT-FAIL", "DR-HANG"))
                        self.turn = {"outcome": "error"}
                        return
                    self.rules.add("DR-CANCEL")
                    self._cancelled(calls)
                    return
                choice = "ok" if self.cancel else self.draw(st.sampled_from(COMMIT))
                behaviour = scripted(choice, "receipt store")
                self.commit_script.append(behaviour)
                if failed(behaviour) is not None:
                    self.rules.add("DR-COMMIT-FAIL")
                    self.turn = {"outcome": "error"}
                    if "error" in behaviour:
                        self.turn["error_contains"] = behaviour["error"]
                    return
            elif self.recorder in ("default", "journal"):
                self.rules.add("DR-COMMIT-DEFAULT")
