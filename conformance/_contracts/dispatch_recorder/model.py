"""What a dispatch-recorder scenario means, shared by the linter, the driver and the oracle.

The driver performs ``given``/``when`` and the oracle judges the trace from the same
reading of the scripted participants, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.journal_lint import (
    journal_problems,
    most_entries,
)

__all__ = [
    "PRE_KINDS",
    "behaviour_for",
    "calls_of",
    "gates_of",
    "lint",
    "policy_for",
    "pre_kind",
    "step_verb",
    "tamper_index",
]

#: Pre-dispatch decisions that are mutations, and the mutation kind each one records.
PRE_KINDS = {"rewrite": "input_rewrite", "inject": "context_injection"}


def step_verb(step: dict[str, Any]) -> str:
    return next(k for k in step if k != "note")


def calls_of(given: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every proposed call, with the index of the provider step that proposes it."""
    for index, step in enumerate(given["provider"]):
        for call in step.get("calls", []):
            yield index, call


def policy_for(given: dict[str, Any], call_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = dict(given.get("policy", {}).get(call_id, {}))
    entry.setdefault("pre", {"allow": True})
    return entry


def pre_kind(policy: dict[str, Any]) -> str:
    """``allow``, ``deny``, ``approval``, ``rewrite`` or ``inject``."""
    return str(next(iter(policy["pre"])))


def behaviour_for(script: object, index: int) -> dict[str, Any]:
    """The ``index``-th (0-based) scripted behaviour; the last one repeats; default OK."""
    if script is None:
        return {}
    if isinstance(script, list):
        return dict(script[min(index, len(script) - 1)]) if script else {}
    if not isinstance(script, dict):
        raise TypeError(f"a scripted behaviour is a mapping or a list of mappings, not {script!r}")
    return dict(script)


def failed(behaviour: dict[str, Any]) -> str | None:
    """Why a scripted record or commit must count as failed, or ``None`` if it succeeds."""
    if "raise" in behaviour:
        return "raised"
    if behaviour.get("hang"):
        return "hang"
    if behaviour.get("late"):
        return "late"
    if "error" in behaviour:
        return "error"
    return None


def gates_of(given: dict[str, Any]) -> set[str]:
    recorder = given.get("recorder") or {}
    found = set()
    for key in ("record", "commit"):
        script = recorder.get(key, [])
        for b in script if isinstance(script, list) else [script]:
            if "gate" in b:
                found.add(b["gate"])
    return found


def tamper_index(op: dict[str, Any], entries: int) -> int:
    """The entry a verifier must name after this tampering of a journal of ``entries``."""
    if "flip_byte" in op:
        return int(op["flip_byte"]["entry"])
    if "delete" in op:
        return int(op["delete"])
    if "swap" in op:
        return int(min(op["swap"]))
    if "duplicate" in op:
        return int(op["duplicate"]) + 1
    if "truncate_bytes" in op:
        return entries - 1
    raise ValueError(f"unknown tampering {op!r}")


def lint(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Cross-references the schema cannot express: ids, gates and features must line up."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    given, when, then = data["given"], data["when"], data["then"]
    ids = [call["id"] for _, call in calls_of(given)]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        problems.append((("given", "provider"), f"tool call ids must be unique; repeated: {dupes}"))
    for key in given.get("policy", {}):
        if key not in ids:
            problems.append((("given", "policy", key), f"{key!r} is not a proposed call id"))
    for key in then.get("calls", {}):
        if key not in ids:
            problems.append((("then", "calls", key), f"{key!r} is not a proposed call id"))
    recorder = given.get("recorder")
    journal = bool(recorder and recorder.get("journal"))
    if journal != ("signed-journal" in data.get("requires", [])):
        problems.append((("requires",), "a journal recorder needs `requires: [signed-journal]`"))
    gates = gates_of(given)
    turns: set[str] = set()
    for index, step in enumerate(when):
        verb = step_verb(step)
        body = step[verb]
        at: tuple[str | int, ...] = ("when", index, verb)
        if verb in ("turn", "start_turn"):
            if turns:
                problems.append((at, "a scenario runs one turn"))
            turns.add(body)
        elif verb in ("cancel", "join") and body not in turns:
            problems.append((at, f"{verb} names {body!r}, which no earlier step started"))
        elif verb in ("release", "release_late") and body not in gates:
            problems.append((at, f"gate {body!r} is not used by any recorder behaviour"))
        elif verb in ("verify_journal", "tamper_journal") and not journal:
            problems.append(
                (at, f"{verb} needs the journal recorder (`recorder: {{journal: true}}`)")
            )
        elif verb == "wait_record" and int(body.get("count", 1)) > most_entries(given):
            problems.append((
                at,
                f"waits for {body.get('count', 1)} record calls, but the policy asks for "
                f"only {most_entries(given)} mutation(s), one record each",
            ))  # fmt: skip
    if journal:
        problems.extend(journal_problems(data))
    late = any(b.get("late") for b in _behaviours(recorder, "record"))
    if late and "release_late" not in {step_verb(s) for s in when}:
        problems.append((("when",), "a `late` record needs a `release_late` step"))
    for b in _behaviours(recorder, "commit"):
        if (b.get("hang") or b.get("late")) and "commit_time_limit" not in given:
            problems.append((("given",), "a hanging commit needs `commit_time_limit`"))
    for b in _behaviours(recorder, "record"):
        if (b.get("hang") or b.get("late")) and "record_time_limit" not in given:
            problems.append((("given",), "a hanging record needs `record_time_limit`"))
    return problems


def _behaviours(recorder: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    script = (recorder or {}).get(key, [])
    return list(script) if isinstance(script, list) else [script]
