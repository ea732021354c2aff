"""Seven broken variants of ``base10``, each with exactly one bug (outsider batch 10, woc10).

Written by batch 10's outsider from the docs alone and hashed before any run (the original
``b10woc_variants.py`` had sha256
f9154f7e78f2e89e1173f3b24bf9fdc017228a40bf6f32e4f71d8ed1284a207d). Kept as written: only
imports and typing changed, and the ``VARIANTS`` list became the catalogue at the end (same
names, rules and statements; each variant's adapter is built by ``make_adapter`` as before,
now with a backend); labels changed after triage are in ``RELABELLED``, variants found not
to be bugs in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main f7fc6c4: three of seven killed properly (``delete-ignores-deny``,
``delete-drops-annotation``, ``edit-verifies-after-observers``). Three survived:
``limit-budget-carries-over`` (no scenario had fast observers before a hung one with a
bound tight enough to see banked slack), ``edit-counts-matching-lines`` (no ambiguous edit
had both occurrences on one line) and ``edit-rollback-on-cancel`` (no cancelled tool call
was an edit). One, ``stale-annotation-on-failure``, was failed only by
woc-fail-warn-transient-failure-heals, which cites WOC-FAIL-WARN while the oracle named
WOC-FAIL-CONTAINED. The contract page's "Outsider mutants" section (batch 10) says what
each one is, whether upstream demands the behaviour, and what catches it now.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base10 import (
    Chain,
    HookTimedOut,
    Implementation,
    Refused,
    ToolResult,
    Tools,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# ---------------------------------------------------------------------------------------
# 1. WOC-SLOW-BOUNDED: unused time of fast observers is banked for the next one.


class BudgetCarryChain(Chain):
    """Each observer gets L plus whatever the previous observers left unused."""

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        notes: list[str] = []
        bank = 0.0
        for observer in self.observers:
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, limit))
                continue
            allowance = None if limit is None else limit + bank
            began = anyio.current_time()
            try:
                value = await self._call_one(observer, hook, path, allowance)
            except Exception as error:
                self._failed(observer, error)
                value = None
            if allowance is not None:
                bank = max(0.0, allowance - (anyio.current_time() - began))
            if hook == "after_write" and self._keep(value):
                notes.append(value)
        return notes


# ---------------------------------------------------------------------------------------
# 2. WOC-FAIL-CONTAINED: a crashed observer's last good annotation for the file is reused.


class StaleAnnotationChain(Chain):
    """Shows an observer's last annotation for a path when it crashes ("keep the last
    known diagnostics while the checker is down")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last: dict[tuple[int, str], str] = {}

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, limit))
                continue
            key = (id(observer), str(path))
            try:
                value = await self._call_one(observer, hook, path, limit)
            except HookTimedOut as error:
                self._failed(observer, error)
                continue
            except Exception as error:
                self._failed(observer, error)
                if hook == "after_write" and key in self._last:
                    notes.append(self._last[key])
                continue
            if hook == "after_write" and self._keep(value):
                self._last[key] = value
                notes.append(value)
        return notes


# ---------------------------------------------------------------------------------------
# 3. WOC-SEAM-EDIT-UNIQUE: ambiguity counted in matching lines, not occurrences.


class LineCountTools(Tools):
    """Counts the lines that contain a one-line old text (to report line numbers)."""

    def _occurrences(self, text: str, old: str) -> int:
        if "\n" in old:
            return text.count(old)
        return sum(1 for line in text.splitlines(keepends=True) if old in line)


# ---------------------------------------------------------------------------------------
# 4. WOC-SEAM-DENIED: the delete tool checks containment but not the deny list.


