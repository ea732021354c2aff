"""What a dispatch-recorder scenario means, shared by the linter, the driver and the oracle.

The driver performs ``given``/``when`` and the oracle judges the trace from the same
reading of the scripted participants, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.journal_lint import (
    fault_problems,
    journal_problems,
    most_entries,
)

__all__ = [
    "PRE_KINDS",
    "RACE_LIMIT",
    "behaviour_for",
    "calls_of",
    "cancel_bound",
    "event_positions",
    "failed",
    "gates_of",
    "healthy_under_short_limit",
    "late_limit",
    "lint",
    "policy_for",
    "pre_kind",
    "step_verb",
    "tamper_index",
]

#: Pre-dispatch decisions that are mutations, and the mutation kind each one records.
PRE_KINDS = {"rewrite": "input_rewrite", "inject": "context_injection"}
#: A time limit below this many seconds is short: a gate released by a plain ``release``
#: step would race it (a loaded machine can take that long between two steps), so the
#: linter asks for ``late`` with ``release_late`` (or no release at all) instead.
RACE_LIMIT = 2.0
#: The shortest record or commit time limit a healthy record or commit may run under. One
#: that answers at once still races the limit: a loaded machine can stall a thread (or a
#: wire adapter's round trip) between the timer starting and the answer. Below this, every
#: scripted record or commit must hang, be ``late`` or wait on a gate (docs/scenarios.md).
HEALTHY_LIMIT = 1.0


def step_verb(step: dict[str, Any]) -> str:
    return next(k for k in step if k != "note")


def cancel_bound(when: list[dict[str, Any]]) -> float | None:
    """The seconds a `cancel: {turn, within}` step gives the turn to end, if it sets any."""
    for step in when:
        body = step.get("cancel")
        if isinstance(body, dict):
            return float(body["within"])
    return None


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
    """Every gate a record, commit or tool of the scenario may block on."""
    recorder = given.get("recorder") or {}
    found = {b.get("gate") for key in ("record", "commit") for b in _behaviours(recorder, key)}
    found |= {spec.get("gate") for spec in given.get("tools", {}).values()}
    return {str(g) for g in found if g is not None}


def late_limit(given: dict[str, Any], gate: str) -> str:
    """The time limit a ``release_late`` of ``gate`` waits out: the commit limit for a gate a
    commit blocks on, else the record limit (a tool's gate: it ran longer than any record
    may take)."""
    commits = _behaviours(given.get("recorder") or {}, "commit")
    return (
        "commit_time_limit" if any(b.get("gate") == gate for b in commits) else "record_time_limit"
    )


def event_positions(trace: list[dict[str, Any]]) -> dict[str, int]:
    """The index of the first event of each name ``then.order`` may use.

    Names: ``provider:K``, ``record:CALL:KIND`` and ``recorded:CALL:KIND`` (the record's
    entry and its end), ``tool:CALL`` and ``tool_done:CALL``, ``approval:CALL``,
    ``commit:N`` and ``committed:N``, ``release:GATE``, ``cancel``, ``turn_end``.
    """
    found: dict[str, int] = {}
    records: dict[Any, str] = {}
    for i, e in enumerate(trace):
        kind = e.get("type")
        name = None
        if kind == "provider_call":
            name = f"provider:{e.get('step')}"
        elif kind == "record_enter":
            records[e.get("n")] = f"{e.get('call')}:{e.get('kind')}"
            name = f"record:{records[e.get('n')]}"
        elif kind == "record_exit" and e.get("n") in records:
            name = f"recorded:{records[e.get('n')]}"
        elif kind in ("commit_enter", "commit_exit"):
            name = f"{'commit' if kind == 'commit_enter' else 'committed'}:{e.get('n')}"
        elif kind in ("tool_run", "tool_exit", "approval"):
            verb = {"tool_run": "tool", "tool_exit": "tool_done", "approval": "approval"}[kind]
            name = f"{verb}:{e.get('call')}"
        elif kind == "gate_released":
            name = f"release:{e.get('gate')}"
        elif kind == "cancel_requested":
            name = "cancel"
        elif kind == "turn_end":
            name = "turn_end"
        if name is not None:
            found.setdefault(name, i)
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
    # A provider may reuse a call id in a later step (the calls are still two calls, each
    # judged within its own step); within one step an id must be unique.
    for index, step in enumerate(given["provider"]):
        own = [call["id"] for call in step.get("calls", [])]
        dupes = sorted({i for i in own if own.count(i) > 1})
        if dupes:
            where: tuple[str | int, ...] = ("given", "provider", index)
            problems.append(
                (where, f"tool call ids must be unique within a step; repeated: {dupes}")
            )
    for key in given.get("policy", {}):
        if key not in ids:
            problems.append((("given", "policy", key), f"{key!r} is not a proposed call id"))
    for key in then.get("calls", {}):
        if key not in ids:
            problems.append((("then", "calls", key), f"{key!r} is not a proposed call id"))
    commits = then.get("commits")
    for k, commit in enumerate(commits if isinstance(commits, list) else []):
        for j, message in enumerate(commit):
            if "call" in message and message["call"] not in ids:
                where = ("then", "commits", k, j, "call")
                problems.append((where, f"{message['call']!r} is not a proposed call id"))
    for k, sequence in enumerate(then.get("order", [])):
        for j, name in enumerate(sequence):
            parts = name.split(":")
            wrong = (
                parts[0] in ("record", "recorded", "tool", "tool_done", "approval")
                and parts[1] not in ids
            ) or (parts[0] == "release" and parts[1] not in gates_of(given))
            if wrong:
                what = "gate" if parts[0] == "release" else "proposed call id"
                problems.append((("then", "order", k, j), f"{parts[1]!r} is not a {what}"))
    recorder = given.get("recorder")
    journal = bool(recorder and recorder.get("journal"))
    if journal != ("signed-journal" in data.get("requires", [])):
        problems.append((("requires",), "a journal recorder needs `requires: [signed-journal]`"))
    existing = (recorder or {}).get("existing_journal") or {}
    if existing.get("damaged_entry", -1) >= existing.get("entries", 0):
        problems.append((
            ("given", "recorder", "existing_journal", "damaged_entry"),
            f"entry {existing.get('damaged_entry')} does not exist: the existing journal has "
            f"{existing.get('entries')} (entries count from 0)",
        ))  # fmt: skip
    if existing.get("lost_newline") and (
        existing.get("entries", 0) < 1 or existing.get("torn_tail") or "damaged_entry" in existing
    ):
        problems.append((
            ("given", "recorder", "existing_journal", "lost_newline"),
            "lost_newline takes the newline of the last entry: it needs at least one entry, "
            "and neither a torn tail nor a damaged entry after or in it",
        ))  # fmt: skip
    if "newline_replaced_by" in existing and (
        existing.get("entries", 0) < 1
        or existing.get("torn_tail")
        or "damaged_entry" in existing
        or existing.get("lost_newline")
    ):
        problems.append((
            ("given", "recorder", "existing_journal", "newline_replaced_by"),
            "newline_replaced_by overwrites the newline of the last entry: it needs at least "
            "one entry, and neither lost_newline, a torn tail nor a damaged entry with it",
        ))  # fmt: skip
    if recorder and "existing_journal" in recorder and not journal:
        problems.append((
            ("given", "recorder", "existing_journal"),
            "an existing journal is the journal recorder's file: add `journal: true`",
        ))  # fmt: skip
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
        elif verb == "cancel" and isinstance(body, dict) and body["turn"] not in turns:
            problems.append((at, f"cancel names {body['turn']!r}, which no earlier step started"))
        elif verb in ("cancel", "join") and isinstance(body, str) and body not in turns:
            problems.append((at, f"{verb} names {body!r}, which no earlier step started"))
        elif verb in ("release", "release_late") and body not in gates:
            problems.append((at, f"gate {body!r} is not used by any recorder behaviour"))
        elif verb == "release_after" and body["gate"] not in gates:
            problems.append((at, f"gate {body['gate']!r} is not used by any recorder behaviour"))
        elif verb in ("verify_journal", "tamper_journal", "reopen_journal") and not journal:
            problems.append(
                (at, f"{verb} needs the journal recorder (`recorder: {{journal: true}}`)")
            )
        elif verb == "wait_record" and int(body.get("count", 1)) > most_entries(given):
            problems.append((
                at,
                f"waits for {body.get('count', 1)} record calls, but the policy asks for "
                f"only {most_entries(given)} mutation(s), one record each",
            ))  # fmt: skip
    problems.extend(fault_problems(data))
    if journal:
        problems.extend(journal_problems(data))
    verbs = [step_verb(s) for s in when]
    for key in ("record", "commit"):
        late = any(b.get("late") for b in _behaviours(recorder, key))
        if late and "release_late" not in verbs and "cancel" not in verbs:
            problems.append((("when",), f"a `late` {key} needs a `release_late` or `cancel` step"))
        if late and cancel_bound(when) is not None:
            problems.append((
                ("when",),
                f"a `late` {key} is deaf to cancellation, so no turn can end within a "
                "cancel's `within`: bound only a cancellation that can be honoured",
            ))  # fmt: skip
    for index, step in enumerate(when):
        if (
            step_verb(step) == "release_late"
            and late_limit(given, step["release_late"]) not in given
        ):
            limit = late_limit(given, step["release_late"])
            problems.append((("when", index), f"`release_late` waits for `{limit}`: give one"))
        if step_verb(step) == "release_after":
            problems.extend(_release_after(given, index, step["release_after"]))
    problems.extend(_races(given, when))
    problems.extend(_healthy_under_short_limits(given))
    for b in _behaviours(recorder, "commit"):
        if (b.get("hang") or b.get("late")) and "commit_time_limit" not in given:
            problems.append((("given",), "a hanging commit needs `commit_time_limit`"))
    for b in _behaviours(recorder, "record"):
        if (b.get("hang") or b.get("late")) and "record_time_limit" not in given:
            problems.append((("given",), "a hanging record needs `record_time_limit`"))
    return problems


def _races(
    given: dict[str, Any], when: list[dict[str, Any]]
) -> list[tuple[tuple[str | int, ...], str]]:
    """Gates whose plain ``release`` would race a short record or commit time limit."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    released = {
        step["release"]: index for index, step in enumerate(when) if step_verb(step) == "release"
    }
    cancelled = next((i for i, s in enumerate(when) if step_verb(s) == "cancel"), len(when))
    recorder = given.get("recorder") or {}
    for key, limit_key in (("record", "record_time_limit"), ("commit", "commit_time_limit")):
        limit = given.get(limit_key)
        if limit is None or limit >= RACE_LIMIT:
            continue
        for b in _behaviours(recorder, key):
            gate = b.get("gate")
            if gate in released and not b.get("late") and released[gate] < cancelled:
                problems.append((
                    ("when", released[gate], "release"),
                    f"releasing gate {gate!r} races the {limit:g} s {limit_key}: the {key} "
                    f"must pass (or fail) the same on a loaded machine; use `late: true` "
                    f"with `release_late`, a limit of {RACE_LIMIT:g} s or more, or no release",
                ))  # fmt: skip
    return problems


