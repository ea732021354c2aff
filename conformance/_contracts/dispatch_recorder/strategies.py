"""Hypothesis strategies that generate valid dispatch-recorder scenarios.

A scripted provider proposes one to four steps of one to three calls; each call gets a
random pre-dispatch decision and maybe a redaction; the recorder (or none) answers each
record and commit as drawn. While drawing, the strategy follows the rules to derive what
any conforming implementation must show (which tools ran with which arguments and
context, what the model saw, which records were made, where the turn stopped), so that a
saved failure is an ordinary scenario that fails the same way under ``seamspec run``.
Texts are the boundaries a careless implementation trips on: arguments and redactions
that are valid JSON but not canonical (spaces, keys out of order, non-ASCII), an empty
redaction, a context with surrounding or only whitespace; one turn in five has no
approver wired.

Only deterministic timing is generated, one shape per turn (:data:`SHAPES`): records that
hang or answer late (``late``, released by ``release_late``) past a short limit; a
cancellation while the first record or commit waits, on a gate that never opens or a
deaf one released after the cancellation (under a long limit, or by ``release_late``
past a short one); a deaf commit answering past ``commit_time_limit``; a gated tool held
past the record limit, so that a redaction recorded after it must still get its own
limit. Nothing healthy races a limit (docs/scenarios.md, "Time limits").

About one turn in four records through the implementation's signed journal instead
(``requires: [signed-journal]``): into a new file or one that already holds a journal
(whole, with a torn tail, or damaged, which the recorder must refuse), sometimes closed
and opened again while a tool is held; the kit then verifies it, untouched and/or after
one tampering (:mod:`.strategies_journal`).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from seamspec.conformance._contracts.dispatch_recorder.model import PRE_KINDS, failed
from seamspec.conformance._contracts.dispatch_recorder.strategies_journal import (
    existing_journal,
    journal_checks,
    journal_plans,
)

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
    "DR-COMMIT-DEFAULT", "DR-JOURNAL-DURABLE", "DR-JOURNAL-VERIFY", "DR-JOURNAL-REOPEN",
)  # fmt: skip
#: A limit the scenario never lets run out (a deaf record or commit released right after
#: the cancellation): long, since it costs nothing.
LONG_LIMIT = 3.0
#: How a JSON text is spelt: compact and sorted (canonical), or valid JSON that a
#: "normalise the JSON" helper would change (spaces, keys out of order, non-ASCII text).
SPELLING = ("compact", "spaced", "unsorted", "unicode")
#: The turn's timing, one shape per scenario (only with a scripted recorder): none, a
#: cancellation while the first record or commit waits (on a gate that never opens, or a
#: deaf one released after the cancellation, before or past its limit), a deaf commit
#: answering past its limit, or a tool held past the record limit.
SHAPES = (
    "plain", "plain", "plain", "cancel_record", "cancel_record", "cancel_record",
    "cancel_commit", "commit_late", "slow_tool",
)  # fmt: skip
CANCEL_HOW = ("never", "deaf", "deaf_late")


def _args(cid: str, spelling: str = "compact", **extra: Any) -> str:
    """A call's arguments (or a JSON text) naming ``cid``, spelt as ``spelling`` says."""
    value = {"call": cid, **extra}
    if spelling == "spaced":
        return json.dumps(value)
    if spelling == "unsorted":
        return json.dumps({"z": 0, **value}, separators=(",", ":"))
    if spelling == "unicode":
        return json.dumps({**value, "note": "café"}, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, separators=(",", ":"))


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
    if kind in ("deaf", "deaf_late"):
        return {"gate": "signing" if what == "signer" else "receipt", "late": True}
    return {"ok": True}


