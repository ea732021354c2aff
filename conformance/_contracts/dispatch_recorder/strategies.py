"""Hypothesis strategies that generate valid dispatch-recorder scenarios.

A scripted provider proposes one to four steps of one to three calls; each call gets a
random pre-dispatch decision and maybe a redaction; the recorder (or none) answers each
record and commit as drawn. While drawing, the strategy follows the rules to derive what
any conforming implementation must show (which tools ran with which arguments and
context, what the model saw, which records were made, where the turn stopped), so that a
saved failure is an ordinary scenario that fails the same way under ``seamspec run``.
Texts are the boundaries a careless implementation trips on: arguments and redactions
that are valid JSON but not canonical (spaces, keys out of order, non-ASCII), an empty
redaction, a redaction to the very result (DR-REDACT-UNCHANGED), a context with
surrounding or only whitespace; a rewrite to the call's own
arguments byte for byte, or to the same JSON value in other bytes (re-spaced, keys
reversed, an escaped letter), each still a rewrite to record; one turn in five has no
approver wired. :class:`.strategies_sim.Sim` walks the drawn turn by the rules.

Only deterministic timing is generated, one shape per turn (:data:`SHAPES`): records that
hang or answer late (``late``, released by ``release_late``) past a short limit; a
cancellation while the first record or commit waits, on a gate that never opens or a
deaf one released after the cancellation (under a long limit, or by ``release_late``
past a short one; on the gate that never opens, the cancel is bounded,
``cancel: {turn, within}``, so a harness that shields the record or commit from the
cancellation holds the turn past the bound); a deaf commit answering past ``commit_time_limit``; a gated tool held
past the record limit, so that a redaction recorded after it must still get its own
limit (the held call is the first; its result is always redacted, mostly after a
recorded rewrite or injection, and its records answer at once: a limit counted from the
call's start or from its first record cuts that redaction off). Nothing healthy races a limit (docs/scenarios.md, "Time limits").

About one turn in two records through the implementation's signed journal instead
(``requires: [signed-journal]``): into a new file or one that already holds a journal
(whole, with a torn tail, damaged, which the recorder must refuse, or with its last
entry's newline lost, which it refuses or moves beside it), sometimes closed and opened
again while a tool is held; a turn that mutates nothing may leave it empty, anchored on
0 entries for an appended one; the kit then verifies it, untouched and/or after
one tampering (:mod:`.strategies_journal`).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from seamspec.conformance._contracts.dispatch_recorder.model import (
    HEALTHY_LIMIT,
    failed,
    healthy_under_short_limit,
)
from seamspec.conformance._contracts.dispatch_recorder.strategies_journal import (
    GROUPS,
    JournalPlan,
    cover_plans,
    existing_journal,
    journal_checks,
    journal_plans,
)
from seamspec.conformance._contracts.dispatch_recorder.strategies_sim import Sim

__all__ = ["covers", "dr_scenarios", "scenarios"]

TOOLS = ("shell", "read_file", "read_env")
LIMIT = 0.05
PRE = ("allow", "deny", "approval", "rewrite", "inject", "rewrite", "inject")
MUTATING = ("rewrite", "inject", "allow")
#: The held call's decision (a ``slow_tool`` turn): a recorded mutation two times in three,
#: so that a limit started by the call's first record shows as well as one started with
#: the call.
HELD_PRE = ("rewrite", "inject", "allow", "rewrite", "inject", "allow")
RULE_ORDER = (
    "DR-RECORD-FIRST", "DR-ONE-RECORD", "DR-REWRITE", "DR-REWRITE-FAIL",
    "DR-REWRITE-UNCHANGED", "DR-INJECT", "DR-INJECT-FAIL", "DR-REDACT", "DR-REDACT-FAIL", "DR-REDACT-UNCHANGED", "DR-OUTCOME-TEXT", "DR-ABSENT",
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
#: What a rewrite's new arguments are: a new JSON text spelt as above, the call's own
#: arguments byte for byte (still a rewrite, recorded: DR-REWRITE-UNCHANGED), or the
#: same JSON value in other bytes (a rewrite that changes the bytes the tool gets).
REWRITES = (*SPELLING, "same", "json_equal")
RESPELLINGS = ("spaced", "reversed", "escaped")
#: What a redaction releases: a text, a JSON text, nothing, or the very result the tool
#: returned, byte for byte (still a redaction, recorded: DR-REDACT-UNCHANGED).
REDACTIONS = ("text", "text", "json", "empty", "unchanged")
#: Stands for the tool's result in a drawn redaction until the call's tool is drawn
#: (:func:`_same_result`); never in a scenario.
SAME_RESULT = "\x00the tool's result"
#: A journal turn on an empty journal (its anchor 0) mutates nothing: allow, deny and
#: approval only, so that the file stays empty for an appended entry (``quiet``).
QUIET = ("allow", "deny", "approval")
#: A cancellation bound (``cancel: {turn, within}``) where the waiting record or commit
#: honours cancellation, and the limit it would otherwise run to: a harness that shields
#: it from the cancellation holds the turn past the bound. Generous, never raced.
WITHIN = 2.0
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


def _respelt(args: str, style: str) -> str:
    """The same JSON value as ``args`` in other bytes, as ``style`` (one of
    :data:`RESPELLINGS`) says: re-spaced (or compacted), its keys in reverse order, or a
    key's first letter as a ``\\u`` escape (when the others change no byte)."""
    value = json.loads(args)
    if style == "spaced":
        text = json.dumps(value, ensure_ascii=False)
        text = json.dumps(value, separators=(",", ":")) if text == args else text
    else:
        text = json.dumps(dict(reversed(value.items())), separators=(",", ":"), ensure_ascii=False)
    if style == "escaped" or text == args:
        return args.replace('"call"', '"\\u0063all"', 1)
    return text


