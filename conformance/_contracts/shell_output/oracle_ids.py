"""The oracle's invocation-ID rules, judged relative to each other (SOO-IDS, SOO-DENIED-NO-ID).

No counter value is ever expected: upstream's counter is process-wide and never reset,
so an implementation serving many scenarios from one process gives any numbers. What
is judged are the differences between the IDs the scenario saw: unique, increasing in
creation order, and dense, since only observed invocations consume one. Nothing else
runs in the implementation while the kit performs a scenario, so two observed calls in
a row must get IDs one apart, unless an observed call between them failed before the
kit could see its ID (upstream's backends differ on whether a spawn failure takes one).
"""

from __future__ import annotations

from itertools import pairwise

from seamspec.conformance._contracts.shell_output.history import Call, History

__all__ = ["check_ids"]

Violation = tuple[str, str]


def check_ids(history: History) -> list[Violation]:
    out = list(history.id_problems)
    ordered = [c for c in history.with_ids() if not c.refused]
    ids = [c.invocation for c in ordered]
    if len(set(ids)) != len(ids):
        out.append(("SOO-IDS", f"invocation IDs repeat: {_named(ordered)}"))
    for first in ordered:
        for second in ordered:
            why = history.created_before(first, second)
            if why and (second.invocation or 0) < (first.invocation or 0):
                out.append(
                    (
                        "SOO-IDS",
                        f"{first.ident} {why} before {second.ident} started, yet "
                        f"{second.ident} got the lower ID {second.invocation} "
                        f"({first.ident} got {first.invocation})",
                    )
                )
    for before, after in pairwise(ordered):
        if (after.invocation or 0) > (before.invocation or 0):
            out.extend(_gap(history, before, after))
    for call in history.calls.values():
        if call.reported is not None and call.observer is None:
            out.append(
                ("SOO-IDS", f"{call.ident}: an unobserved invocation took ID {call.reported}")
            )
    for observer in {c.observer for c in history.calls.values() if c.observer is not None}:
        owned = {c.invocation for c in history.users(observer)}
        for invocation in sorted(set(history.seen_by(observer)) - owned):
            out.append(
                (
                    "SOO-IDS",
                    f"{observer} was called for invocation {invocation}, "
                    "which none of the calls it observes took",
                )
            )
    return out


def _gap(history: History, before: Call, after: Call) -> list[Violation]:
    """What may have consumed the IDs between two observed calls with adjacent IDs.

    The calls that could have taken the IDs in between are those whose steps lie between
    the two calls' steps.
    """
    gap = (after.invocation or 0) - (before.invocation or 0)
    lo, hi = sorted((before.step, after.step))
    between = [c for c in history.calls.values() if lo < c.step < hi]
    unseen = [c for c in between if c.observer and not c.refused and c.invocation is None]
    if gap <= 1 + len(unseen):
        return []
    span = (
        f"IDs jump from {before.invocation} ({before.ident}) to {after.invocation} ({after.ident})"
    )
    refused = [c.ident for c in between if c.refused]
    unobserved = [c.ident for c in between if c.observer is None]
    out: list[Violation] = []
    if refused:
        out.append(("SOO-DENIED-NO-ID", f"{span}: refused call(s) {refused} consumed an ID"))
    if unobserved:
        out.append(("SOO-IDS", f"{span}: unobserved call(s) {unobserved} consumed an ID"))
    if not refused and not unobserved:
        out.append(("SOO-IDS", f"{span}: an ID went to nothing the scenario observed"))
    return out


def _named(calls: list[Call]) -> str:
    return ", ".join(f"{c.ident}={c.invocation}" for c in calls)
