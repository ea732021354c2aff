"""What a write-observer-chain scenario means, shared by the linter, the driver and the oracle.

Keeping the interpretation of ``given``/``when`` in one module means the kit's driver
and its judge cannot drift apart: they read the same scripted behaviours.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.sandbox import parents

__all__ = [
    "TOOL_VERBS",
    "behaviour_for",
    "blocks",
    "flatten",
    "is_limited",
    "leaf_limits",
    "lint",
    "observer_entries",
    "step_bounds",
    "step_verb",
]

TOOL_VERBS = ("write", "edit", "delete")
HOOKS = ("before_write", "after_write")
#: The shortest per-hook time limit a healthy hook may run under. Even a hook that returns
#: at once races the limit it runs under: a loaded machine can stall a thread between the
#: chain starting its timer and the hook returning (cut-offs were measured up to 0.45 s
#: late at load 10 to 20). So a limit below this holds only hooks that block until it
#: runs out, and healthy ones run under a longer limit or outside the limited chain.
HEALTHY_LIMIT = 1.0


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


def is_limited(given: dict[str, Any]) -> bool:
    """Whether any chain of this scenario has a per-hook time limit (WOC-SLOW applies)."""
    return "hook_time_limit" in given or any(
        "hook_time_limit" in e for e in observer_entries(given["observers"])
    )


def leaf_limits(given: dict[str, Any]) -> dict[str, float | None]:
    """The per-hook time limit each leaf observer runs under (WOC-SLOW).

    A nested chain's own ``hook_time_limit`` applies to its observers, longer or shorter
    than the one it is nested under; without one, it passes on the limit it runs under.
    """
    limits: dict[str, float | None] = {}

    def walk(entries: list[dict[str, Any]], limit: float | None) -> None:
        for entry in entries:
            if "chain" in entry:
                own = entry.get("hook_time_limit")
                walk(entry["chain"], float(own) if own is not None else limit)
            else:
                limits[str(entry["name"])] = limit

    top = given.get("hook_time_limit")
    walk(given["observers"], float(top) if top is not None else None)
    return limits


def step_bounds(when: list[dict[str, Any]]) -> dict[str, float]:
    """Each step id that carries a ``within`` bound, with the bound in seconds."""
    bounds: dict[str, float] = {}
    for step in when:
        body = step[step_verb(step)]
        if isinstance(body, dict) and "within" in body:
            bounds[str(body["id"])] = float(body["within"])
    return bounds


def _hook_calls_before(steps: list[dict[str, Any]], hook: str) -> int:
    """The most times these steps can enter one observer's ``hook``: once per call of it."""
    return sum(
        1
        for step in steps
        if step_verb(step) in TOOL_VERBS
        or (step_verb(step) in ("call", "start") and step[step_verb(step)]["hook"] == hook)
    )


def _outside_folder_made(folder: str, outside: dict[str, Any]) -> bool:
    """Whether ``outside`` makes ``folder`` (``""``: the outside folder itself)."""
    return not folder or any(name.startswith(folder + "/") for name in outside)