def healthy_under_short_limit(given: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Each limit below HEALTHY_LIMIT (its key) with the scripted behaviours that would
    answer on their own under it (their positions; ``()`` for an unscripted recorder,
    whose every record or commit answers at once)."""
    found: dict[str, tuple[int, ...]] = {}
    recorder = given.get("recorder") or {}
    for key, limit_key in (("record", "record_time_limit"), ("commit", "commit_time_limit")):
        limit = given.get(limit_key)
        if limit is None or float(limit) >= HEALTHY_LIMIT:
            continue
        if recorder.get(key) is None:
            found[limit_key] = ()
            continue
        healthy = tuple(
            i
            for i, b in enumerate(_behaviours(recorder, key))
            if not (b.get("hang") or b.get("late") or "gate" in b)
        )
        if healthy:
            found[limit_key] = healthy
    return found


def _healthy_under_short_limits(given: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Records and commits that answer on their own under a limit below HEALTHY_LIMIT."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    recorder = given.get("recorder") or {}
    for limit_key, positions in healthy_under_short_limit(given).items():
        key = limit_key.split("_", 1)[0]
        script = recorder.get(key)
        for index in positions or (0,):
            at: tuple[str | int, ...] = ("given", "recorder", key)
            problems.append((
                at + ((index,) if isinstance(script, list) else ()),
                f"this {key} answers on its own under a {float(given[limit_key]):g} s "
                f"{limit_key}, and would race it on a loaded machine: give a {limit_key} "
                f"of {HEALTHY_LIMIT:g} s or more, or script every {key} to hang or be late",
            ))  # fmt: skip
    return problems


#: The least time a ``release_after`` must leave between its release and the limit of
#: what blocks on the gate: the participant is a healthy one that answers within it.
AFTER_SLACK = 1.0


def _release_after(
    given: dict[str, Any], index: int, body: dict[str, Any]
) -> list[tuple[tuple[str | int, ...], str]]:
    """A ``release_after`` opens its gate well inside the limit of what blocks on it."""
    key = late_limit(given, str(body["gate"]))
    if key not in given:
        return [(("when", index), f"`release_after` is measured against `{key}`: give one")]
    limit, seconds = float(given[key]), float(body["seconds"])
    if seconds + AFTER_SLACK > limit:
        return [(
            ("when", index, "release_after", "seconds"),
            f"`release_after` {seconds:g} s leaves less than {AFTER_SLACK:g} s of the "
            f"{limit:g} s {key}: what blocks on the gate must answer well within it "
            "(a participant that must fail hangs, or is `late` with `release_late`)",
        )]  # fmt: skip
    return []


def _behaviours(recorder: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    script = (recorder or {}).get(key, [])
    return list(script) if isinstance(script, list) else [script]
