"""Seven broken variants of ``base5``, each with exactly one bug (outsider batch 5, woc5).

Written by batch 5's outsider from the docs alone and hashed before any run (the original
``b5woc_variants.py`` had sha256
c4a50096e45113daa0098fd7e96f81ed2da3025e15b6f7d561a20f3ee2145bef). Kept as written: only
imports and typing changed, and the ``VARIANTS`` list became the catalogue at the end (same
names, rules and statements; its factories stay, building each variant's adapter);
labels changed after triage are in ``RELABELLED``, variants found not to be bugs in
``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main b859591 (114 scenarios): one killed properly
(``warn-rearmed-after-heal``: WOC-FAIL-WARN is a SHOULD rule, caught at SHOULD under
strict by ``woc-fail-warn-transient-failure-heals``, which the meta-test accepts for that
one rule), six survived under both profiles (``edit-unique-by-find-rfind``,
``edit-drops-bom``, ``mkdir-before-sandbox-check``, ``tool-swallows-before-write-cancel``,
``grandchild-chain-loses-limit``, ``append-trims-trailing-newlines``). The contract
page's "Outsider mutants" section (batch 5) says what each one is, whether upstream
demands the behaviour, and what catches it now.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base5 import (
    BaseImplementation,
    FileTools,
    ObserverChain,
    Refused,
    ToolResult,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --------------------------------------------------------------------------------------
# 1. WOC-FAIL-WARN: the "warned" flag is re-armed once the failing hook works again
# --------------------------------------------------------------------------------------


class RearmingChain(ObserverChain):
    """Warns once per failure *episode*: when the hook that failed works again, the
    observer is considered healed and its next failure is news, so it warns again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._failed_hook: dict[int, str] = {}

    async def _call_one(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        try:
            if limit is None:
                value = await getattr(observer, hook)(path)
            else:
                value = None
                with anyio.move_on_after(limit) as scope:
                    value = await getattr(observer, hook)(path)
                if scope.cancelled_caught:
                    self._note_failure(
                        observer, hook, f"{hook} exceeded the time limit of {limit} s"
                    )
                    return None
        except Exception as error:  # cancellation is a BaseException: it passes
            self._note_failure(observer, hook, f"{hook} raised {error!r}")
            return None
        if self._failed_hook.get(id(observer)) == hook:
            # healed: forget the warning so that a new breakage is reported again
            del self._failed_hook[id(observer)]
            self._warned.discard(id(observer))
        return cast("str | None", value)

    def _note_failure(self, observer: Any, hook: str, message: str) -> None:
        self._failed_hook.setdefault(id(observer), hook)
        self._failed(observer, message)


class _WarnRearmed(BaseImplementation):
    chain_class = RearmingChain


def V_out_woc5_warn_rearmed_after_heal() -> Any:
    return make_adapter(_WarnRearmed(), "out-woc5-warn-rearmed-after-heal")


# --------------------------------------------------------------------------------------
# 2. WOC-SEAM-EDIT-UNIQUE: uniqueness tested with find/rfind, which sees overlaps
# --------------------------------------------------------------------------------------


class FindRfindTools(FileTools):
    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target = self.sandbox.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            raw = target.read_bytes()
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult(False, f"edit failed: {path} is not UTF-8 text")
        first = text.find(old) if old else -1
        if first < 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if text.rfind(old) != first:  # cheaper than counting: a second match exists
            return ToolResult(False, f"edit failed: the old text occurs more than once in {path}")
        updated = (text[:first] + new + text[first + len(old) :]).encode("utf-8")
        await self._before(target)
        try:
            with open(target, "wb") as handle:
                handle.write(updated)
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        note = await self._after(target)
        return ToolResult(True, f"edited {path}", note)


class _FindRfind(BaseImplementation):
    tools_class = FindRfindTools


def V_out_woc5_edit_unique_by_find_rfind() -> Any:
    return make_adapter(_FindRfind(), "out-woc5-edit-unique-by-find-rfind")


# --------------------------------------------------------------------------------------
# 3. WOC-SEAM-FAILED-WRITE: edit decodes with utf-8-sig, so a BOM is silently dropped
# --------------------------------------------------------------------------------------


class BomDroppingTools(FileTools):
    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target = self.sandbox.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            raw = target.read_bytes()
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        try:
            # utf-8-sig so that an old text at the very start of a file saved by a
            # Windows editor still matches
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            return ToolResult(False, f"edit failed: {path} is not UTF-8 text")
        count = text.count(old) if old else 0
        if count == 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return ToolResult(
                False, f"edit failed: the old text occurs {count} times in {path}; be more specific"
            )
        updated = text.replace(old, new, 1).encode("utf-8")
        await self._before(target)
        try:
            with open(target, "wb") as handle:
                handle.write(updated)
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        note = await self._after(target)
        return ToolResult(True, f"edited {path}", note)


class _BomDropped(BaseImplementation):
    tools_class = BomDroppingTools


def V_out_woc5_edit_drops_bom() -> Any:
    return make_adapter(_BomDropped(), "out-woc5-edit-drops-bom")


# --------------------------------------------------------------------------------------
# 4. WOC-SEAM-DENIED: write creates the parent folders before the sandbox check
# --------------------------------------------------------------------------------------


class MkdirFirstTools(FileTools):
    async def write(self, path: str, content: str) -> ToolResult:
        # make sure the parent exists first, so that resolving the new file's folder
        # never trips over a folder that is not there yet; a cheap lexical test keeps
        # obvious escapes ("../x", "/etc/x") from creating anything
        lexical = os.path.normpath(path)
        if not os.path.isabs(lexical) and lexical != ".." and not lexical.startswith("../"):
            try:  # noqa: SIM105 (kept as written)
                (self.sandbox.root / lexical).parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                pass
        try:
            target = self.sandbox.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        data = content.encode("utf-8")
        await self._before(target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        note = await self._after(target)
        return ToolResult(True, f"wrote {len(data)} bytes to {path}", note)


class _MkdirFirst(BaseImplementation):
    tools_class = MkdirFirstTools


def V_out_woc5_mkdir_before_sandbox_check() -> Any:
    return make_adapter(_MkdirFirst(), "out-woc5-mkdir-before-sandbox-check")


# --------------------------------------------------------------------------------------
# 5. WOC-CANCEL: the tool swallows everything around before_write (best-effort capture)
# --------------------------------------------------------------------------------------


class BestEffortBeforeTools(FileTools):
    async def _before(self, path: Path) -> None:
        try:  # noqa: SIM105 (kept as written)
            await self.observer.before_write(path)
        except BaseException:  # a checkpoint must never block the user's edit
            pass


class _BestEffortBefore(BaseImplementation):
    tools_class = BestEffortBeforeTools


def V_out_woc5_tool_swallows_before_write_cancel() -> Any:
    return make_adapter(_BestEffortBefore(), "out-woc5-tool-swallows-before-write-cancel")


# --------------------------------------------------------------------------------------
# 6. WOC-SLOW-BOUNDED: a nested chain passes down its own limit, not the effective one
# --------------------------------------------------------------------------------------


class OwnLimitDownChain(ObserverChain):
    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._effective_limit(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, ObserverChain):
                # hand our limit to the sub-chain
                inner = await observer._run(hook, path, self.hook_time_limit)
                if hook == "after_write":
                    joined = observer._join(inner)
                    if joined:
                        notes.append(joined)
                continue
            note = await self._call_one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(note, str) and note != "":
                notes.append(note)
        return notes


class _OwnLimitDown(BaseImplementation):
    chain_class = OwnLimitDownChain


def V_out_woc5_grandchild_chain_loses_limit() -> Any:
    return make_adapter(_OwnLimitDown(), "out-woc5-grandchild-chain-loses-limit")


# --------------------------------------------------------------------------------------
# 7. WOC-SEAM-APPEND: trailing newlines of the annotation are trimmed when appending
# --------------------------------------------------------------------------------------


class TrimmedResult(ToolResult):
    @property
    def text(self) -> str:
        if self.annotation is None or self.annotation == "":
            return self.message
        # no dangling blank lines at the end of a tool result
        return self.message + "\n\n" + self.annotation.rstrip("\n")


class TrimmingTools(FileTools):
    async def write(self, path: str, content: str) -> ToolResult:
        return _retype(await super().write(path, content))

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return _retype(await super().edit(path, old, new))

    async def delete(self, path: str) -> ToolResult:
        return _retype(await super().delete(path))


def _retype(result: ToolResult) -> ToolResult:
    return TrimmedResult(result.ok, result.message, result.annotation)


class _Trimming(BaseImplementation):
    tools_class = TrimmingTools


def V_out_woc5_append_trims_trailing_newlines() -> Any:
    return make_adapter(_Trimming(), "out-woc5-append-trims-trailing-newlines")


# --- the catalogue of variants ---------------------------------------------------------------


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc5-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


#: name, rule, statement, the implementation class with the bug (as the outsider wrote them)
_SPECS: list[tuple[str, str, str, type[BaseImplementation]]] = [
    (
        "out-woc5-warn-rearmed-after-heal",
        "WOC-FAIL-WARN",
        "The chain forgets an observer's warning once the hook that failed works again, so an "
        "observer that fails, heals and fails again is warned about twice; an author who reads "
        "'a transient problem heals' thinks a new breakage after healing is news worth a warning.",
        _WarnRearmed,
    ),
    (
        "out-woc5-edit-unique-by-find-rfind",
        "WOC-SEAM-EDIT-UNIQUE",
        "The edit tool tests uniqueness with text.find(old) != text.rfind(old), which counts "
        "overlapping matches, so an edit of 'aa' in 'aaa' (or of a blank line inside a run of "
        "three newlines) is refused as ambiguous although str.count finds it once.",
        _FindRfind,
    ),
    (
        "out-woc5-edit-drops-bom",
        "WOC-SEAM-FAILED-WRITE",
        "The edit tool decodes the file with utf-8-sig (so an old text at the start of a "
        "Windows-saved file matches) and encodes the result as plain utf-8, so a successful "
        "edit silently removes the file's byte-order mark, a byte outside the old text.",
        _BomDropped,
    ),
    (
        "out-woc5-mkdir-before-sandbox-check",
        "WOC-SEAM-DENIED",
        "The write tool creates the new file's parent folders from the unresolved path before "
        "the sandbox check, so a refused write into a new folder through a link out of the root "
        "(or under .git) still creates folders outside the sandbox or in the denied place.",
        _MkdirFirst,
    ),
    (
        "out-woc5-tool-swallows-before-write-cancel",
        "WOC-CANCEL",
        "The tools wrap chain.before_write in 'except BaseException: pass' (a checkpoint must "
        "never block the edit), so a caller cancelled during before_write is swallowed, the "
        "mutation still happens and after_write is entered before the cancellation resurfaces.",
        _BestEffortBefore,
    ),
    (
        "out-woc5-grandchild-chain-loses-limit",
        "WOC-SLOW-BOUNDED",
        "A chain hands its nested chains its own hook_time_limit instead of the effective one it "
        "inherited, so with outer limit L, a middle chain without a limit and a grandchild chain "
        "holding a hung observer, the hang is never cut off and the write waits for a watchdog.",
        _OwnLimitDown,
    ),
    (
        "out-woc5-append-trims-trailing-newlines",
        "WOC-SEAM-APPEND",
        "The tool result appends the annotation with its trailing newlines stripped "
        "(message + '\\n\\n' + annotation.rstrip('\\n')) so the result does not end in blank "
        "lines, which is no longer the chain's annotation verbatim.",
        _Trimming,
    ),
]


def _build(backend: str, *, name: str, implementation: type[BaseImplementation]) -> PythonAdapter:
    return make_adapter(implementation(), name, backend=backend)


#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(
        name, rule, statement, functools.partial(_build, name=name, implementation=cls)
    )
    for name, rule, statement, cls in _SPECS
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


def implementation(name: str) -> BaseImplementation:
    """Batch 5's outsider implementation with the named variant's bug."""
    cls = next(c for n, _, _, c in _SPECS if n == name)
    return cls()
