"""Seven plausible broken variants of ``base2``: each has exactly one bug.

Outsider batch 2, written before any of them was run against the suite (the original
``variants.py`` had sha256 3b8fe8d2335609a6070b6ba7f98d5ffc6729e9823b5119609f8193ee7301a4cb).
Kept as written: only imports and typing changed, the module-level adapters became the
catalogue at the end, and one label changed after triage (see ``RELABELLED``).

Against the suite of its time three survived (``edit_replaces_every_match``,
``hooks_get_lexical_path``, ``notes_on_the_instance``) and one was caught only by a
scenario that did not cite its rule (``abandon_timed_out_hook``); the contract page's
"Outsider mutants" section says what catches each now.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base2 import (
    FreshImplementation,
    ObserverChain,
    ToolResult,
    WriteTools,
    build,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# 1. WOC-SEQUENTIAL -------------------------------------------------------------------------


class AbandonOnTimeoutChain(ObserverChain):
    """Times a hook with asyncio.wait(timeout=...) on a task of its own."""

    async def _leaf(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        if limit is None:
            return await super()._leaf(observer, hook, path, limit)
        task = asyncio.ensure_future(getattr(observer, hook)(path))
        try:
            done, _pending = await asyncio.wait({task}, timeout=limit)
        except asyncio.CancelledError:
            # the caller went away: take the hook down with us, then propagate
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise
        if not done:
            task.cancel()  # BUG: not awaited; the next observer starts while this one unwinds
            self._failed(observer, f"{hook} exceeded the {limit} s time limit")
            return None
        try:
            return task.result()
        except Exception as error:
            self._failed(observer, f"{hook} raised {error!r}")
            return None


# 2. WOC-SEAM-FAILED-WRITE ------------------------------------------------------------------


class ReplaceEveryMatchTools(WriteTools):
    def _replace(self, text: str, old: str, new: str) -> str:
        if not old or old not in text:
            raise ValueError("old text not found")
        return text.replace(old, new)  # BUG: no uniqueness check, replaces every match


# 3. WOC-SEAM-PRE ---------------------------------------------------------------------------


class LexicalHookPathTools(WriteTools):
    def _hook_path(self, rel: str, resolved: Path) -> Path:
        # BUG: the check used the resolved path, the hooks get the requested one (tidied)
        return Path(os.path.normpath(self._candidate(rel)))


# 4. WOC-SEAM-DENIED ------------------------------------------------------------------------


class ResolveOnlyExistingTools(WriteTools):
    def _resolve(self, rel: str) -> Path:
        candidate = self._candidate(rel)
        if os.path.exists(candidate):
            return Path(os.path.realpath(candidate))
        # BUG: "nothing to resolve yet" - a new path is only normalised lexically
        return Path(os.path.normpath(candidate))


# 5. WOC-SLOW-BOUNDED -----------------------------------------------------------------------


class CappedAfterWriteTools(WriteTools):
    async def _after(self, path: Path) -> str | None:
        limit = getattr(self.observer, "hook_time_limit", None)
        # BUG: the per-hook limit is used as one budget for the whole chain call
        with anyio.move_on_after(limit):
            return await super()._after(path)
        return None


# 6. WOC-SEAM-POST --------------------------------------------------------------------------


class AfterWriteInsideOpenTools(WriteTools):
    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target = self.check(path)
        except Exception as refusal:
            return ToolResult(False, str(refusal))
        hook_path = self._hook_path(path, target)
        data = content.encode("utf-8")
        await self._before(hook_path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
                message = f"wrote {len(data)} bytes to {path}"
                # BUG: still inside the with block: the bytes sit in the buffer
                annotation = await self._after(hook_path)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        return ToolResult(True, message, annotation)


# 7. WOC-JOIN -------------------------------------------------------------------------------


class InstanceNotesChain(ObserverChain):
    async def _run(self, hook: str, path: Path) -> list[str]:
        limit = self._effective_limit()
        self._notes: list[str] = []  # BUG: per-call state on the shared chain object
        for observer in self.observers:
            note = await self._one(observer, hook, path, limit)
            if isinstance(note, str) and note != "":
                self._notes.append(note)
        return list(self._notes)


# --- the catalogue of variants ---------------------------------------------------------------


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


_SPECS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "out-woc-abandon-timed-out-hook",
        "WOC-SEQUENTIAL",
        "On a per-hook timeout it cancels the hung hook's task without waiting for it to "
        "unwind, so the next observer starts while the cut-off one is still running.",
        {"chain_class": AbandonOnTimeoutChain},
    ),
    (
        "out-woc-edit-replaces-every-match",
        "WOC-SEAM-EDIT-UNIQUE",
        "The edit tool checks only that the old text occurs, then replaces every "
        "occurrence, so an ambiguous edit (old text found twice) is reported as a success.",
        {"tools_class": ReplaceEveryMatchTools},
    ),
    (
        "out-woc-hooks-get-lexical-path",
        "WOC-SEAM-PRE",
        "The tools check the resolved path but give the hooks the requested path, tidied "
        "lexically, so a write through a link reaches the hooks under the link's name.",
        {"tools_class": LexicalHookPathTools},
    ),
    (
        "out-woc-new-path-not-resolved",
        "WOC-SEAM-DENIED",
        "Resolves links only for paths that exist; a new file is checked lexically, so a new "
        "file under a link out of the root or into a denied folder is allowed.",
        {"tools_class": ResolveOnlyExistingTools},
    ),
    (
        "out-woc-tool-caps-after-write",
        "WOC-SLOW-BOUNDED",
        "The write tools bound the whole after_write call by the chain's per-hook limit, so "
        "a hung observer uses up the time of the healthy ones after it.",
        {"tools_class": CappedAfterWriteTools},
    ),
    (
        "out-woc-after-write-before-close",
        "WOC-SEAM-POST",
        "The write tool calls after_write inside the open file's with-block, before the "
        "buffered bytes are flushed, so observers see a truncated file.",
        {"tools_class": AfterWriteInsideOpenTools},
    ),
    (
        "out-woc-notes-on-the-instance",
        "WOC-JOIN",
        "The chain collects a call's annotations in an attribute of the chain, reset at the "
        "start of each call, so two overlapping after_write calls lose or swap annotations.",
        {"chain_class": InstanceNotesChain},
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
RELABELLED: dict[str, tuple[str, str]] = {
    "out-woc-edit-replaces-every-match": (
        "WOC-SEAM-FAILED-WRITE",
        "upstream says nothing of what an edit does when its old text occurs twice, and "
        "replacing every occurrence and reporting it is a report that agrees with the file; "
        "refusing an ambiguous edit is seamspec's decision, WOC-SEAM-EDIT-UNIQUE (strict)",
    ),
}


def implementation(name: str) -> FreshImplementation:
    """The outsider's implementation with the named variant's bug."""
    classes = next(c for n, _, _, c in _SPECS if n == name)
    return FreshImplementation(**classes)
