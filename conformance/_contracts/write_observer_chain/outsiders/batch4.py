"""Seven broken variants of ``base4``, each with exactly one bug (outsider batch 4, woc4).

Written by batch 4's outsider from the docs alone and hashed before any run (the original
``b4woc4_variants.py`` had sha256
522ab9dcb08e29d563a0a398b825a16bec0579961244c9f5a4fb1e5666cb319c). Kept as written: only
imports and typing changed, and the module-level factories and ``VARIANTS`` list became the
catalogue at the end (same names, rules and statements); labels changed after triage are
in ``RELABELLED``.

First try, against main 30df4f5 (102 scenarios): two killed properly
(``nested-chains-flattened``, ``timeout-catches-cancel``, both under strict), one killed
only by scenarios citing another rule (``verify-after-observers``), four survived
(``dangling-link-escapes``, ``identical-write-skipped``, ``edit-newlines-translated``,
``hung-after-write-skipped``). The contract page's "Outsider mutants" section (batch 4)
says what each one is, whether upstream demands the behaviour, and what catches it now.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base4 import (
    B4Chain,
    B4Implementation,
    B4Tools,
    HookTimedOut,
    Refused,
    ToolResult,
    build,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# ------------------------------------------------------------------ 1. WOC-SEAM-DENIED


class DanglingLinkTools(B4Tools):
    """Resolves a path that does not exist yet through its deepest existing folder, and
    keeps the last component as a plain name. ``exists()`` follows links, so a dangling
    link in the last place counts as "a new file": the check passes on the link's own
    name inside the root, and ``open()`` then follows the link wherever it leads."""

    def _resolve(self, raw: str) -> Path:
        candidate = self.root / raw
        if candidate.name in ("", ".", "..") or candidate.exists():
            return Path(os.path.realpath(candidate))
        # a file to be created: resolve the folder it will live in, keep its name
        return Path(os.path.realpath(candidate.parent)) / candidate.name


# ------------------------------------------------------------------ 2. WOC-SEAM-POST


class SkipIdenticalWriteTools(B4Tools):
    """An optimisation: writing the bytes a file already holds is reported as a success
    without touching the file, and so without calling either hook."""

    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            unchanged = target.is_file() and self._read_text(target) == content
        except (OSError, UnicodeDecodeError):
            unchanged = False
        if unchanged:
            size = len(content.encode("utf-8"))
            return ToolResult(True, f"wrote {size} bytes to {path} (unchanged)")
        return await super().write(path, content)


# ------------------------------------------------------------------ 3. WOC-SEAM-FAILED-WRITE


class TextModeReadTools(B4Tools):
    """Reads files in Python's text mode, whose universal newlines turn every
    ``\\r\\n`` (and lone ``\\r``) into ``\\n``. The edit tool writes the edited text
    back byte for byte, so a CRLF file comes back LF everywhere and an old text quoted
    with ``\\r\\n`` is reported as not found although the file holds it; and the
    check right after a mutation reads the file the same way, so a write or edit whose
    new text holds ``\\r\\n`` is reported as failed although it is on disk."""

    @staticmethod
    def _read_text(target: Path) -> str:
        return target.read_text(encoding="utf-8")


# ------------------------------------------------------------------ 4. WOC-SEAM-NO-ERROR


class VerifyLateTools(B4Tools):
    """Checks that the file holds what was asked only after ``after_write``: a formatter
    that rewrote the file (as formatters do) turns the successful write into an error."""

    async def _perform(
        self,
        verb: str,
        target: Path,
        mutate: Any,
        expected: str | None,
        message: str,
    ) -> ToolResult:
        await self._before(target)
        try:
            mutate()
        except (OSError, ValueError) as error:
            return ToolResult(False, self._error(verb, error))
        annotation = await self._after(target)
        problem = self._verify(verb, target, expected)
        if problem is not None:
            return ToolResult(False, problem)
        return ToolResult(True, message, annotation)


# ------------------------------------------------------------------ 5. WOC-SLOW-BOUNDED


class FlatteningChain(B4Chain):
    """Flattens nested chains into its own list when it is built ("a nested chain
    behaves like the flattened list", so why not make it one): order and joining are
    right, but a nested chain's own ``hook_time_limit`` is lost, and its observers run
    under the outer chain's limit, or under none."""

    def __init__(self, observers: Any, **options: Any) -> None:
        flat: list[Any] = []
        for observer in observers:
            if isinstance(observer, B4Chain):
                flat.extend(observer.observers)
            else:
                flat.append(observer)
        super().__init__(flat, **options)


# ------------------------------------------------------------------ 6. WOC-CANCEL


class TimeoutCatchesCancelChain(B4Chain):
    """Under a time limit, catches the cancellation exception class along with
    ``TimeoutError`` (as code written for ``asyncio.wait_for`` often does), so a
    cancellation of the caller that arrives while a timed hook runs is taken for a
    time-out: contained, warned about, and the later observers still run."""

    async def _call_leaf(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        method = getattr(observer, hook)
        if limit is None:
            result: str | None = await method(path)
            return result
        try:
            with anyio.fail_after(limit):
                result = await method(path)
                return result
        except (TimeoutError, anyio.get_cancelled_exc_class()) as error:
            raise HookTimedOut(f"{hook} did not return within {limit:g} s") from error


# ------------------------------------------------------------------ 7. WOC-ORDER-AFTER


class SkipHungAfterWriteChain(B4Chain):
    """A circuit breaker: an observer whose ``after_write`` once ran past the time limit
    (a formatter program that hangs) is not called in ``after_write`` again by this
    chain, so that every later write does not lose another limit waiting for it."""

    def __init__(self, observers: Any, **options: Any) -> None:
        super().__init__(observers, **options)
        self._hung: set[int] = set()

    async def _call_leaf(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        if hook == "after_write" and id(observer) in self._hung:
            return None
        try:
            return await super()._call_leaf(observer, hook, path, limit)
        except HookTimedOut:
            if hook == "after_write":
                self._hung.add(id(observer))
            raise


# --- the catalogue of variants ---------------------------------------------------------------


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc4-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


_SPECS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "out-woc4-dangling-link-escapes",
        "WOC-SEAM-DENIED",
        "A new file is resolved through its deepest existing folder with exists(), which "
        "follows links, so a dangling link as the last component passes the check under its "
        "own name and the write follows it out of the root or into a denied folder.",
        {"tools_class": DanglingLinkTools},
    ),
    (
        "out-woc4-identical-write-skipped",
        "WOC-SEAM-POST",
        "A write of the bytes the file already holds is reported as a success without "
        "calling either hook, so no formatter or diagnostics annotation reaches the result.",
        {"tools_class": SkipIdenticalWriteTools},
    ),
    (
        "out-woc4-edit-newlines-translated",
        "WOC-SEAM-FAILED-WRITE",
        "The tools read files in text mode (universal newlines), so an edit of a CRLF file "
        "reports success while every line ending in it became LF, and a write or edit whose "
        "new text holds CRLF is reported as failed although it is on disk.",
        {"tools_class": TextModeReadTools},
    ),
    (
        "out-woc4-verify-after-observers",
        "WOC-SEAM-NO-ERROR",
        "The tool checks that the file holds the new text after after_write instead of "
        "before it, so a formatter's rewrite turns a successful write or edit into an error.",
        {"tools_class": VerifyLateTools},
    ),
    (
        "out-woc4-nested-chains-flattened",
        "WOC-SLOW-BOUNDED",
        "Nested chains are flattened into the outer list when it is built, losing a nested "
        "chain's own hook_time_limit, so its hung observer holds the write until the kit "
        "gives up when the outer chain has no limit.",
        {"chain_class": FlatteningChain},
    ),
    (
        "out-woc4-timeout-catches-cancel",
        "WOC-CANCEL",
        "Under a time limit the chain catches the cancellation class along with "
        "TimeoutError, so a caller's cancellation during a timed hook is contained as a "
        "time-out and the later observers still run.",
        {"chain_class": TimeoutCatchesCancelChain},
    ),
    (
        "out-woc4-hung-after-write-skipped",
        "WOC-ORDER-AFTER",
        "An observer whose after_write once ran past the time limit is never called in "
        "after_write again by that chain (a circuit breaker), so later writes skip it.",
        {"chain_class": SkipHungAfterWriteChain},
    ),
]


def _build(backend: str, *, name: str, classes: dict[str, Any]) -> PythonAdapter:
    return build(name, backend=backend, **classes)


MUTANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(
        name, rule, statement, functools.partial(_build, name=name, classes=classes)
    )
    for name, rule, statement, classes in _SPECS
}


#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {}


def implementation(name: str) -> B4Implementation:
    """Batch 4's outsider implementation with the named variant's bug."""
    classes = next(c for n, _, _, c in _SPECS if n == name)
    return B4Implementation(**classes)