@st.composite
def _policy(
    draw: st.DrawFn,
    cid: str,
    args: str,
    journal: bool,
    *,
    held: bool = False,
    again: bool = False,
    quiet: bool = False,
) -> dict[str, Any]:
    # Every text carries "<cid>" so that no call's text is a substring of another's
    # (but a whitespace-only context or an empty redaction, which carry nothing).
    # A journal turn mostly mutates: its tamperings need entries. The call a slow tool
    # holds (``held``) runs, mostly after a recorded mutation, and always has its result
    # redacted: the record after the tool is what DR-HANG's limit per record is about.
    # After a call that needed approval, another one does more often (``again``). On an
    # empty journal that must stay empty (``quiet``), nothing mutates.
    choices = (
        QUIET
        if quiet
        else HELD_PRE
        if held
        else MUTATING
        if journal
        else (*PRE, "approval")
        if again
        else PRE
    )
    pre = draw(st.sampled_from(choices))
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
        spelling = draw(st.sampled_from(REWRITES))
        new_args = (
            args
            if spelling == "same"
            else _respelt(args, draw(st.sampled_from(RESPELLINGS)))
            if spelling == "json_equal"
            else _args(cid, spelling, rewritten=True)
        )
        entry["pre"] = {"rewrite": new_args}
    else:
        context = draw(st.sampled_from((f"context <{cid}>", f"  context <{cid}>\n", " \t ")))
        entry["pre"] = {"inject": context}
    if not quiet and (held or draw(st.integers(0, 1 if journal else 2)) == 0):
        redaction = draw(st.sampled_from(REDACTIONS))
        entry["redact"] = (
            f"[redacted <{cid}>]"
            if redaction == "text"
            else json.dumps({"redacted": f"<{cid}>", "by": "policy"})
            if redaction == "json"
            else SAME_RESULT
            if redaction == "unchanged"
            else ""
        )
    return entry


def _same_result(entry: dict[str, Any], tool: str, args: str) -> None:
    """Replace :data:`SAME_RESULT` in ``entry``'s redaction by what the kit's tool returns
    (``<tool> ran with <args>``), with the arguments a recorded rewrite gave it."""
    if entry.get("redact") == SAME_RESULT:
        new_args = entry.get("pre", {}).get("rewrite", args)
        entry["redact"] = f"{tool} ran with {new_args}"


def _first_tool(sim: Sim, provider: list[dict[str, Any]]) -> str | None:
    """The tool of the first call that runs: the one a gated tool holds."""
    for step in provider:
        for call in step.get("calls", []):
            if sim.calls.get(call["id"], {}).get("ran"):
                return str(call["tool"])
    return None


