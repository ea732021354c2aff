"""Seven broken variants of ``base11``, each with exactly one bug (outsider batch 11, woc11).

Written by batch 11's outsider from the docs alone and hashed before any run (the original
``b11woc_variants.py`` had sha256
7362e407f926e66228aec4d9a851313cfba3e61a8fb098dcefd2514e6cc48189). Kept as written: only
imports changed, and the ``VARIANTS`` list became the catalogue at the end (same names,
rules and statements; each variant's adapter is built by ``make_adapter`` as before, now
with a backend); labels changed after triage are in ``RELABELLED``, variants found not to
be bugs in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main e41a630: none of seven killed properly. Two were failed only by
scenarios that did not both cite and name the rule (``after-skips-timed-out-before``:
scenarios citing WOC-SLOW-BOUNDED and WOC-SEAM-NO-ERROR; ``join-drops-newline-only``:
woc-whitespace-only-at-edges-kept under strict, with the oracle not naming
WOC-WHITESPACE-KEPT); one, ``refused-name-leaves-folders``, was failed only by
woc-seam-failed-write-skips-after-write, whose oracle named WOC-SEAM-FAILED-WRITE and
WOC-SEAM-PRE; four survived (``repeat-hang-half-limit``,
``edit-old-trailing-newline-fallback``, ``ambiguity-ignores-crlf``,
``hook-path-one-link-level``). The contract page's "Outsider mutants" section (batch 11)
says what each one is, whether upstream demands the behaviour, and what catches it now;
after triage all seven are registered (``PENDING`` is empty).
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.write_observer_chain.outsiders.base11 import (
    JOIN,
    Chain,
    Impl,
    Refused,
    ToolResult,
    Tools,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter


# 1 ------------------------------------------------------------ WOC-ORDER-AFTER
class SkipAfterTimedOutBeforeChain(Chain):
    """Remembers, per path, which observers hung in before_write, and spares them the
    after_write of that same write ("a formatter stuck before the write is stuck after it;
    don't burn a second time limit on it")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hung_before: dict[str, set[int]] = {}

    async def _collect(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        key = str(path)
        if hook == "before_write":
            self._hung_before.pop(key, None)
            skip: set[int] = set()
        else:
            skip = self._hung_before.pop(key, set())
        notes: list[str] = []
        for observer in self.observers:
            if self._is_nested(observer):
                notes.extend(await observer._collect(hook, path, limit))
                continue
            if id(observer) in skip:
                continue
            ok, value = await self._run_leaf_timed(observer, hook, path, limit)
            if ok == "timeout" and hook == "before_write":
                self._hung_before.setdefault(key, set()).add(id(observer))
            if ok is True and self._keep(value):
                notes.append(value)
        return notes

    async def _run_leaf_timed(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> tuple[Any, Any]:
        try:
            if limit is None:
                value = await getattr(observer, hook)(path)
            else:
                with anyio.move_on_after(limit) as scope:
                    value = await getattr(observer, hook)(path)
                if scope.cancelled_caught:
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
                    return "timeout", None
        except Exception as error:
            self._failed(observer, f"{hook} raised {error!r}")
            return False, None
        return True, value


# 2 ------------------------------------------------------------ WOC-SLOW-BOUNDED
class HalvingLimitChain(Chain):
    """Gives an observer that timed out on its previous call half the limit next time
    (down to 50 ms), so that a persistently hung formatter costs less per write; a call
    that returns in time restores the full limit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._strikes: dict[int, int] = {}

    async def _run_leaf(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> tuple[bool, Any]:
        if limit is not None:
            strikes = self._strikes.get(id(observer), 0)
            limit = max(0.05, limit / (2**strikes))
        try:
            if limit is None:
                value = await getattr(observer, hook)(path)
            else:
                with anyio.move_on_after(limit) as scope:
                    value = await getattr(observer, hook)(path)
                if scope.cancelled_caught:
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    self._strikes[id(observer)] = self._strikes.get(id(observer), 0) + 1
                    self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
                    return False, None
        except Exception as error:
            self._failed(observer, f"{hook} raised {error!r}")
            return False, None
        self._strikes.pop(id(observer), None)
        return True, value


# 3 ------------------------------------------------------------ WOC-SEAM-FAILED-WRITE
class TrailingNewlineFallbackTools(Tools):
    """When the old text does not occur, retries it without its trailing newline(s)
    (models often add a final newline to the text they quote), dropping the same from
    the new text, and reports the edit made."""

    @staticmethod
    def _loose(old: str, new: str) -> tuple[str, str]:
        trimmed = old.rstrip("\n")
        cut = len(old) - len(trimmed)
        if cut and new.endswith("\n" * cut):
            new = new[:-cut]
        return trimmed, new

    def _count(self, text: str, old: str) -> int:
        found = text.count(old)
        if found == 0 and old.endswith("\n") and old.rstrip("\n"):
            found = text.count(old.rstrip("\n"))
        return found

    def _apply(self, text: str, old: str, new: str) -> str:
        if text.count(old) == 1:
            return text.replace(old, new, 1)
        trimmed, new = self._loose(old, new)
        return text.replace(trimmed, new, 1)


# 4 ------------------------------------------------------------ WOC-SEAM-DENIED
class FolderFirstTools(Tools):
    """The write tool checks and creates the file's folder first, then checks the file
    itself: a write refused by a pattern on the file (``*.lock``) has already made the
    missing folders on the way to it."""

    async def write(self, path: str, content: str) -> ToolResult:
        if os.path.isabs(path):
            return ToolResult(False, f"refused: {path} is an absolute path")
        folder_rel = posixpath.dirname(path)
        folder = Path(os.path.realpath(os.path.join(self.root, folder_rel)))
        if folder != self.root:
            inside = self._relative(folder)
            if inside is None:
                return ToolResult(False, f"refused: {path} lies outside the workspace")
            pattern = self._denied(inside)
            if pattern is not None:
                return ToolResult(False, f"refused: {path} matches the deny rule {pattern!r}")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        hooked = self._hook_path(path, resolved)
        await self.chain.before_write(hooked)
        data = content.encode("utf-8")
        try:
            self._write_bytes(resolved, data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        return await self._finish(hooked, f"wrote {len(data)} bytes to {path}")


# 5 ------------------------------------------------------------ WOC-SEAM-EDIT-UNIQUE
class CrlfBlindAmbiguityTools(Tools):
    """Judges ambiguity with line endings ignored (CRLF read as LF in the file and the old
    text), so that an old text quoted with the "wrong" line ending cannot hide a second
    match; an old text that occurs once as written but twice modulo line endings is
    refused as ambiguous."""

    def _count(self, text: str, old: str) -> int:
        loose = text.replace("\r\n", "\n").count(old.replace("\r\n", "\n"))
        exact = text.count(old)
        return loose if loose > 1 else exact


# 6 ------------------------------------------------------------ WOC-WHITESPACE-KEPT
class NewlineOnlyDroppedChain(Chain):
    """When joining several annotations, drops those made only of line breaks: they would
    only add blank lines between the real paragraphs. A lone one is still returned."""

    def _join(self, notes: list[str]) -> str | None:
        if len(notes) > 1:
            notes = [note for note in notes if note.strip("\r\n") != ""] or notes[:1]
        return JOIN.join(notes) if notes else None


# 7 ------------------------------------------------------------ WOC-SEAM-PRE
class OneLinkLevelTools(Tools):
    """The sandbox check uses the fully resolved path, but the path given to the hooks is
    worked out for readability: the folder resolved, then the final link followed once
    with readlink (what ``ls -l`` shows). A link to a link hands the hooks the middle link."""

    def _hook_path(self, rel: str, resolved: Path) -> Path:
        joined = Path(self.root, rel)
        folder = Path(os.path.realpath(joined.parent))
        candidate = folder / joined.name
        if candidate.is_symlink():
            return Path(os.path.normpath(folder / os.readlink(candidate)))
        return resolved


# ------------------------------------------------------------ registry


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc11-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


def _impl(chain_class: type = Chain, tools_class: type = Tools) -> Impl:
    impl = Impl()
    impl.chain_class = chain_class
    impl.tools_class = tools_class
    return impl


#: name, rule, statement, chain class, tools class (as the outsider wrote them)
_SPECS: Sequence[tuple[str, str, str, type, type]] = [
    (
        "out-woc11-after-skips-timed-out-before",
        "WOC-ORDER-AFTER",
        "An observer whose before_write was cut off by the time limit is not called in the "
        "after_write that follows for the same path.",
        SkipAfterTimedOutBeforeChain,
        Tools,
    ),
    (
        "out-woc11-repeat-hang-half-limit",
        "WOC-SLOW-BOUNDED",
        "An observer that timed out on its previous call runs under half the limit (then a "
        "quarter, down to 50 ms) until it returns in time again.",
        HalvingLimitChain,
        Tools,
    ),
    (
        "out-woc11-edit-old-trailing-newline-fallback",
        "WOC-SEAM-FAILED-WRITE",
        "An edit whose old text does not occur is retried with the old text's trailing "
        "newlines stripped and reported as a success when that shorter text occurs once.",
        Chain,
        TrailingNewlineFallbackTools,
    ),
    (
        "out-woc11-refused-name-leaves-folders",
        "WOC-SEAM-DENIED",
        "The write tool creates the missing folders of an allowed folder before checking the "
        "file's own name, so a write refused by a file pattern leaves new empty folders.",
        Chain,
        FolderFirstTools,
    ),
    (
        "out-woc11-ambiguity-ignores-crlf",
        "WOC-SEAM-EDIT-UNIQUE",
        "Ambiguity is counted with CRLF read as LF, so an old text that occurs exactly once "
        "but matches a second place with the other line ending is refused as ambiguous.",
        Chain,
        CrlfBlindAmbiguityTools,
    ),
    (
        "out-woc11-join-drops-newline-only",
        "WOC-WHITESPACE-KEPT",
        "When two or more annotations are joined, annotations made only of line breaks are "
        "dropped (a lone one is still returned).",
        NewlineOnlyDroppedChain,
        Tools,
    ),
    (
        "out-woc11-hook-path-one-link-level",
        "WOC-SEAM-PRE",
        "The hooks are given the final link's target followed only one level, so a link to "
        "a link hands them the middle link instead of the file it leads to.",
        Chain,
        OneLinkLevelTools,
    ),
]


def _build(backend: str, *, name: str, chain_class: type, tools_class: type) -> PythonAdapter:
    return make_adapter(_impl(chain_class, tools_class), name=name, backend=backend)


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


def implementation(name: str) -> Impl:
    """Batch 11's outsider implementation with the named variant's bug."""
    _, _, _, chain, tools = next(s for s in _SPECS if s[0] == name)
    return _impl(chain, tools)


for _name, _, _, _chain, _tools in _SPECS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(
        _build, "asyncio", name=_name, chain_class=_chain, tools_class=_tools
    )
del _name, _chain, _tools