def _lint_links(given: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Links are made after ``files``, each in a real folder; none may hide a file.

    A link out of the sandbox must lead into a folder that ``outside`` makes (a typo in
    its folder would otherwise test nothing), but it may dangle there: a link whose
    target does not exist yet is how a write creates a file where the link leads.
    """
    problems: list[tuple[tuple[str | int, ...], str]] = []
    links = given.get("symlinks", {})
    files = set(given.get("files", {}))
    for link, target in links.items():
        at: tuple[str | int, ...] = ("given", "symlinks", link)
        above = [p for p in parents(link)[1:] if p in links]
        if above:
            problems.append((at, f"link {link!r} lies under another link ({above[0]!r})"))
        hidden = sorted(f for f in files if f == link or f.startswith(link + "/"))
        if hidden:
            problems.append((at, f"link {link!r} would replace the given file {hidden[0]!r}"))
        if "outside" in target and not _outside_folder_made(
            target["outside"].rpartition("/")[0], given.get("outside", {})
        ):
            problems.append(
                (
                    at,
                    f"link {link!r} points into {target['outside'].rpartition('/')[0]!r}, "
                    "a folder `outside` does not create",
                )
            )
    return problems


def blocks(entry: dict[str, Any], hook: str, index: int, released: set[str]) -> bool:
    """Whether this hook call of a leaf waits until a limit cuts it off (never returns)."""
    if "builtin" in entry:
        return hook == "after_write" and entry.get("program") == "tidy-hang"
    behaviour = behaviour_for(entry, hook, index)
    return bool(behaviour.get("hang")) or (
        "gate" in behaviour and behaviour["gate"] not in released
    )


def _lint_short_limits(
    given: dict[str, Any], when: list[dict[str, Any]]
) -> list[tuple[tuple[str | int, ...], str]]:
    """Under a limit below :data:`HEALTHY_LIMIT`, every hook the steps call must block.

    A healthy hook there would race the limit on a loaded machine, and a scenario whose
    verdict turns on the machine's load is a flaky one (docs/scenarios.md, "Time limits").
    """
    problems: list[tuple[tuple[str | int, ...], str]] = []
    limits = leaf_limits(given)
    released = {step["release"] for step in when if step_verb(step) == "release"}
    seen = dict.fromkeys(HOOKS, 0)
    told: set[tuple[str, str]] = set()
    for index, step in enumerate(when):
        verb = step_verb(step)
        body = step[verb]
        if verb in ("call", "start"):
            hooks: tuple[str, ...] = (body["hook"],)
        elif verb in TOOL_VERBS:
            hooks = HOOKS
        else:
            continue
        for hook in hooks:
            for entry in flatten(given["observers"]):
                limit = limits.get(str(entry["name"]))
                if limit is None or limit >= HEALTHY_LIMIT or (entry["name"], hook) in told:
                    continue
                if not blocks(entry, hook, seen[hook], released):
                    told.add((entry["name"], hook))
                    problems.append((
                        ("when", index, verb),
                        f"{entry['name']}.{hook} returns on its own under a {limit:g} s "
                        f"per-hook limit, and would race it on a loaded machine: give its "
                        f"chain a limit of {HEALTHY_LIMIT:g} s or more, or move it out of "
                        "the chain with the short limit",
                    ))  # fmt: skip
            seen[hook] += 1
    return problems


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
                gates.update(b[key] for key in ("gate", "unwind") if key in b)
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
    cancelled = {step["cancel"] for step in when if step_verb(step) == "cancel"}
    for index, step in enumerate(when):
        verb = step_verb(step)
        body = step[verb]
        at: tuple[str | int, ...] = ("when", index, verb)
        if verb in ("call", "start") or verb in TOOL_VERBS:
            ident = body["id"]
            if ident in calls or ident in tools:
                problems.append((at, f"step id {ident!r} is used twice"))
            (tools if verb in TOOL_VERBS else calls).add(ident)
            if verb == "start" or body.get("background"):
                started.add(ident)
        elif verb in ("cancel", "join") and body not in started:
            problems.append(
                (
                    at,
                    f"{verb} names {body!r}, which no earlier `start` or `background` step started",
                )
            )
        elif verb == "release" and body not in gates:
            problems.append((at, f"gate {body!r} is not used by any observer behaviour"))
        elif verb == "wait_entered" and body["observer"] not in names:
            problems.append((at, f"unknown observer {body['observer']!r}"))
        elif verb == "wait_entered" and int(body.get("count", 1)) > _hook_calls_before(
            when[:index], body["hook"]
        ):
            problems.append(
                (
                    at,
                    f"waits for {body['observer']}.{body['hook']} to be entered "
                    f"{body.get('count', 1)} time(s), but the earlier steps call that hook at "
                    f"most {_hook_calls_before(when[:index], body['hook'])} time(s): a "
                    "conforming implementation could never get there",
                )
            )
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
    for key, want in then.get("tools", {}).items():
        if "annotation" in want and "annotations" in want:
            problems.append(
                (
                    ("then", "tools", key),
                    "say `annotation` (the exact text, a seamspec decision) or `annotations` "
                    "(upstream's reading), not both",
                )
            )
        if key not in tools:
            problems.append(
                (("then", "tools", key), f"{key!r} is not the id of a write, edit or delete step")
            )
        elif want.get("cancelled") and (len(want) > 1 or key not in cancelled):
            problems.append(
                (
                    ("then", "tools", key),
                    "`cancelled` says the tool returned no result: it needs a `cancel` of this "
                    "step and no other expectation",
                )
            )
    for key in then.get("warnings", {}):
        if key not in names:
            problems.append((("then", "warnings", key), f"unknown observer {key!r}"))
    for index, step in enumerate(when):
        verb = step_verb(step)
        body = step[verb]
        if (
            isinstance(body, dict)
            and "within" in body
            and not (is_limited(given) or body["id"] in cancelled)
        ):
            problems.append(
                (
                    ("when", index, verb, "within"),
                    "`within` bounds a call only under a hook_time_limit or a cancel of this "
                    "call: no rule promises any other duration",
                )
            )
    problems.extend(_lint_links(given))
    problems.extend(_lint_short_limits(given, when))
    uses_tools = bool(tools) or any(k in given for k in ("files", "deny", "symlinks", "outside"))
    uses_tools = uses_tools or "files" in then
    if uses_tools and "write-tools" not in data.get("requires", []):
        problems.append(
            (("requires",), "this scenario uses the write tools: add `requires: [write-tools]`")
        )
    uses_builtins = any("builtin" in e for e in observer_entries(given["observers"]))
    if uses_builtins and "builtin-observers" not in data.get("requires", []):
        problems.append((("requires",), "builtin observers need `requires: [builtin-observers]`"))
    return problems
