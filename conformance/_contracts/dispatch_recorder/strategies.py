"""Hypothesis strategies that generate valid dispatch-recorder scenarios.

A scripted provider proposes one to four steps of one to three calls; each call gets a
random pre-dispatch decision and maybe a redaction; the recorder (or none) answers each
record and commit as drawn. While drawing, the strategy follows the rules to derive what
any conforming implementation must show (which tools ran with which arguments and
context, what the model saw, which records were made, where the turn stopped), so that a
saved failure is an ordinary scenario that fails the same way under ``seamspec run``.

Only deterministic timing is generated: a record that hangs (``hang``) or answers late
(``gate`` + ``late``, released by ``release_late``, on the turn's first record only) past
a small ``record_time_limit``, and a cancellation while the turn's first record waits on a
gate that never opens. Commits return OK, an error, or raise; none hangs (a loop with no
commit time limit would cost the kit's 10 s turn limit per example).

About one turn in five records through the implementation's signed journal instead
(``requires: [signed-journal]``): every record is real and returns OK, the commit is the
protocol default, and after the turn the kit verifies the journal, untouched and/or after
one tampering (a flipped byte, a deleted, swapped or duplicated entry, a cut tail). The
derived ``then`` states what each verification must report: OK with every entry, or the
first bad index (and a torn tail for a cut).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from seamspec.conformance._contracts.dispatch_recorder.model import PRE_KINDS, failed, tamper_index

__all__ = ["dr_scenarios", "scenarios"]

TOOLS = ("shell", "read_file", "read_env")
#: The withheld notice a conforming executor releases when a redaction is not recorded.
WITHHELD = "[result withheld: its redaction could not be recorded]"
LIMIT = 0.05
PRE = ("allow", "deny", "approval", "rewrite", "inject", "rewrite", "inject")
RECORD = ("ok", "ok", "ok", "error", "raise", "hang")
#: No hanging commit: a loop without a commit time limit would cost the kit's 10 s turn limit.
COMMIT = ("ok",) * 9 + ("error", "raise")
RULE_ORDER = (
    "DR-RECORD-FIRST", "DR-ONE-RECORD", "DR-REWRITE", "DR-REWRITE-FAIL", "DR-INJECT",
    "DR-INJECT-FAIL", "DR-REDACT", "DR-REDACT-FAIL", "DR-OUTCOME-TEXT", "DR-ABSENT",
    "DR-NO-MUTATION", "DR-APPROVAL", "DR-RAISE", "DR-HANG", "DR-CANCEL", "DR-BOTH",
    "DR-COMMIT-BARRIER", "DR-COMMIT-STEP", "DR-COMMIT-FINAL", "DR-COMMIT-FAIL",
    "DR-COMMIT-DEFAULT", "DR-JOURNAL-DURABLE", "DR-JOURNAL-VERIFY",
)  # fmt: skip
#: Tamperings the journal vocabulary offers; ``swap`` needs two entries.
TAMPER = ("flip_byte", "delete", "swap", "duplicate", "truncate_bytes")
#: Tamperings that need the kit's key; what a verifier must then say is the kit's own
#: reading of the file (the oracle compares), so their ``then`` pins nothing.
FORGERIES = ("edit", "reencode", "forge", "splice", "append")
#: Fewer bytes than any entry's line (a signature alone is 128 hex digits): a cut is torn.
MAX_CUT = 150


def _args(cid: str, **extra: Any) -> str:
    return json.dumps({"call": cid, **extra}, separators=(",", ":"))


def _behaviour(kind: str, what: str) -> dict[str, Any]:
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
    return {"ok": True}


@st.composite
def _policy(draw: st.DrawFn, cid: str) -> dict[str, Any]:
    # Every text carries "<cid>" so that no call's text is a substring of another's.
    pre = draw(st.sampled_from(PRE))
    entry: dict[str, Any] = {}
    if pre == "allow":
        if draw(st.booleans()):
            entry["pre"] = {"allow": True}
    elif pre == "deny":
        entry["pre"] = {"deny": f"policy refuses <{cid}>"}
    elif pre == "approval":
        entry["pre"] = {"approval": f"needs a human <{cid}>"}
        entry["approve"] = draw(st.booleans())
    elif pre == "rewrite":
        entry["pre"] = {"rewrite": _args(cid, rewritten=True)}
    else:
        entry["pre"] = {"inject": f"context <{cid}>"}
    if draw(st.integers(0, 2)) == 0:
        entry["redact"] = f"[redacted <{cid}>]"
    return entry


class _Sim:
    """Walks the turn the way the rules fix it, drawing each record and commit outcome."""

    def __init__(self, draw: st.DrawFn, recorder: str, cancel: bool, approver: bool) -> None:
        self.draw = draw
        self.recorder = recorder  # "none", "scripted", "default" or "journal"
        self.cancel = cancel
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
            choice = "never"
        else:
            choices = RECORD + (("late",) if n == 0 and self.step == 0 else ())
            choice = self.draw(st.sampled_from(choices))
        behaviour = _behaviour(choice, "signer")
        self.record_script.append(behaviour)
        if choice == "never":
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
            why = self.record(cid, "result_redaction")
            if why == "cancel":
                return False
            if why is not None:
                self.rules.update(("DR-REDACT-FAIL", "DR-OUTCOME-TEXT"))
            result = WITHHELD if why is not None else policy["redact"]
        entry["result"] = result
        return True

    def run(self, provider: list[dict[str, Any]], policy: dict[str, dict[str, Any]]) -> None:
        for self.step, step in enumerate(provider):
            self.provider_calls += 1
            calls = step.get("calls", [])
            for call in calls:
                if not self.call(call, policy.get(call["id"], {})):
                    self.turn = {"outcome": "cancelled"}
                    for other in calls:  # the cancelled step's messages are never seen
                        for key in ("result", "result_contains"):
                            self.calls.get(other["id"], {}).pop(key, None)
                    return
            if self.recorder == "scripted":
                self.rules.update(("DR-COMMIT-BARRIER", "DR-COMMIT-STEP"))
                if not calls:
                    self.rules.add("DR-COMMIT-FINAL")
                self.commits += 1
                choice = "ok" if self.cancel else self.draw(st.sampled_from(COMMIT))
                behaviour = _behaviour(choice, "receipt store")
                self.commit_script.append(behaviour)
                if failed(behaviour) is not None:
                    self.rules.add("DR-COMMIT-FAIL")
                    self.turn = {"outcome": "error"}
                    if "error" in behaviour:
                        self.turn["error_contains"] = behaviour["error"]
                    return
            elif self.recorder in ("default", "journal"):
                self.rules.add("DR-COMMIT-DEFAULT")


@st.composite
def _tampering(draw: st.DrawFn, entries: int) -> dict[str, Any]:
    """One tampering of a journal of ``entries`` (at least one) entries."""
    last = entries - 1
    kind = draw(st.sampled_from([*(k for k in TAMPER if k != "swap" or entries > 1), *FORGERIES]))
    entry = draw(st.integers(0, last))
    if kind == "edit":
        field = draw(st.sampled_from(("mutation.tool_name", "mutation.tool_call_id", "seq")))
        return {kind: {"entry": entry, "field": field, "value": "edited"}}
    if kind == "reencode":
        style = draw(
            st.sampled_from(
                ("spaces", "reordered_keys", "escaped", "uppercase_sig", "uppercase_prev")
            )
        )
        return {kind: {"entry": entry, "style": style}}
    if kind == "forge":
        signature = draw(st.sampled_from(("valid", "no_domain", "other_domain", "other_key")))
        return {kind: {"entry": entry, "signature": signature, "rechain": draw(st.booleans())}}
    if kind == "splice":
        return {kind: {"entry": entry, "from_entry": draw(st.integers(0, last))}}
    if kind == "append":
        return {kind: {}}
    if kind == "flip_byte":  # the default mask 0x01 never turns a byte into an equivalent one
        return {kind: {"entry": draw(st.integers(0, last)), "offset": draw(st.integers(0, 300))}}
    if kind == "swap":
        first = draw(st.integers(0, last - 1))
        return {kind: [first, draw(st.integers(first + 1, last))]}
    if kind == "truncate_bytes":
        return {kind: draw(st.integers(1, MAX_CUT))}
    return {kind: draw(st.integers(0, last))}


@st.composite
def _journal_checks(
    draw: st.DrawFn, entries: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The verification steps after the turn, and what each one must report."""
    when: list[dict[str, Any]] = []
    then: list[dict[str, Any]] = []
    mode = draw(st.sampled_from(("verify", "tamper", "verify+tamper"))) if entries else "verify"
    if mode != "tamper":
        when.append({"verify_journal": {"anchored": True} if draw(st.booleans()) else {}})
        then.append({"ok": True, "entries": entries, "bad_index": None})
    if mode != "verify":
        op = draw(_tampering(entries))
        # Only the anchor (the number of OK'd records) reveals a whole last entry deleted.
        anchored = op.get("delete") == entries - 1 or draw(st.booleans())
        when.append({"tamper_journal": op})
        when.append({"verify_journal": {"anchored": True} if anchored else {}})
        want: dict[str, Any] = {}
        if next(iter(op)) in TAMPER:
            want = {"ok": False, "bad_index": tamper_index(op, entries)}
        if "truncate_bytes" in op:
            # Cutting only the newline leaves a whole entry: damage, not a torn tail.
            want.update(torn_tail=op["truncate_bytes"] > 1, entries=entries - 1)
        then.append(want)
    return when, then


