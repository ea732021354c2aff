"""Hypothesis strategies that generate valid write-observer-chain scenarios.

Generated scenarios have no hand-written expectations: the oracle judges them, and
``expected_calls`` derives the exact hook order a conforming chain must show, so a saved
failure is an ordinary scenario that fails the same way under ``seamspec run``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from seamspec.conformance._contracts.write_observer_chain.model import behaviour_for, flatten

__all__ = ["expected_calls", "scenarios", "woc_scenarios"]

ANNOTATIONS = st.sampled_from(["", " ", "\n", "a", "b\n", "x\n\ny", "  z  ", "diff\n+1"])
_ONE = st.one_of(
    st.builds(lambda text: {"return": text}, ANNOTATIONS),
    st.just({"return": None}),
    st.just({"raise": "scripted failure"}),
    st.just({}),
)
BEHAVIOUR = st.one_of(_ONE, st.lists(_ONE, min_size=2, max_size=3))


@st.composite
def _observers(draw: st.DrawFn, depth: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        if depth < 2 and draw(st.integers(0, 5)) == 0:
            out.append({"name": "", "chain": draw(_observers(depth + 1))})
        else:
            out.append(
                {"name": "", "before_write": draw(BEHAVIOUR), "after_write": draw(BEHAVIOUR)}
            )
    return out


def _name(entries: list[dict[str, Any]], counter: list[int]) -> None:
    for entry in entries:
        counter[0] += 1
        entry["name"] = f"{'inner' if 'chain' in entry else 'o'}{counter[0]}"
        if "chain" in entry:
            _name(entry["chain"], counter)


def _is_gated(leaf: dict[str, Any]) -> bool:
    script = leaf.get("after_write")
    return isinstance(script, list) and script[-1] == {"gate": "g"}


def expected_calls(given: dict[str, Any], when: list[dict[str, Any]]) -> list[str]:
    """The hook entries a conforming chain makes, in order, for these steps."""
    order = [leaf["name"] for leaf in flatten(given["observers"])]
    calls: list[str] = []
    gated = next((leaf["name"] for leaf in flatten(given["observers"]) if _is_gated(leaf)), None)
    for step in when:
        if "call" in step:
            calls += [f"{name}.{step['call']['hook']}" for name in order]
        elif "start" in step:  # cancelled while the gated observer waits
            assert gated is not None
            calls += [f"{name}.after_write" for name in order[: order.index(gated) + 1]]
    return calls


# Paths a seam scenario writes to, and what a conforming sandbox does with each.
_ALLOWED = ("a.txt", "new.txt", "sub/b.txt")
# "private" is a deny pattern naming a folder: it refuses every path under it; "hidden"
# is a symbolic link to the denied folder "secret", refused like the folder.
_DENY = ["secret/*", "private"]
_FILES = {"a.txt": "old\n", "blocker": "x", "secret/key.txt": "k\n"}
_SYMLINKS = {"hidden": {"to": "secret"}}
_REFUSED = ("secret/key.txt", "../escape.txt", "private/notes.txt", "hidden/key.txt")
_FAILING = "blocker/x.txt"  # "blocker" is a file, so this write fails after before_write
_GHOST = "ghost.txt"  # never written: deleting it is a failed mutation
_CONTENTS = st.sampled_from(["", "v2\n", "x = 1  \n", "old\nold\n"])


@st.composite
def _seam_steps(
    draw: st.DrawFn, order: list[str]
) -> tuple[list[dict[str, Any]], list[str] | None, list[str]]:
    """Tool steps over a small sandbox, the hook calls a conforming seam makes (None when
    they are the implementation's choice), and the steps that must report a failure."""
    files = dict(_FILES)
    steps: list[dict[str, Any]] = []
    calls: list[str] | None = []
    failing: list[str] = []
    both = [f"{n}.before_write" for n in order] + [f"{n}.after_write" for n in order]
    for index in range(1, draw(st.integers(1, 3)) + 1):
        ident = f"t{index}"
        kind = draw(st.sampled_from(["write", "write", "edit", "delete"]))
        if kind == "edit" and files.get("a.txt", "").count("old") == 1:
            # The new text may contain the old one: the edit still took effect.
            new = draw(st.sampled_from(["new", "old, kept"]))
            steps.append({"edit": {"id": ident, "path": "a.txt", "old": "old", "new": new}})
            files["a.txt"] = files["a.txt"].replace("old", new, 1)
            calls = None if calls is None else calls + both
        elif kind == "delete":
            path = draw(st.sampled_from([p for p in _ALLOWED if p in files] + [_GHOST]))
            steps.append({"delete": {"id": ident, "path": path}})
            if path == _GHOST:
                # Whether before_write comes first is the tool's own business
                # (woc-seam-failed-delete-skips-after-write): the calls are not pinned.
                calls = None
                failing.append(ident)
            else:
                del files[path]
                calls = None if calls is None else calls + both
        else:
            path = draw(st.sampled_from([*_ALLOWED, *_REFUSED, _FAILING]))
            content = draw(_CONTENTS)
            steps.append({"write": {"id": ident, "path": path, "content": content}})
            if path in _ALLOWED:
                files[path] = content
                calls = None if calls is None else calls + both
            elif path == _FAILING and calls is not None:
                calls += [f"{n}.before_write" for n in order]
    return steps, calls, failing


@st.composite
def woc_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """One scenario document (without ``id``), valid against the scenario schema.

    Three shapes: direct hook calls (optionally one cancelled mid-chain), calls under a
    per-hook time limit with a hanging observer, and the write tools over a sandbox.
    """
    observers = draw(_observers(0))
    _name(observers, [0])
    leaves = flatten(observers)
    shape = draw(st.sampled_from(["calls"] * 5 + ["seam"] * 4 + ["slow"]))
    # The limit bounds each leaf observer, nested ones included (WOC-SLOW), so the
    # hanging observer may sit at any depth.
    scripted = [leaf for leaf in leaves if "builtin" not in leaf]
    if shape == "slow" and not scripted:
        shape = "calls"
    if shape == "seam":
        steps, calls, failing = draw(_seam_steps([leaf["name"] for leaf in leaves]))
        rules = [
            "WOC-SEAM-DENIED",
            "WOC-SEAM-PRE",
            "WOC-SEAM-POST",
            "WOC-SEAM-FAILED-WRITE",
            "WOC-SEAM-NO-ERROR",
        ]
        return _document(
            {
                "observers": observers,
                "files": dict(_FILES),
                "symlinks": dict(_SYMLINKS),
                "deny": list(_DENY),
            },
            steps,
            calls,
            rules,
            requires=["write-tools"],
            tools={ident: {"ok": False} for ident in failing},
        )
    given: dict[str, Any] = {"observers": observers}
    hooks = draw(st.lists(st.sampled_from(["before_write", "after_write"]), min_size=1, max_size=3))
    when: list[dict[str, Any]] = [
        {"call": {"id": f"c{i}", "hook": hook, "path": "x.py"}}
        for i, hook in enumerate(hooks, start=1)
    ]
    if shape == "slow":
        # One observer hangs in every hook; the chain's limit must cut it off each time.
        # Half the time, when there is one, the sleeper sits in a nested chain: the case
        # where timing the nested chain as a whole would cut off its other observers.
        nested = [leaf for e in observers if "chain" in e for leaf in flatten(e["chain"])]
        nested = [leaf for leaf in nested if "builtin" not in leaf]
        in_nested = bool(nested) and draw(st.booleans())
        sleeper = draw(st.sampled_from(nested if in_nested else scripted))
        sleepers = [sleeper]
        # Sometimes a second one, and then a bound on the call: two hung hooks hold it for
        # about two limits, 2 s, so it must return within 3.5 s (WOC-SLOW-BOUNDED), far
        # from the 4 s of a chain that cuts hooks off only at twice the limit.
        others = [leaf for leaf in scripted if leaf is not sleeper]
        if others:
            second: bool = draw(st.booleans())
            if second:
                sleepers.append(draw(st.sampled_from(others)))
        for leaf in sleepers:
            leaf["before_write"], leaf["after_write"] = {"hang": True}, {"hang": True}
        given["hook_time_limit"] = 1.0
        when = when[:1]  # each hanging call costs the whole limit: one is enough
        rules = ["WOC-SLOW"]
        if len(sleepers) == 2:
            when[0]["call"]["within"] = 3.5
            rules.append("WOC-SLOW-BOUNDED")
        return _document(
            given,
            when,
            expected_calls(given, when),
            rules,
            requires=["hook-time-limit"],
            level="SHOULD",
        )
    cancel_one: bool = draw(st.booleans())
    if leaves and cancel_one:
        victim = draw(st.sampled_from(leaves))
        # Earlier after_write calls behave as scripted; only the cancelled one blocks.
        earlier = sum(1 for s in when if s["call"]["hook"] == "after_write")
        script = [behaviour_for(victim, "after_write", i) for i in range(earlier)]
        victim["after_write"] = [*script, {"gate": "g"}]
        when += [
            {"start": {"id": "cx", "hook": "after_write", "path": "x.py"}},
            {"wait_entered": {"observer": victim["name"], "hook": "after_write"}},
            {"cancel": "cx"},
            {"join": "cx"},
        ]
    rules = ["WOC-ORDER-BEFORE", "WOC-ORDER-AFTER", "WOC-JOIN", "WOC-FAIL-CONTAINED"]
    if any("chain" in e for e in observers):
        rules.append("WOC-NESTED")
    requires = None
    if any("start" in s for s in when):
        rules.append("WOC-CANCEL")
        # Sometimes under a per-hook limit far longer than the scenario needs: the caller's
        # cancel is still no timeout of the hook it interrupts (it propagates at once).
        if draw(st.booleans()):
            given["hook_time_limit"] = 3.0
            requires = ["hook-time-limit"]
    return _document(given, when, expected_calls(given, when), rules, requires=requires)


def _document(
    given: dict[str, Any],
    when: list[dict[str, Any]],
    calls: list[str] | None,
    rules: list[str],
    *,
    requires: list[str] | None = None,
    level: str = "MUST",
    tools: dict[str, dict[str, bool]] | None = None,
) -> dict[str, Any]:
    if any("chain" in e for e in given["observers"]) and "WOC-NESTED" not in rules:
        rules = [*rules, "WOC-NESTED"]
    document: dict[str, Any] = {
        "title": "Generated: a random chain judged by the oracle",
        "contract": "write-observer-chain",
        "rules": rules,
        "level": level,
        "tags": ["generated"],
    }
    if requires:
        document["requires"] = requires
    document.update(
        description="Generated by seamspec fuzz and shrunk by hypothesis. The oracle checks every "
        "universal rule; `then.calls` pins the hook order a conforming chain shows.",
        given=given,
        when=when,
        then={
            **({"calls": calls} if calls is not None else {}),
            **({"tools": tools} if tools else {}),
        },
    )
    return document


#: The name the registry looks for (``seamspec fuzz``).
scenarios = woc_scenarios
