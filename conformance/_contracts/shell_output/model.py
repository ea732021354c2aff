"""What a shell-output scenario means, shared by the linter, the driver and the judges.

One module reads ``given``/``when`` for everyone, so the driver that performs a scenario
and the oracle that judges it cannot disagree about what the child wrote, which budget
applies or which gate a step releases.
"""

from __future__ import annotations

import json
from typing import Any

from seamspec.reference._shell_output.emitter import (
    detached_grandchildren,
    ends_by_signal,
    expected_exit,
    expected_output,
    has_grandchild,
    orphaned_output,
)

__all__ = [
    "CALL_VERBS",
    "DEFAULT_CAP",
    "FALSY_OBSERVER_FEATURE",
    "LIVE_BUDGET_FEATURE",
    "SCRIPT_LIMIT",
    "behaviour_for",
    "budget",
    "cancel_target",
    "cap",
    "detached_grandchildren",
    "ends_by_signal",
    "expected_exit",
    "expected_output",
    "has_grandchild",
    "lint",
    "orphaned_output",
    "script_gates",
    "step_verb",
    "time_limit",
]

#: Steps that create an invocation (a call), by the driver that performs them.
PROCESS_VERBS = ("run", "start")
SESSION_VERBS = ("open",)
CALL_VERBS = (*PROCESS_VERBS, *SESSION_VERBS)
HOOKS = ("on_output", "on_finish")
DEFAULT_CAP = 1024 * 1024

#: The most bytes an emitter script may take as JSON. The driver passes it as one
#: command-line argument (see ``emitter_command``), and Linux refuses an argument longer
#: than 128 KiB ("Argument list too long"); the rest is room for the gate folder's path.
SCRIPT_LIMIT = 100_000

PROCESS_FEATURE = "soo-process"
SESSION_FEATURE = "soo-session"
LIVE_BUDGET_FEATURE = "soo-live-budget"
FALSY_OBSERVER_FEATURE = "soo-falsy-observer"


def step_verb(step: dict[str, Any]) -> str:
    return next(k for k in step if k != "note")


def cap(given: dict[str, Any]) -> int:
    """The result's per-stream output cap."""
    return int(given.get("cap", DEFAULT_CAP))


def budget(given: dict[str, Any]) -> int:
    """The live per-stream budget: the output cap unless the scenario sets its own."""
    return int(given.get("budget", cap(given)))


def time_limit(given: dict[str, Any], body: dict[str, Any]) -> float | None:
    """The time limit of one `run`/`start` (its own, else the scenario's), or None."""
    value = body.get("timeout", given.get("timeout"))
    return None if value is None else float(value)


def cancel_target(body: str | dict[str, Any]) -> str:
    """The call a `cancel` step names (``cancel: ID`` or ``cancel: {id, within}``)."""
    return body if isinstance(body, str) else str(body["id"])


def behaviour_for(entry: dict[str, Any], hook: str, call_index: int) -> dict[str, Any]:
    """The scripted behaviour of the ``call_index``-th (0-based) call of ``hook``."""
    script = entry.get(hook, {})
    if isinstance(script, list):
        return dict(script[min(call_index, len(script) - 1)])
    return dict(script)


def has_finish(entry: dict[str, Any]) -> bool:
    """A plain-callable observer has no ``on_finish`` at all."""
    return not entry.get("callable", False)


def offered(when: list[dict[str, Any]], call: str) -> dict[str, list[tuple[int, bytes]]]:
    """Session scenarios: what each ``emit`` step offers to ``call``, by stream, with index."""
    out: dict[str, list[tuple[int, bytes]]] = {"stdout": [], "stderr": []}
    for index, step in enumerate(when):
        if step_verb(step) == "emit" and step["emit"]["id"] == call:
            chunk = emitted_bytes(step["emit"])
            for _ in range(int(step["emit"].get("repeat", 1))):
                out[step["emit"]["stream"]].append((index, chunk))
    return out


def emitted_bytes(body: dict[str, Any]) -> bytes:
    return bytes.fromhex(body["hex"]) if "hex" in body else str(body.get("text", "")).encode()


def script_gates(script: list[dict[str, Any]]) -> set[str]:
    """Every gate an emitter script waits on: its ``wait`` steps and detached grandchildren."""
    waits = {str(s["wait"]) for s in script if "wait" in s}
    return waits | {str(s["until"]) for s in detached_grandchildren(script)}


def _lint_detached(
    at: tuple[str | int, ...],
    given: dict[str, Any],
    body: dict[str, Any],
    cancelled: set[str],
    later: list[dict[str, Any]],
) -> list[tuple[tuple[str | int, ...], str]]:
    """A detached grandchild only where upstream's behaviour is clear: a bounded call.

    It leaves the process group, so no group kill ends it, and it holds the pipes until
    its gate. A cancellation drops the output guard at once, whatever the processes do
    (output_observer.rs:138-145). A time limit does the same: the outer timeout bounds
    when invoke returns, whatever the detached worker still waits for, and drops the
    guard when it elapses (shell_tool.rs:918-925, 948-961); the worker kills and reaps
    the stages' groups on its own. A call with neither would wait for the gate, which
    the scenario releases only after the call's step, so it may not start one.
    """
    problems: list[tuple[tuple[str | int, ...], str]] = []
    detached = detached_grandchildren(body.get("script", []))
    if not detached:
        return problems
    if time_limit(given, body) is None and body["id"] not in cancelled:
        problems.append(
            (
                at,
                "a detached grandchild leaves the process group and holds the pipes until "
                "its gate: only a call with a time limit, or one the scenario cancels, may "
                "start one",
            )
        )
    released = {s["release"] for s in later if step_verb(s) == "release"}
    for step in detached:
        if step["until"] not in released:
            problems.append(
                (
                    (*at, "script"),
                    f"a detached grandchild holds the pipes until gate {step['until']!r}: a "
                    "later `release` step must release it",
                )
            )
    return problems


