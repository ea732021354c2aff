"""What a write-observer-chain scenario means, shared by the linter, the driver and the oracle.

Keeping the interpretation of ``given``/``when`` in one module means the kit's driver
and its judge cannot drift apart: they read the same scripted behaviours.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterator
from typing import Any

__all__ = [
    "TOOL_VERBS",
    "behaviour_for",
    "flatten",
    "is_refused",
    "lint",
    "observer_entries",
    "step_verb",
]

TOOL_VERBS = ("write", "edit", "delete")
HOOKS = ("before_write", "after_write")


def step_verb(step: dict[str, Any]) -> str:
    return next(k for k in step if k != "note")


def observer_entries(observers: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every observer entry, nested chains included (the chain entries themselves too)."""
    for entry in observers:
        yield entry
        if "chain" in entry:
            yield from observer_entries(entry["chain"])


def flatten(observers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The leaf observers in the order a conforming chain calls them (WOC-NESTED)."""
    leaves: list[dict[str, Any]] = []
    for entry in observers:
        if "chain" in entry:
            leaves.extend(flatten(entry["chain"]))
        else:
            leaves.append(entry)
    return leaves


def behaviour_for(entry: dict[str, Any], hook: str, call_index: int) -> dict[str, Any]:
    """The scripted behaviour of the ``call_index``-th (0-based) call of ``hook``."""
    script = entry.get(hook, {})
    if isinstance(script, list):
        return dict(script[min(call_index, len(script) - 1)])
    return dict(script)


def is_refused(path: str, deny: list[str]) -> bool:
    """The sandbox check every conforming write path must make for these scenarios.

    A path is refused when it is absolute, escapes the root with ``..``, or matches a
    ``deny`` glob. (Symlink escapes are a real implementation's concern, not a scenario's.)
    """
    if path.startswith("/") or posixpath.isabs(path):
        return True
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        return True
    return any(fnmatch.fnmatchcase(normal, pattern) for pattern in deny)


def lint(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Cross-references the schema cannot express: names, gates and ids must line up."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    given, when, then = data["given"], data["when"], data["then"]
    names: list[str] = []
    gates: set[str] = set()
    for entry in observer_entries(given["observers"]):
        names.append(entry["name"])
        for hook in HOOKS:
            script = entry.get(hook, [])
            for b in script if isinstance(script, list) else [script]:
                if "gate" in b:
                    gates.add(b["gate"])
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(
            (("given", "observers"), f"observer names must be unique; repeated: {dupes}")
        )
    checkpoints = {
        e["name"] for e in observer_entries(given["observers"]) if e.get("builtin") == "checkpoint"
    }
    calls: set[str] = set()
    tools: set[str] = set()
    started: set[str] = set()
    for index, step in enumerate(when):
        verb = step_verb(step)
        body = step[verb]
        at: tuple[str | int, ...] = ("when", index, verb)
        if verb in ("call", "start") or verb in TOOL_VERBS:
            ident = body["id"]
            if ident in calls or ident in tools:
                problems.append((at, f"step id {ident!r} is used twice"))
            (tools if verb in TOOL_VERBS else calls).add(ident)
            if verb == "start":
                started.add(ident)
        elif verb in ("cancel", "join") and body not in started:
            problems.append((at, f"{verb} names {body!r}, which no earlier `start` step started"))
        elif verb == "release" and body not in gates:
            problems.append((at, f"gate {body!r} is not used by any observer behaviour"))
        elif verb == "wait_entered" and body["observer"] not in names:
            problems.append((at, f"unknown observer {body['observer']!r}"))
        elif verb in ("restore", "new_turn") and body not in checkpoints:
            problems.append((at, f"{body!r} is not a checkpoint observer (builtin: checkpoint)"))
    for index, item in enumerate(then.get("calls", [])):
        if item.rsplit(".", 1)[0] not in names:
            problems.append((("then", "calls", index), f"unknown observer in {item!r}"))
    for key in then.get("seen", {}):
        if key.rsplit(".", 1)[0] not in names:
            problems.append((("then", "seen", key), f"unknown observer in {key!r}"))
    for key in then.get("results", {}):
        if key not in calls:
            problems.append(
                (("then", "results", key), f"{key!r} is not the id of a call or start step")
            )
    for key in then.get("tools", {}):
        if key not in tools:
            problems.append(
                (("then", "tools", key), f"{key!r} is not the id of a write, edit or delete step")
            )
    for key in then.get("warnings", {}):
        if key not in names:
            problems.append((("then", "warnings", key), f"unknown observer {key!r}"))
    uses_tools = bool(tools) or "files" in given or "deny" in given or "files" in then
    if uses_tools and "write-tools" not in data.get("requires", []):
        problems.append(
            (("requires",), "this scenario uses the write tools: add `requires: [write-tools]`")
        )
    uses_builtins = any("builtin" in e for e in observer_entries(given["observers"]))
    if uses_builtins and "builtin-observers" not in data.get("requires", []):
        problems.append((("requires",), "builtin observers need `requires: [builtin-observers]`"))
    return problems
