"""What a scenario file's journal steps must get right before anything runs.

The kit performs ``tamper_journal`` and ``verify_journal`` itself once the implementation
is done (its journal closed), so they come after the turn has ended and nothing of the
implementation's follows them. And a tampering that names an entry the journal cannot
have is the scenario's mistake, not the implementation's: it is reported when the file is
loaded (with its line), never as a failure at run time. Kept free of heavy imports:
validating scenario files must not load the kit's cryptography.
"""

from __future__ import annotations

from typing import Any

__all__ = ["existing_entries", "fault_problems", "journal_problems", "most_entries"]

Problem = tuple[tuple[str | int, ...], str]
_KIT_STEPS = ("tamper_journal", "verify_journal")


def _verb(step: dict[str, Any]) -> str:
    return next(k for k in step if k != "note")


def most_entries(given: dict[str, Any]) -> int:
    """The most entries the turn can journal: one per pre-dispatch mutation and per
    redaction of a call whose tool may run (denied calls and refused approvals run none)."""
    count = 0
    policies = given.get("policy", {})
    for step in given.get("provider", []):
        for call in step.get("calls", []):
            policy = policies.get(call.get("id"), {})
            pre = next(iter(policy.get("pre", {"allow": True})))
            if pre == "deny" or (pre == "approval" and not policy.get("approve", False)):
                continue
            count += (pre in ("rewrite", "inject")) + ("redact" in policy)
    return count


def existing_entries(given: dict[str, Any]) -> int:
    """How many complete entries the kit writes into the journal before the turn."""
    existing = (given.get("recorder") or {}).get("existing_journal") or {}
    return int(existing.get("entries", 0))


def _indexes(op: dict[str, Any]) -> list[int]:
    """The entry indexes a tampering names (before it is applied)."""
    kind = next(iter(op))
    body = op[kind]
    if kind in ("delete", "duplicate"):
        return [int(body)]
    if kind == "swap":
        return [int(i) for i in body]
    if kind == "splice":
        return [int(body["entry"]), int(body["from_entry"])]
    if kind in ("flip_byte", "edit", "reencode", "forge"):
        return [int(body["entry"])]
    return []  # truncate_bytes, append


def journal_problems(data: dict[str, Any]) -> list[Problem]:
    """Problems with the journal steps of one (schema-valid) scenario document."""
    problems: list[Problem] = []
    when = data.get("when", [])
    lines = most_entries(data.get("given", {})) + existing_entries(data.get("given", {}))
    turn_over = first_kit = None
    for index, step in enumerate(when):
        verb = _verb(step)
        if verb in ("turn", "join"):
            turn_over = index
        if verb not in _KIT_STEPS:
            if first_kit is not None:
                problems.append((
                    ("when", index, verb),
                    f"{verb} follows the kit's journal steps; they come last, once the "
                    "implementation is done",
                ))  # fmt: skip
            continue
        first_kit = index if first_kit is None else first_kit
        if turn_over is None:
            problems.append((
                ("when", index, verb),
                f"{verb} needs the turn to be over: put it after `turn` (or `join`)",
            ))  # fmt: skip
        if verb != "tamper_journal":
            continue
        op = step[verb]
        if "swap" in op and len(set(_indexes(op))) < 2:
            problems.append((
                ("when", index, verb),
                f"swap names entry {_indexes(op)[0]} twice: nothing would change, yet the "
                "verifier would be expected to find the tampering",
            ))  # fmt: skip
        for entry in _indexes(op):
            if entry >= max(lines, 1):
                problems.append((
                    ("when", index, verb),
                    f"entry {entry} does not exist: this turn journals at most {lines} "
                    f"entr{'y' if lines == 1 else 'ies'} (entries count from 0)",
                ))  # fmt: skip
        kind = next(iter(op))
        lines += {"delete": -1, "duplicate": 1, "append": 1}.get(kind, 0)
    return problems


def fault_problems(data: dict[str, Any]) -> list[Problem]:
    """``recorder.fsync_fails`` is the journal's fault, declared by ``fsync-fault``, and
    must reach a record: otherwise the scenario tests nothing it says it does."""
    recorder = data.get("given", {}).get("recorder") or {}
    fails = recorder.get("fsync_fails")
    where: tuple[str | int, ...] = ("given", "recorder", "fsync_fails")
    if (fails is not None) != ("fsync-fault" in data.get("requires", [])):
        return [(("requires",), "`fsync_fails` and `requires: [fsync-fault]` go together")]
    if fails is None:
        return []
    if not recorder.get("journal"):
        return [(where, "fsync_fails makes the journal's fsyncs fail: add `journal: true`")]
    problems: list[Problem] = []
    records = most_entries(data.get("given", {}))
    if int(fails["from_record"]) >= records:
        problems.append((
            where,
            f"from_record {fails['from_record']} is never reached: the turn makes at most "
            f"{records} record call(s), counted from 0",
        ))  # fmt: skip
    if any(_verb(step) == "reopen_journal" for step in data.get("when", [])):
        problems.append((
            where,
            "the kit's fsync fault lasts the whole scenario, so a reopened journal could "
            "not sync either: no `reopen_journal` with fsync_fails",
        ))  # fmt: skip
    return problems