def lint(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Cross-references the schema cannot express: names, gates, ids and features."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    given, when, then = data["given"], data["when"], data["then"]
    names = [o["name"] for o in given.get("observers", [])]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append((("given", "observers"), f"observer names must be unique: {dupes}"))
    gates: set[str] = set()
    for entry in given.get("observers", []):
        for hook in HOOKS:
            script = entry.get(hook, [])
            for b in script if isinstance(script, list) else [script]:
                if "gate" in b:
                    gates.add(b["gate"])
    calls: dict[str, str] = {}
    verbs = {step_verb(s) for s in when}
    requires = set(data.get("requires", []))
    if verbs & set(PROCESS_VERBS) and PROCESS_FEATURE not in requires:
        problems.append((("requires",), f"run/start steps need `requires: [{PROCESS_FEATURE}]`"))
    if verbs & set(SESSION_VERBS) and SESSION_FEATURE not in requires:
        problems.append((("requires",), f"open steps need `requires: [{SESSION_FEATURE}]`"))
    if (
        verbs & set(PROCESS_VERBS)
        and budget(given) != cap(given)
        and LIVE_BUDGET_FEATURE not in requires
    ):
        problems.append(
            (
                ("given", "budget"),
                f"a live budget apart from the output cap needs `requires: [{LIVE_BUDGET_FEATURE}]` "
                "in a process scenario (upstream's runners always use the cap as the budget)",
            )
        )
    if (
        any(o.get("falsy") for o in given.get("observers", []))
        and FALSY_OBSERVER_FEATURE not in requires
    ):
        problems.append(
            (
                ("given", "observers"),
                f"a falsy observer needs `requires: [{FALSY_OBSERVER_FEATURE}]` (the object "
                "is the kit's Python driver's: an implementation with its own driver skips it)",
            )
        )
    cancelled = {cancel_target(s["cancel"]) for s in when if step_verb(s) == "cancel"}
    for index, step in enumerate(when):
        verb = step_verb(step)
        body = step[verb]
        at: tuple[str | int, ...] = ("when", index, verb)
        if verb in CALL_VERBS:
            if body["id"] in calls:
                problems.append((at, f"call id {body['id']!r} is used twice"))
            calls[body["id"]] = verb
            if "observer" in body and body["observer"] not in names:
                problems.append((at, f"unknown observer {body['observer']!r}"))
            if verb == "open" and "observer" not in body:
                problems.append((at, "a session needs an observer"))
            gates |= script_gates(body.get("script", []))
            bounded = time_limit(given, body) is not None or body["id"] in cancelled
            problems += _lint_detached(at, given, body, cancelled, when[index + 1 :])
            if has_grandchild(body.get("script", [])) and not bounded:
                problems.append(
                    (at, "a grandchild hangs until killed: give the call a `timeout` or cancel it")
                )
            if "within" in body and not bounded:
                problems.append(
                    (
                        at,
                        "`within` bounds a call only where a rule promises a duration: under "
                        "a time limit (SOO-TIMEOUT) or on a call the scenario cancels "
                        "(SOO-CANCEL); a plain run's duration is the child's",
                    )
                )
            size = len(json.dumps(body.get("script", [])))
            if size > SCRIPT_LIMIT:
                problems.append((
                    (*at, "script"),
                    f"the emitter script of {body['id']!r} is {size:,} bytes as JSON; the "
                    f"limit is {SCRIPT_LIMIT:,}, because it is passed as one command-line "
                    "argument (use `flood` steps for large output)",
                ))  # fmt: skip
        elif verb in ("emit", "finish"):
            ident = body["id"] if verb == "emit" else body
            if calls.get(ident) != "open":
                problems.append((at, f"{verb} names {ident!r}, which no earlier `open` opened"))
        elif verb == "cancel" and calls.get(cancel_target(body)) not in ("start", "open"):
            problems.append(
                (at, f"cancel names {cancel_target(body)!r}, not an earlier `start` or `open`")
            )
        elif verb == "join" and calls.get(body) != "start":
            problems.append((at, f"join names {body!r}, which no earlier `start` started"))
        elif verb == "release" and body not in gates:
            problems.append((at, f"gate {body!r} is not used by any observer or script"))
        elif verb == "wait_entered" and body["observer"] not in names:
            problems.append((at, f"unknown observer {body['observer']!r}"))
    for section in ("outputs", "finishes", "chunks", "callbacks"):
        for key in then.get(section, {}):
            if key not in names:
                problems.append((("then", section, key), f"unknown observer {key!r}"))
    for section in ("results", "ids"):
        for key in then.get(section, {}):
            if key not in calls:
                problems.append((("then", section, key), f"{key!r} is not a call id"))
    return problems
