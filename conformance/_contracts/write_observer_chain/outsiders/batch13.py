"""Seven broken variants of ``base13``, each with exactly one bug (outsider batch 13, b13woc).

Written by batch 13's outsider from the docs alone (the docs of main 79cf702) and hashed
before any run (the original ``b13woc_variants.py`` had sha256
27a559b31b374fdd3ebdc65646b98a9d16fccf9eaf72242e7944377dc3aaa624). Kept as written: only
imports, annotations and ``noqa`` changed, and the outsider's ``VARIANTS`` list with its
``_IMPLS`` map and ``_factory`` became the catalogue at the end (same names, rules and
statements; each variant's adapter is built by ``make_adapter`` from the outsider's own
``Implementation`` subclass as before, now with a backend); labels changed after triage are
in ``RELABELLED``, variants found not to be bugs in ``REJECTED``, variants not caught yet
in ``PENDING``.

First try, judged against main fcf826a: 1 of 7 killed properly (``deny-absolute-too``),
``tool-sticky-annotation`` killed only by another rule's scenario
(woc-builtin-checkpoint-restores-pre-image, WOC-SEAM-PRE/WOC-ORDER-BEFORE), 5 survived.
After the blind WOC sweep 13 (main bb3512c, written without seeing this batch):
``deny-casefold`` also killed properly, 4 survived and 1 other-rule. The contract page's
"Outsider mutants" section (batch 13) says what each one is, whether upstream demands the
behaviour, and what catches it now.

Original module docstring:

    b13woc variants: each is the base with exactly one plausible bug.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base13 import (
    Chain,
    Implementation,
    ToolResult,
    Tools,
    deny_candidates,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# ----------------------------------------------------------------------------- 1
# A chain that implements the per-hook limit by catching the cancellation itself and
# deciding "it was my timer" from the clock: if the hook's deadline has passed, the
# cancellation is taken for the timeout and swallowed.  A caller cancellation that
# arrives after the deadline (while a cut-off hook is still unwinding) is swallowed too,
# and the chain goes on to enter the next observer.


class _DeadlineCheckChain(Chain):
    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, limit))
                continue
            value = await self._call_one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(value, str) and value != "":
                notes.append(value)
        return notes

    async def _call_one(  # type: ignore[return]  # (as written: mypy cannot see the scope re-raises)
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        method: Callable[[Path], Awaitable[str | None]] = getattr(observer, hook)
        if limit is None:
            return await super()._call_one(observer, hook, path, limit)
        with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope:
            try:
                return await method(path)
            except anyio.get_cancelled_exc_class():
                if anyio.current_time() >= scope.deadline:
                    self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
                    return None
                raise
            except Exception as error:
                self._failed(observer, f"{hook} raised {error!r}")
                return None


class _Impl1(Implementation):
    chain_class = _DeadlineCheckChain


# ----------------------------------------------------------------------------- 2
# After a delete, the tool prunes the folders the delete emptied with os.removedirs,
# which climbs past the workspace: a delete that leaves the sandbox empty removes the
# sandbox root itself (a place the check refuses).


class _PruningTools(Tools):
    def _remove(self, target: Path) -> None:
        os.unlink(target)
        try:  # noqa: SIM105 (as written)
            os.removedirs(target.parent)
        except OSError:
            pass


class _Impl2(Implementation):
    tools_class = _PruningTools


# ----------------------------------------------------------------------------- 3
# The tool remembers the bytes it last put in each file and skips rewriting a file that
# still exists when asked for the same bytes again ("no-op write"; the seam still runs).
# After anything else changed the file (a checkpoint restore, a formatter), an identical
# write reports success and leaves the file as the other party left it.


class _CachingTools(Tools):
    def __init__(self, root: Path, chain: Any, *, deny: Any = ()) -> None:
        super().__init__(root, chain, deny=deny)
        self._known: dict[str, bytes] = {}

    def _store(self, target: Path, data: bytes) -> None:
        key = str(target)
        if self._known.get(key) == data and target.exists():
            return
        super()._store(target, data)
        self._known[key] = data

    def _remove(self, target: Path) -> None:
        self._known.pop(str(target), None)
        super()._remove(target)


class _Impl3(Implementation):
    tools_class = _CachingTools


# ----------------------------------------------------------------------------- 4
# Deny patterns are matched case-insensitively (so that ".GIT/config" cannot sneak past
# ".git" on a case-insensitive file system); on a case-sensitive one this refuses
# allowed paths such as "Build/x" under the pattern "build".


class _CasefoldTools(Tools):
    def _matches_deny(self, relative: str) -> str | None:
        for candidate in deny_candidates(relative):
            for pattern in self.deny:
                if fnmatch.fnmatchcase(candidate.casefold(), pattern.casefold()):
                    return pattern
        return None


class _Impl4(Implementation):
    tools_class = _CasefoldTools


# ----------------------------------------------------------------------------- 5
# A delete through a symbolic link removes the target and then also the link it came
# through ("no dangling links left behind"), even when the link lies in a place the
# sandbox refuses (a link inside .git/ whose target is allowed).


class _UnlinkLinkTools(Tools):
    async def delete(self, path: str) -> ToolResult:
        target = self._checked(path)
        if isinstance(target, ToolResult):
            return target
        await self.chain.before_write(target)
        try:
            self._remove(target)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        given = os.path.join(str(self.root), path)
        if os.path.islink(given):
            try:  # noqa: SIM105 (as written)
                os.unlink(given)
            except OSError:
                pass
        return await self._finish(target, f"deleted {path}")


class _Impl5(Implementation):
    tools_class = _UnlinkLinkTools


# ----------------------------------------------------------------------------- 6
# The tool keeps the latest annotation on itself (for a status line) and builds the
# result text from that attribute, which is only updated when the chain returns one: a
# later successful call with no annotation shows the previous call's annotation.


class _StickyTools(Tools):
    def __init__(self, root: Path, chain: Any, *, deny: Any = ()) -> None:
        super().__init__(root, chain, deny=deny)
        self._annotation: str | None = None

    async def _finish(self, target: Path, message: str) -> ToolResult:
        annotation = await self.chain.after_write(target)
        if annotation is not None:
            self._annotation = annotation
        return ToolResult(True, message, self._annotation)


class _Impl6(Implementation):
    tools_class = _StickyTools


# ----------------------------------------------------------------------------- 7
# Deny patterns are matched against the absolute resolved path and its parents as well
# as the root-relative ones (so that absolute entries such as "/etc/*" work): a pattern
# starting with "*" then also matches through the workspace's own location, e.g.
# "*/node_modules" refuses the root-level "node_modules/x.js", and "*tmp*" refuses
# everything in a workspace under /tmp.


class _AbsoluteDenyTools(Tools):
    def _matches_deny(self, relative: str) -> str | None:
        hit = super()._matches_deny(relative)
        if hit is not None:
            return hit
        absolute = Path(str(self.root), relative)
        for candidate in (absolute, *absolute.parents):
            for pattern in self.deny:
                if fnmatch.fnmatchcase(str(candidate), pattern):
                    return pattern
        return None


class _Impl7(Implementation):
    tools_class = _AbsoluteDenyTools


# ----------------------------------------------------------------------------- exports

_OUTSIDER_VARIANTS: list[tuple[str, str, str]] = [
    (
        "out-b13woc-cancel-after-deadline-swallowed",
        "WOC-CANCEL",
        "The chain treats any cancellation that reaches a hook after that hook's deadline "
        "as its own time limit and swallows it, so a caller cancellation arriving while a "
        "cut-off hook is still unwinding is contained and the next observer is entered.",
    ),
    (
        "out-b13woc-delete-prunes-to-root",
        "WOC-SEAM-DENIED",
        "The delete tool prunes emptied folders with os.removedirs, which climbs past the "
        "workspace and removes the sandbox root itself when a delete leaves it empty.",
    ),
    (
        "out-b13woc-write-skip-stale-cache",
        "WOC-SEAM-FAILED-WRITE",
        "The write tool skips rewriting a file whose requested bytes equal those it last "
        "wrote there, so after a checkpoint restore (or a formatter) an identical write "
        "reports success but leaves the file as the other party left it.",
    ),
    (
        "out-b13woc-deny-casefold",
        "WOC-SEAM-DENIED",
        "Deny patterns are matched case-insensitively, refusing allowed paths such as "
        "Build/x under the pattern build on a case-sensitive file system.",
    ),
    (
        "out-b13woc-delete-unlinks-link",
        "WOC-SEAM-DENIED",
        "A delete through a symbolic link also removes the link itself, even when the "
        "link lies in a denied folder such as .git/ (only its allowed target was checked).",
    ),
    (
        "out-b13woc-tool-sticky-annotation",
        "WOC-SEAM-APPEND",
        "The tools keep the last non-None annotation on themselves and build every result "
        "text from it, so a successful call with no annotation repeats the previous "
        "call's annotation.",
    ),
    (
        "out-b13woc-deny-absolute-too",
        "WOC-SEAM-DENIED",
        "Deny patterns are also matched against the absolute resolved path and its "
        "parents, so a pattern starting with * (e.g. */node_modules, *tmp*) refuses "
        "allowed paths through the workspace's own location.",
    ),
]

_IMPLS: dict[str, type[Implementation]] = {
    "out-b13woc-cancel-after-deadline-swallowed": _Impl1,
    "out-b13woc-delete-prunes-to-root": _Impl2,
    "out-b13woc-write-skip-stale-cache": _Impl3,
    "out-b13woc-deny-casefold": _Impl4,
    "out-b13woc-delete-unlinks-link": _Impl5,
    "out-b13woc-tool-sticky-annotation": _Impl6,
    "out-b13woc-deny-absolute-too": _Impl7,
}


# ------------------------------------------------------------ registry


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-b13woc-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


def _build(backend: str, *, name: str, impl_class: type[Implementation]) -> PythonAdapter:
    return make_adapter(impl_class(), name=name, backend=backend)


#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(
        name, rule, statement, functools.partial(_build, name=name, impl_class=_IMPLS[name])
    )
    for name, rule, statement in _OUTSIDER_VARIANTS
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
    """Batch 13's outsider implementation with the named variant's bug."""
    return _IMPLS[name]()


for _name, _, _ in _OUTSIDER_VARIANTS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(
        _build, "asyncio", name=_name, impl_class=_IMPLS[_name]
    )
del _name