def _timing(given: dict[str, Any], sim: Sim, shape: str, how: str) -> list[dict[str, Any]]:
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
        # Under a long limit, or (a gate that never opens, honouring cancellation) bounded
        # by WITHIN: the turn must not wait for the limit.
        given[f"{kind}_time_limit"] = LIMIT if how == "deaf_late" else LONG_LIMIT
        cancel: Any = {"turn": "t1", "within": WITHIN} if how == "never" else "t1"
        release = (
            [] if how == "never" else [{"release_late" if how == "deaf_late" else "release": gate}]
        )
        return [*start, {f"wait_{kind}": {"count": 1}}, {"cancel": cancel}, *release, *end]
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
def dr_scenarios(draw: st.DrawFn, tampering: str | None = None) -> dict[str, Any]:
    """One scenario document (without ``id``), valid against the scenario schema; with
    ``tampering`` (one of :data:`GROUPS`), a journal turn that starts with it
    (:func:`.strategies_journal.cover_plans`)."""
    # one in two (all covers); shrinks towards the scripted kinds
    if tampering is not None or draw(st.integers(0, 1)) == 1:
        recorder_kind = "journal"
    else:
        recorder_kind = draw(
            st.sampled_from(("scripted", "scripted", "scripted", "default", "none"))
        )
    plan = None
    if recorder_kind == "journal":
        plan = draw(journal_plans if tampering is None else cover_plans(tampering))
    shape = "plain"
    if recorder_kind == "scripted":
        shape = draw(st.sampled_from(SHAPES))
    elif recorder_kind == "default":
        shape = draw(st.sampled_from(("plain", "slow_tool")))
    elif plan is not None and plan.reopen:
        shape = "reopen"
    held = "c1" if shape == "slow_tool" else None  # the first call: the first to run
    # The first call's policy is the held call's in a cancellation turn too: it always
    # makes a record, the first, which is cancelled; one time in three its redaction's.
    lead = "c1" if shape in ("slow_tool", "cancel_record") else None
    quiet = plan is not None and plan.start == "empty"
    approved: list[str] = []  # the tools of earlier calls that need approval
    provider: list[dict[str, Any]] = []
    policy: dict[str, dict[str, Any]] = {}
    count = 0
    for _ in range(draw(st.integers(1, 4))):
        calls = []
        for _ in range(draw(st.integers(1, 3))):
            count += 1
            cid = f"c{count}"
            args = _args(cid, draw(st.sampled_from(SPELLING)))
            in_journal = recorder_kind == "journal"
            entry = draw(
                _policy(cid, args, in_journal, held=cid == lead, again=bool(approved), quiet=quiet)
            )
            # An approval is for one call, not for its tool: a later call needing approval
            # often has the tool of an earlier one.
            needs = "approval" in entry.get("pre", {})
            tool = draw(st.sampled_from((*approved[-1:], *TOOLS) if needs else TOOLS))
            if needs:
                approved.append(tool)
            _same_result(entry, tool, args)
            calls.append({"id": cid, "tool": tool, "args": args})
            if entry:
                policy[cid] = entry
        provider.append({"calls": calls})
    provider.append({"final": "done"})
    how = {"commit_late": "deaf_late"}.get(shape) or draw(st.sampled_from(CANCEL_HOW))
    approver = draw(st.integers(0, 4)) != 0  # one turn in five has no approver wired
    sim = Sim(draw, recorder_kind, shape, how, approver, held=held)
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
        if existing is not None and existing.get("lost_newline"):
            given["recorder"] = recorder
            return _lost(given, plan)
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
    for limit_key in healthy_under_short_limit(given):
        # A healthy record or commit (a real journal's, or one scripted OK) would race
        # the short limit on a loaded machine: the linter refuses that, so lengthen it.
        given[limit_key] = HEALTHY_LIMIT
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


def _lost(given: dict[str, Any], plan: JournalPlan) -> dict[str, Any]:
    """A journal turn on a file whose last entry lost its newline: the recorder refuses it
    (nothing runs) or moves that entry whole beside it and goes on, so ``then`` pins
    nothing the two ways differ in, and the turn has no step that waits on a tool; the
    oracle reads the file either way (DR-JOURNAL-REOPEN), and the verifier's verdict is
    compared with the kit's reading."""
    check = {"verify_journal": {"anchored": True} if plan.booleans() else {}}
    when = [{"turn": "t1"}, check]
    then: dict[str, Any] = {"journal": [{}]}
    return _document(["DR-JOURNAL-REOPEN", "DR-JOURNAL-VERIFY"], True, given, when, then)


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


def covers() -> list[Any]:
    """What every run tries besides its random examples, whatever the seed (``seamspec
    fuzz``): one journal turn per tampering group, its simplest example first.

    Random examples reach a rare group by luck: hypothesis makes few fresh examples (it
    mutates the ones it has), and at seeds 1 to 5 each run's 500 lacked one to three of
    the groups. Seed 2 drew no valid forgery re-chained on a journal that the turn had
    written whole, the only shape that shows a verifier returning the mutations it
    remembers writing (``dr-journal-verify-remembers``) instead of the file's.
    """
    return [dr_scenarios(tampering=group) for group in GROUPS]
