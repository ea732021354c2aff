"""How long a shell-output scenario deliberately waits: the command time limits it runs out.

An estimate for the kit's ordering (the scenarios that wait longest start first), never
a verdict: a correct runner ends a hanging command at its ``timeout``.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.shell_output.model import PROCESS_VERBS, step_verb

__all__ = ["expected_wait"]


def expected_wait(given: dict[str, Any], when: list[dict[str, Any]]) -> float:
    """Seconds a correct runner waits on time limits: each hanging command's ``timeout``.

    A command hangs when its script has a ``hang`` step or starts a grandchild that hangs
    (it holds the pipes, so a runner that waits for end of file waits for the limit) or
    one that leaves the process group (``detached``: the linter has its gate released only
    after the call, so it holds the pipes until the limit too, even where the child itself
    exits at once); one the scenario cancels waits for no limit.
    """
    cancelled = set()
    for step in when:
        if step_verb(step) == "cancel":
            target = step["cancel"]
            cancelled.add(target["id"] if isinstance(target, dict) else target)
    total = 0.0
    for step in when:
        verb = step_verb(step)
        if verb not in PROCESS_VERBS:
            continue
        body = step[verb]
        timeout = body.get("timeout", given.get("timeout"))
        hangs = any(
            isinstance(s, dict) and (s.get("hang") or s.get("grandchild") in ("hang", "detached"))
            for s in body.get("script", [])
        )
        if hangs and timeout is not None and body.get("id") not in cancelled:
            total += float(timeout)
    return total
