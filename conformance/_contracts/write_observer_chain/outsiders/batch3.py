"""Six broken variants of ``base2``, re-created from outsider batch 3's survivor records.

The originals are lost. Outsider batch 3 wrote seven variants of their own write-observer
chain from the docs alone and hashed them before any run; against the suite of 02:22 UTC
on 2026-12-02 one was killed and six survived (``docs/quality.md``, "Fresh batch 3").
Their files were lost with the old machine; what remains of each survivor is a record: a
name, the rule its author named and one line saying what the bug was. The variants below
were re-created from those records by the kit's authors, who know the suite, on top of
batch 2's base (``base2``: every bug here sits in one of its methods), taking the most
plausible reading of each one-liner. So they are **not first-try evidence**: they show
that the suite now catches these bugs as the kit's authors read them, not that it would
have caught the outsider's own code, and no first-try count may be drawn from them.

Each re-creation was run against the suite as it stood (102 scenarios) before anything
was added for it, and the reading kept is one that survived: for ``detached_timeout`` the
first reading tried (a hook left running on a shielded task) was already caught, so the
one kept is a chain that waits only a short grace for a cut-off hook to unwind. What each
one-liner was read as, and whether it names a real bug under upstream's contract, is in
``docs/contracts/write-observer-chain.md`` ("Outsider mutants", batch 3); labels changed
in triage would be in ``RELABELLED`` (none was).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base2 import (
    _INHERITED_LIMIT,
    FreshImplementation,
    ObserverChain,
    Refused,
    ToolResult,
    WriteTools,
    build,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# 1. nested_limit_min: WOC-SLOW-BOUNDED --------------------------------------------------


class NestedLimitMinChain(ObserverChain):
    """A nested chain's own limit may only tighten the one it inherits, never loosen it."""

    def _effective_limit(self) -> float | None:
        inherited = _INHERITED_LIMIT.get()
        own = self.hook_time_limit
        if own is None or inherited is None:
            return own if own is not None else inherited
        return min(own, inherited)  # BUG: a longer limit of its own is capped at the outer one


# 2. detached_timeout: WOC-SEQUENTIAL -----------------------------------------------------