@st.composite
def _policy(draw: st.DrawFn, cid: str, journal: bool) -> dict[str, Any]:
    # Every text carries "<cid>" so that no call's text is a substring of another's
    # (but a whitespace-only context or an empty redaction, which carry nothing).
    # A journal turn mostly mutates: its tamperings need entries.
    pre = draw(st.sampled_from(("rewrite", "inject", "allow") if journal else PRE))
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
        entry["pre"] = {"rewrite": _args(cid, draw(st.sampled_from(SPELLING)), rewritten=True)}
    else:
        context = draw(st.sampled_from((f"context <{cid}>", f"  context <{cid}>\n", " \t ")))
        entry["pre"] = {"inject": context}
    if draw(st.integers(0, 1 if journal else 2)) == 0:
        redaction = draw(st.sampled_from(("text", "text", "json", "empty")))
        entry["redact"] = (
            f"[redacted <{cid}>]"
            if redaction == "text"
            else json.dumps({"redacted": f"<{cid}>", "by": "policy"})
            if redaction == "json"
            else ""
        )
    return entry


class _Sim:
    """Walks the turn the way the rules fix it, drawing each record and commit outcome."""

    def __init__(
        self, draw: st.DrawFn, recorder: str, shape: str, how: str, approver: bool
    ) -> None:
        self.draw = draw
        self.recorder = recorder  # "none", "scripted", "default" or "journal"
        self.shape = shape  # one of SHAPES
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
        else:
            late = n == 0 and self.step == 0 and self.shape == "plain"
            choice = self.draw(st.sampled_from(RECORD + (("late",) if late else ())))
        behaviour = _behaviour(choice, "signer")
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
                    self.commit_script.append(_behaviour(self.how, "receipt store"))
                    if self.shape == "commit_late":  # past its limit: a failed commit
                        self.rules.update(("DR-COMMIT-FAIL", "DR-HANG"))
                        self.turn = {"outcome": "error"}
                        return
                    self.rules.add("DR-CANCEL")
                    self._cancelled(calls)
                    return
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


def _first_tool(sim: _Sim, provider: list[dict[str, Any]]) -> str | None:
    """The tool of the first call that runs: the one a gated tool holds."""
    for step in provider:
        for call in step.get("calls", []):
            if sim.calls.get(call["id"], {}).get("ran"):
                return str(call["tool"])
    return None


def _timing(given: dict[str, Any], sim: _Sim, shape: str, how: str) -> list[dict[str, Any]]:
    """The time limits the turn needs and the steps that drive it, for its shape.

    Nothing races a limit: what must run one out hangs or is deaf and released by
    ``release_late``; a deaf participant released right after the cancellation has a
    long limit, which never runs out.
    """
    if any(failed(b) in ("hang", "late") for b in sim.record_script):
        given["record_time_limit"] = LIMIT
    start: list[dict[str, Any]] = [{"start_turn": "t1"}]
    end: list[dict[str, Any]] = [{"join": "t1"}]
    if shape in ("cancel_record", "cancel_commit"):
        kind, gate = ("record", "signing") if shape == "cancel_record" else ("commit", "receipt")
        if how != "never":
            given[f"{kind}_time_limit"] = LIMIT if how == "deaf_late" else LONG_LIMIT
        release = (
            [] if how == "never" else [{"release_late" if how == "deaf_late" else "release": gate}]
        )
        return [*start, {f"wait_{kind}": {"count": 1}}, {"cancel": "t1"}, *release, *end]
    if shape == "commit_late":
        given["commit_time_limit"] = LIMIT
        return [*start, {"release_late": "receipt"}, *end]
    tool = _first_tool(sim, given["provider"]) if shape in ("slow_tool", "reopen") else None
    if tool is not None and shape == "reopen":
        # The journal is closed and opened again while the first tool to run is held: its
        # redaction and every later record go through the reopened recorder.
        sim.rules.add("DR-JOURNAL-REOPEN")
        given["tools"] = {tool: {"gate": "disk"}}
        return [*start, {"wait_tool": {"count": 1}}, {"reopen_journal": {}},
                {"release": "disk"}, *end]  # fmt: skip
    if tool is not None:
        sim.rules.add("DR-HANG")
        given["tools"] = {tool: {"gate": "disk"}}
        given["record_time_limit"] = LIMIT
        return [*start, {"wait_tool": {"count": 1}}, {"release_late": "disk"}, *end]
    if any(b.get("late") for b in sim.record_script):
        return [*start, {"release_late": "slow"}, *end]
    return [{"turn": "t1"}]


