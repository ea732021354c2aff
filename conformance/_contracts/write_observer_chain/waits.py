"""How long a write-observer-chain scenario deliberately waits: the limits it runs out.

The kit starts the scenarios that wait longest first (``seamspec run`` runs several side
by side), so a suite of short scenarios and a few time-limit ones costs about its longest
one. This is an estimate for that ordering, never a verdict: a correct chain spends about
one limit for each hook that hangs under it (docs/scenarios.md, "Time limits").
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.model import (
    HOOKS,
    TOOL_VERBS,
    blocks,
    step_verb,
)

__all__ = ["expected_wait"]

#: A builtin's own limit on its program when the scenario sets none (the reference's).
_BUILTIN_LIMIT = 10.0


def expected_wait(given: dict[str, Any], when: list[dict[str, Any]]) -> float:
    """Seconds a correct chain waits on limits: per hook call, each hung leaf's limit.

    A leaf hangs in a hook when its behaviour is ``hang``, or a gate no step releases,
    or it is a builtin whose program hangs (``tidy-hang``, in ``after_write``). A call
    the scenario cancels waits for no limit.
    """
    released = {step["release"] for step in when if step_verb(step) == "release"}
    cancelled = {step["cancel"] for step in when if step_verb(step) == "cancel"}
    leaves = list(_leaves(given["observers"], given.get("hook_time_limit")))
    seen = dict.fromkeys(HOOKS, 0)
    total = 0.0
    for step in when:
        verb = step_verb(step)
        body = step[verb]
        if verb in ("call", "start"):
            hooks: tuple[str, ...] = (body["hook"],)
        elif verb in TOOL_VERBS:
            hooks = HOOKS
        else:
            continue
        for hook in hooks:
            if body.get("id") not in cancelled:
                total += sum(_hung(e, hook, seen[hook], limit, released) for e, limit in leaves)
            seen[hook] += 1
    return total


def _leaves(
    observers: list[dict[str, Any]], limit: float | None
) -> Iterator[tuple[dict[str, Any], float | None]]:
    """Each leaf observer with the per-hook limit it runs under (its chain's, or inherited)."""
    for entry in observers:
        if "chain" in entry:
            yield from _leaves(entry["chain"], entry.get("hook_time_limit", limit))
        else:
            yield entry, limit


def _hung(
    entry: dict[str, Any], hook: str, index: int, limit: float | None, released: set[str]
) -> float:
    chain_limit = math.inf if limit is None else float(limit)
    if "builtin" in entry:
        chain_limit = min(chain_limit, float(entry.get("time_limit", _BUILTIN_LIMIT)))
    hangs = blocks(entry, hook, index, released)
    return chain_limit if hangs and math.isfinite(chain_limit) else 0.0