class DeleteIgnoresDenyTools(Tools):
    def _resolve_for_delete(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads out of the workspace") from None
        if not inside.parts:
            raise Refused(f"refused: {rel} is the workspace itself")
        return resolved  # deny patterns guard writes; a delete writes nothing

    async def delete(self, path: str) -> ToolResult:
        try:
            resolved = self._resolve_for_delete(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        await self._before(resolved)
        try:
            os.unlink(resolved)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        return await self._succeeded(resolved, f"deleted {path}")


# ---------------------------------------------------------------------------------------
# 5. WOC-SEAM-POST: the delete tool runs after_write but drops its annotation.


class DeleteDropsAnnotationTools(Tools):
    async def delete(self, path: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        await self._before(resolved)
        try:
            os.unlink(resolved)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        await self._after(resolved)  # nothing to format or lint in a deleted file
        return ToolResult(True, f"deleted {path}")


# ---------------------------------------------------------------------------------------
# 6. WOC-SEAM-NO-ERROR: the edit's "did it land?" check runs after the observers.


class EditVerifiesLateTools(Tools):
    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        result = await super().edit(path, old, new)
        if not result.ok:
            return result
        try:
            current = self._resolve(path).read_bytes().decode("utf-8", errors="replace")
        except (OSError, Refused):
            current = ""
        if new not in current:
            return ToolResult(False, f"edit failed: the new text is not in {path}")
        return result


# ---------------------------------------------------------------------------------------
# 7. WOC-CANCEL: a transactional edit rolls back on any interruption and reports it.


class RollbackEditTools(Tools):
    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
            original = resolved.read_bytes()
        except (Refused, OSError):
            return await super().edit(path, old, new)
        try:
            return await super().edit(path, old, new)
        except BaseException:  # interrupted half-way: put the file back as it was
            try:
                with open(resolved, "wb") as handle:
                    handle.write(original)
            except OSError:
                pass
            return ToolResult(False, f"edit of {path} interrupted; the file was restored")


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc10-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


#: name, rule, statement, chain class, tools class (as the outsider wrote them)
_SPECS: Sequence[tuple[str, str, str, type, type]] = [
    (
        "out-woc10-limit-budget-carries-over",
        "WOC-SLOW-BOUNDED",
        "Under a per-hook limit L each observer is given L plus the time earlier observers "
        "left unused, so a hung observer after fast ones is cut off only after about 2L, 3L, ...",
        BudgetCarryChain,
        Tools,
    ),
    (
        "out-woc10-stale-annotation-on-failure",
        "WOC-FAIL-CONTAINED",
        "When an observer's after_write raises, the chain re-uses that observer's last good "
        "annotation for the same path, so a failing observer still adds an annotation.",
        StaleAnnotationChain,
        Tools,
    ),
    (
        "out-woc10-edit-counts-matching-lines",
        "WOC-SEAM-EDIT-UNIQUE",
        "The edit tool counts the lines containing a one-line old text instead of its "
        "occurrences, so two occurrences on one line are taken as unique and the first is replaced.",
        Chain,
        LineCountTools,
    ),
    (
        "out-woc10-delete-ignores-deny",
        "WOC-SEAM-DENIED",
        "The delete tool checks containment in the root but not the deny patterns, so a "
        "delete in a denied place (say .git/config) runs both hooks and removes the file.",
        Chain,
        DeleteIgnoresDenyTools,
    ),
    (
        "out-woc10-delete-drops-annotation",
        "WOC-SEAM-POST",
        "The delete tool calls after_write but throws its annotation away, so the result "
        "text of a successful delete is the message alone.",
        Chain,
        DeleteDropsAnnotationTools,
    ),
    (
        "out-woc10-edit-verifies-after-observers",
        "WOC-SEAM-NO-ERROR",
        "The edit tool checks that its new text is in the file only after after_write, so a "
        "formatter that rewrites the inserted text turns a successful edit into an error.",
        Chain,
        EditVerifiesLateTools,
    ),
    (
        "out-woc10-edit-rollback-on-cancel",
        "WOC-CANCEL",
        "The edit tool catches BaseException around its hooks and mutation, restores the "
        "original bytes and returns a failure result, so a cancelled edit swallows the cancellation.",
        Chain,
        RollbackEditTools,
    ),
]


def _build(backend: str, *, name: str, chain_class: type, tools_class: type) -> PythonAdapter:
    return make_adapter(
        name=name, chain_class=chain_class, tools_class=tools_class, backend=backend
    )


#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(
        name,
        rule,
        statement,
        functools.partial(_build, name=name, chain_class=chain, tools_class=tools),
    )
    for name, rule, statement, chain, tools in _SPECS
}

#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {}

#: Variants triage found not to be bugs, with the reason (kept here, never registered).
REJECTED: dict[str, str] = {}

#: Variants kept but not registered as mutants yet (no scenario catches them), with why.
PENDING: dict[str, str] = {}

#: The variants registered as mutants.
MUTANTS: dict[str, OutsiderMutant] = {
    name: v for name, v in VARIANTS.items() if name not in REJECTED and name not in PENDING
}


def implementation(name: str) -> Implementation:
    """Batch 10's outsider implementation with the named variant's bug."""
    _, _, _, chain, tools = next(s for s in _SPECS if s[0] == name)
    impl = Implementation()
    impl.chain_class = chain
    impl.tools_class = tools
    return impl


for _name, _, _, _chain, _tools in _SPECS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(
        _build, "asyncio", name=_name, chain_class=_chain, tools_class=_tools
    )
del _name, _chain, _tools