@st.composite
def dr_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """One scenario document (without ``id``), valid against the scenario schema."""
    if draw(st.integers(0, 1)) == 1:  # one in two; shrinks towards the scripted kinds
        recorder_kind = "journal"
    else:
        recorder_kind = draw(
            st.sampled_from(("scripted", "scripted", "scripted", "default", "none"))
        )
    plan = draw(journal_plans) if recorder_kind == "journal" else None
    provider: list[dict[str, Any]] = []
    policy: dict[str, dict[str, Any]] = {}
    count = 0
    for _ in range(draw(st.integers(1, 4))):
        calls = []
        for _ in range(draw(st.integers(1, 3))):
            count += 1
            cid = f"c{count}"
            args = _args(cid, draw(st.sampled_from(SPELLING)))
            calls.append({"id": cid, "tool": draw(st.sampled_from(TOOLS)), "args": args})
            entry = draw(_policy(cid, recorder_kind == "journal"))
            if entry:
                policy[cid] = entry
        provider.append({"calls": calls})
    provider.append({"final": "done"})
    shape = "plain"
    if recorder_kind == "scripted":
        shape = draw(st.sampled_from(SHAPES))
    elif recorder_kind == "default":
        shape = draw(st.sampled_from(("plain", "slow_tool")))
    elif plan is not None and plan.reopen:
        shape = "reopen"
    how = {"commit_late": "deaf_late"}.get(shape) or draw(st.sampled_from(CANCEL_HOW))
    approver = draw(st.integers(0, 4)) != 0  # one turn in five has no approver wired
    sim = _Sim(draw, recorder_kind, shape, how, approver)
    sim.run(provider, policy)
    if shape == "cancel_record" and sim.turn["outcome"] != "cancelled":
        shape = "plain"  # no record to cancel during: an ordinary turn
    given: dict[str, Any] = {"provider": provider}
    if not approver:
        given["approver"] = False
    if policy:
        given["policy"] = policy
    recorder: dict[str, Any] | None = None
    if recorder_kind == "journal":
        assert plan is not None
        recorder = {"journal": True}
        existing = existing_journal(plan, len(sim.records))
        if existing is not None:
            recorder["existing_journal"] = existing
            sim.rules.add("DR-JOURNAL-REOPEN")
        if existing is not None and "damaged_entry" in existing:
            given["recorder"] = recorder
            return _refused(given)
    elif recorder_kind != "none":
        recorder = {}
        if sim.record_script:
            if sim.record_script[-1].get("late"):  # "the last one repeats": not the gate
                sim.record_script.append({"ok": True})
            recorder["record"] = sim.record_script
        if recorder_kind == "default":
            recorder["commit_default"] = True
        elif sim.commit_script:
            if sim.commit_script[-1].get("late"):
                sim.commit_script.append({"ok": True})
            recorder["commit"] = sim.commit_script
    given["recorder"] = recorder
    when = _timing(given, sim, shape, how)
    journal: list[dict[str, Any]] = []
    if recorder_kind == "journal":
        assert plan is not None
        assert recorder is not None
        earlier = int(recorder.get("existing_journal", {}).get("entries", 0))
        checks, journal = journal_checks(plan, earlier + len(sim.records))
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
    rules = [r for r in RULE_ORDER if r in sim.rules] or ["DR-NO-MUTATION"]
    return _document(rules, recorder_kind == "journal", given, when, then)


def _refused(given: dict[str, Any]) -> dict[str, Any]:
    """A journal turn on a file that does not verify: the recorder must refuse to open
    it (and leave it as it is, which the oracle checks), so nothing runs or is recorded."""
    return _document(["DR-JOURNAL-REOPEN"], True, given, [{"turn": "t1"}], {"records": []})


def _document(
    rules: list[str], journal: bool, given: dict[str, Any], when: list[Any], then: dict[str, Any]
) -> dict[str, Any]:
    head: dict[str, Any] = {"tags": ["generated"]}
    if journal:
        head = {"tags": ["generated", "journal"], "requires": ["signed-journal"]}
    return {
        "title": "Generated: a random turn judged by the oracle",
        "contract": "dispatch-recorder",
        "rules": rules,
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
