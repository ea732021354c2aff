"""Seven broken variants of ``base6``, each with exactly one bug (outsider batch 6, woc6).

Written by batch 6's outsider from the docs alone and hashed before any run (the original
``b6woc_variants.py`` had sha256
98bbea36b1648fb2c11960f6ad671052e6323ab267ef6ada161b81ee703aea98). Kept as written: only
imports and typing changed, and the ``VARIANTS`` list became the catalogue at the end (same
names, rules and statements; each variant's adapter is built by ``make_adapter`` as
before, now with a backend); labels changed after triage are in ``RELABELLED``, variants
found not to be bugs in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main f94b013 (121 scenarios): none killed properly. Six survived under
both profiles (``circuit-breaker``, ``single-passthrough``, ``edit-eol-normalize``,
``prefix-containment``, ``limit-floor``, ``edit-noop-skips-seam``); ``join-lstrip`` was
caught only by strict scenarios citing other rules
(``woc-single-observer-chain-is-transparent``, ``woc-whitespace-only-alone-is-returned``).
The contract page's "Outsider mutants" section (batch 6) says what each one is, whether
upstream demands the behaviour, and what catches it now.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base6 import (
    Chain,
    Implementation,
    Refused,
    Result,
    Tools,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --------------------------------------------------------------------------------------
# 1. circuit breaker: after three consecutive after_write failures, stop calling it
# --------------------------------------------------------------------------------------


class BreakerChain(Chain):
    """Trips a per-observer breaker for after_write after three failures in a row."""

    TRIP_AFTER = 3

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._streak: dict[int, int] = {}

    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        key = id(observer)
        if hook == "after_write" and self._streak.get(key, 0) >= self.TRIP_AFTER:
            return None  # breaker open: this observer keeps failing, leave it alone
        try:
            if limit is None:
                value = await getattr(observer, hook)(path)
            else:
                with anyio.move_on_after(limit) as scope:
                    value = await getattr(observer, hook)(path)
                if scope.cancelled_caught:
                    raise TimeoutError(f"{hook} exceeded {limit} s")
        except Exception as error:  # cancellation is a BaseException: it passes through
            self._warn(observer, error)
            if hook == "after_write":
                self._streak[key] = self._streak.get(key, 0) + 1
            return None
        if hook == "after_write":
            self._streak[key] = 0
        return value


class BreakerImplementation(Implementation):
    chain_class = BreakerChain


# --------------------------------------------------------------------------------------
# 2. a chain of one "behaves like its only observer": fast path returns the raw value
# --------------------------------------------------------------------------------------


class PassthroughChain(Chain):
    async def after_write(self, path: Path) -> str | None:
        if len(self.observers) == 1 and not isinstance(self.observers[0], Chain):
            # a chain of one is its only observer: no list, no join
            only = self.observers[0]
            value: str | None = await self._one(only, "after_write", path, self.hook_time_limit)
            return value
        return await super().after_write(path)


class PassthroughImplementation(Implementation):
    chain_class = PassthroughChain


# --------------------------------------------------------------------------------------
# 3. line-ending-agnostic edit that writes the whole file back in the file's style
# --------------------------------------------------------------------------------------


class EolTools(Tools):
    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self._check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        if old == "":
            return Result(False, "edit failed: the old text is empty")
        try:
            raw = target.read_bytes()
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return Result(False, f"edit failed: {path} is not UTF-8 text")
        # Models often send LF for a CRLF file: match on LF, write back in the file's style.
        crlf = "\r\n" in text
        if crlf:
            text = text.replace("\r\n", "\n")
            old = old.replace("\r\n", "\n")
            new = new.replace("\r\n", "\n")
        count = text.count(old)
        if count == 0:
            return Result(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return Result(
                False, f"edit failed: the old text occurs {count} times in {path}; be more specific"
            )
        updated_text = text.replace(old, new, 1)
        if crlf:
            updated_text = updated_text.replace("\n", "\r\n")
        updated = updated_text.encode("utf-8")
        await self._before(target)
        try:
            with open(target, "wb") as handle:
                handle.write(updated)
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        note = await self._after(target)
        return Result(True, f"edited {path}", note)


class EolImplementation(Implementation):
    tools_class = EolTools


# --------------------------------------------------------------------------------------
# 4. containment tested as a string prefix
# --------------------------------------------------------------------------------------


class PrefixTools(Tools):
    def _check(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        if not str(resolved).startswith(str(self.root)):
            raise Refused(f"refused: {rel} leads out of the workspace")
        if resolved == self.root:
            raise Refused(f"refused: {rel} is the workspace itself")
        inside = os.path.relpath(resolved, self.root).replace(os.sep, "/")
        parts = inside.split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        for pattern in self.deny:
            for candidate in candidates:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved


class PrefixImplementation(Implementation):
    tools_class = PrefixTools


# --------------------------------------------------------------------------------------
# 5. a floor under the per-hook time limit, "so healthy formatters do not flake"
# --------------------------------------------------------------------------------------


class FloorChain(Chain):
    #: sub-second limits make healthy observers flaky on a loaded CI machine
    MIN_HOOK_TIME_LIMIT = 1.0

    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        if limit is not None:
            limit = max(limit, self.MIN_HOOK_TIME_LIMIT)
        return await super()._one(observer, hook, path, limit)


class FloorImplementation(Implementation):
    chain_class = FloorChain


# --------------------------------------------------------------------------------------
# 6. join by prefixing every note with the separator, then stripping the leading one
# --------------------------------------------------------------------------------------


class LstripJoinChain(Chain):
    @staticmethod
    def _join(notes: list[str]) -> str | None:
        if not notes:
            return None
        joined = ""
        for note in notes:
            joined += "\n\n" + note
        return joined.lstrip("\n")  # drop the separator in front of the first note


class LstripJoinImplementation(Implementation):
    chain_class = LstripJoinChain


# --------------------------------------------------------------------------------------
# 7. an edit that changes nothing skips the disk and the seam
# --------------------------------------------------------------------------------------


class NoopEditTools(Tools):
    async def edit(self, path: str, old: str, new: str) -> Result:
        if old != new or old == "":
            return await super().edit(path, old, new)
        try:
            target = self._check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        try:
            text = target.read_bytes().decode("utf-8")
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        except UnicodeDecodeError:
            return Result(False, f"edit failed: {path} is not UTF-8 text")
        count = text.count(old)
        if count == 0:
            return Result(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return Result(
                False, f"edit failed: the old text occurs {count} times in {path}; be more specific"
            )
        # old == new: the file already holds the result; nothing to write, nothing to observe
        return Result(True, f"edited {path} (no change)")


class NoopEditImplementation(Implementation):
    tools_class = NoopEditTools


# --------------------------------------------------------------------------------------
# the list
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc6-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


#: name, rule, statement, the implementation class with the bug (as the outsider wrote them)
_SPECS: Sequence[tuple[str, str, str, type[Implementation]]] = [
    (
        "out-woc6-circuit-breaker",
        "WOC-ORDER-AFTER",
        "After three consecutive after_write failures of one observer the chain stops "
        "calling that observer's after_write for the rest of its life.",
        BreakerImplementation,
    ),
    (
        "out-woc6-single-passthrough",
        "WOC-NONE",
        "A chain of exactly one (leaf) observer returns that observer's after_write value "
        "as it is, so an empty-string annotation comes back as '' instead of None.",
        PassthroughImplementation,
    ),
    (
        "out-woc6-edit-eol-normalize",
        "WOC-SEAM-FAILED-WRITE",
        "An edit of a file containing CRLF normalises file, old and new text to LF and "
        "writes the whole file back with CRLF, so LF bytes (mixed endings, or LF in the new "
        "text) are changed although the edit reports success.",
        EolImplementation,
    ),
    (
        "out-woc6-prefix-containment",
        "WOC-SEAM-DENIED",
        "The sandbox containment check is a string prefix test, so a path resolving to a "
        "sibling folder whose name starts with the root's name (../sandbox-x/f) is allowed "
        "and written outside the sandbox.",
        PrefixImplementation,
    ),
    (
        "out-woc6-limit-floor",
        "WOC-SLOW-BOUNDED",
        "The per-hook time limit is raised to at least 1 s, so under a 0.25 s limit a hung "
        "observer holds the write for about 1 s instead of about 0.25 s.",
        FloorImplementation,
    ),
    (
        "out-woc6-join-lstrip",
        "WOC-JOIN-EXACT",
        "The join prefixes every annotation with the separator and then strips leading "
        "newlines, which also eats newlines the first annotation itself starts with.",
        LstripJoinImplementation,
    ),
    (
        "out-woc6-edit-noop-skips-seam",
        "WOC-SEAM-POST",
        "An edit whose new text equals its old text (found exactly once) reports success "
        "without calling either hook, so after_write never runs for that successful edit.",
        NoopEditImplementation,
    ),
]


def _build(backend: str, *, name: str, implementation: type[Implementation]) -> PythonAdapter:
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


def implementation(name: str) -> Implementation:
    """Batch 6's outsider implementation with the named variant's bug."""
    cls = next(c for n, _, _, c in _SPECS if n == name)
    return cls()


for _name in VARIANTS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(
        _build, "asyncio", name=_name, implementation=type(implementation(_name))
    )
del _name