class DetachedTimeoutChain(ObserverChain):
    """Times a hook on a task of its own; on a timeout, cancels it and gives it a moment."""

    #: How long a cut-off hook gets to unwind before the chain stops waiting for it.
    GRACE = 0.05

    async def _leaf(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        if limit is None:
            return await super()._leaf(observer, hook, path, limit)
        task = asyncio.ensure_future(getattr(observer, hook)(path))
        try:
            done, _pending = await asyncio.wait({task}, timeout=limit)
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait({task})
            raise
        if not done:
            task.cancel()
            # BUG: a hook slower than GRACE to unwind is detached; the next observer
            # starts while it is still running
            await asyncio.wait({task}, timeout=self.GRACE)
            self._failed(observer, f"{hook} exceeded the {limit} s time limit")
            return None
        try:
            return task.result()
        except Exception as error:
            self._failed(observer, f"{hook} raised {error!r}")
            return None


# 3. tool_shields_cancel: WOC-CANCEL ------------------------------------------------------


class ShieldedTools(WriteTools):
    """Finishes a tool call it has started even when its caller is cancelled."""

    async def write(self, path: str, content: str) -> ToolResult:
        with anyio.CancelScope(shield=True):  # BUG: the caller's cancellation waits for all
            result = await super().write(path, content)
        return result

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        with anyio.CancelScope(shield=True):
            result = await super().edit(path, old, new)
        return result

    async def delete(self, path: str) -> ToolResult:
        with anyio.CancelScope(shield=True):
            result = await super().delete(path)
        return result


# 4. lexical_dotdot: WOC-SEAM-DENIED ------------------------------------------------------


class LexicalDotDotTools(WriteTools):
    def _resolve(self, rel: str) -> Path:
        # BUG: tidied first, so `link/..` cancels the link's name instead of going to the
        # parent of where the link leads
        return Path(os.path.realpath(os.path.normpath(self._candidate(rel))))


# 5. delete_removes_link: WOC-SEAM-FAILED-WRITE ------------------------------------------


class DeleteRemovesLinkTools(WriteTools):
    async def delete(self, path: str) -> ToolResult:
        try:
            target = self.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        hook_path = self._hook_path(path, target)
        await self._before(hook_path)
        try:
            os.unlink(self._candidate(path))  # BUG: removes the link, not where it leads
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        return ToolResult(True, f"deleted {path}", await self._after(hook_path))


# 6. tool_watchdog: WOC-SEAM-NO-ERROR -----------------------------------------------------


class WatchdogTools(WriteTools):
    """Gives a whole tool call one limit per hook point, as a watchdog against a hung chain."""

    def _watchdog(self) -> float:
        limit = getattr(self.observer, "hook_time_limit", None)
        return 2 * limit if limit is not None else float("inf")

    async def _guarded(self, verb: str, call: Callable[[], Any]) -> ToolResult:
        with anyio.move_on_after(self._watchdog()):
            result: ToolResult = await call()
            return result
        # BUG: the write may be on disk already; a slow chain turns it into a tool error
        return ToolResult(False, f"{verb} failed: timed out after {self._watchdog()} s")

    async def write(self, path: str, content: str) -> ToolResult:
        return await self._guarded("write", lambda: super(WatchdogTools, self).write(path, content))

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return await self._guarded("edit", lambda: super(WatchdogTools, self).edit(path, old, new))

    async def delete(self, path: str) -> ToolResult:
        return await self._guarded("delete", lambda: super(WatchdogTools, self).delete(path))


# --- the catalogue of variants ---------------------------------------------------------------


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


_SPECS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "out-woc-nested-limit-min",
        "WOC-SLOW-BOUNDED",
        "A nested chain runs its observers under the shorter of its own limit and the outer "
        "one, so an observer that returns within the nested chain's longer limit is cut off.",
        {"chain_class": NestedLimitMinChain},
    ),
    (
        "out-woc-detached-timeout",
        "WOC-SEQUENTIAL",
        "On a per-hook timeout it cancels the hook and waits for it to unwind only for a "
        "short grace period, so a hook slow to unwind is left running while the next "
        "observer starts.",
        {"chain_class": DetachedTimeoutChain},
    ),
    (
        "out-woc-tool-shields-cancel",
        "WOC-CANCEL",
        "The write tools shield the whole call (mutation and both hooks) from the caller's "
        "cancellation, so a cancelled tool call still runs every later observer.",
        {"tools_class": ShieldedTools},
    ),
    (
        "out-woc-lexical-dotdot",
        "WOC-SEAM-DENIED",
        "The sandbox check tidies the path lexically before resolving links, so `link/..` "
        "cancels the link's name instead of leading to the parent of its target.",
        {"tools_class": LexicalDotDotTools},
    ),
    (
        "out-woc-delete-removes-link",
        "WOC-SEAM-FAILED-WRITE",
        "Deleting through a link removes the link itself and reports success, while the "
        "file the hooks were told about, where the link leads, stays.",
        {"tools_class": DeleteRemovesLinkTools},
    ),
    (
        "out-woc-tool-watchdog",
        "WOC-SEAM-NO-ERROR",
        "The write tools put a watchdog of twice the per-hook limit on the whole call and "
        "report a timeout error when it fires, even though the file has changed.",
        {"tools_class": WatchdogTools},
    ),
]


def _build(backend: str, *, name: str, classes: dict[str, Any]) -> PythonAdapter:
    return build(backend, name=name, **classes)


MUTANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(
        name, rule, statement, functools.partial(_build, name=name, classes=classes)
    )
    for name, rule, statement, classes in _SPECS
}


#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {}


def implementation(name: str) -> FreshImplementation:
    """Batch 2's outsider implementation with the named re-created variant's bug."""
    classes = next(c for n, _, _, c in _SPECS if n == name)
    return FreshImplementation(**classes)