@st.composite
def dr_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """One scenario document (without ``id``), valid against the scenario schema."""
    provider: list[dict[str, Any]] = []
    policy: dict[str, dict[str, Any]] = {}
    count = 0
    for _ in range(draw(st.integers(1, 4))):
        calls = []
        for _ in range(draw(st.integers(1, 3))):
            count += 1
            cid = f"c{count}"
            calls.append({"id": cid, "tool": draw(st.sampled_from(TOOLS)), "args": _args(cid)})
            entry = draw(_policy(cid))
            if entry:
                policy[cid] = entry
        provider.append({"calls": calls})
    provider.append({"final": "done"})
    if draw(st.integers(0, 4)) == 4:  # one in five; shrinks towards the scripted kinds
        recorder_kind = "journal"
    else:
        recorder_kind = draw(
            st.sampled_from(("scripted", "scripted", "scripted", "default", "none"))
        )
    cancel = recorder_kind == "scripted" and draw(st.integers(0, 5)) == 0
    approver = draw(st.integers(0, 4)) != 0  # one turn in five has no approver wired
    sim = _Sim(draw, recorder_kind, cancel, approver)
    sim.run(provider, policy)
    if cancel and sim.turn["outcome"] != "cancelled":
        cancel = False  # no record to cancel during: an ordinary turn
    given: dict[str, Any] = {"provider": provider}
    if not approver:
        given["approver"] = False
    if policy:
        given["policy"] = policy
    recorder: dict[str, Any] | None = None
    if recorder_kind == "journal":
        recorder = {"journal": True}
    elif recorder_kind != "none":
        recorder = {}
        if sim.record_script:
            if sim.record_script[-1].get("late"):  # "the last one repeats": not the gate
                sim.record_script.append({"ok": True})
            recorder["record"] = sim.record_script
        if recorder_kind == "default":
            recorder["commit_default"] = True
        elif sim.commit_script:
            recorder["commit"] = sim.commit_script
    given["recorder"] = recorder
    if any(failed(b) in ("hang", "late") for b in sim.record_script):
        given["record_time_limit"] = LIMIT
    if cancel:
        when: list[dict[str, Any]] = [
            {"start_turn": "t1"},
            {"wait_record": {"count": 1}},
            {"cancel": "t1"},
            {"join": "t1"},
        ]
    elif any(b.get("late") for b in sim.record_script):
        when = [{"start_turn": "t1"}, {"release_late": "slow"}, {"join": "t1"}]
    else:
        when = [{"turn": "t1"}]
    journal: list[dict[str, Any]] = []
    if recorder_kind == "journal":
        checks, journal = draw(_journal_checks(len(sim.records)))
        when += checks
        sim.rules.add("DR-JOURNAL-VERIFY")
    all_ids = [c["id"] for s in provider for c in s.get("calls", [])]
    calls_then = {cid: sim.calls.get(cid, {"ran": False}) for cid in all_ids}
    then: dict[str, Any] = {
        "records": sim.records,
        "calls": calls_then,
        "commits": sim.commits,
        "provider_calls": sim.provider_calls,
        "turn": sim.turn,
    }
    if journal:
        then["journal"] = journal
    head: dict[str, Any] = {"tags": ["generated"]}
    if recorder_kind == "journal":
        head = {"tags": ["generated", "journal"], "requires": ["signed-journal"]}
    return {
        "title": "Generated: a random turn judged by the oracle",
        "contract": "dispatch-recorder",
        "rules": [r for r in RULE_ORDER if r in sim.rules] or ["DR-NO-MUTATION"],
        "level": "MUST",
        # `then` pins seamspec's own decisions too (texts, the final commit, approvals);
        # the oracle still judges each upstream rule under the default profile.
        "profile": "strict",
        **head,
        "description": "Generated by seamspec fuzz and shrunk by hypothesis. The oracle checks "
        "every universal rule; `then` pins what the rules fix: the records, which tools ran "
        "with which arguments and context, what the model saw, and where the turn stopped.",
        "given": given,
        "when": when,
        "then": then,
    }


#: The name the registry looks for (``seamspec fuzz``).
scenarios = dr_scenarios
