"""Seven broken variants of ``base9``, each with exactly one bug (outsider batch 9, woc9).

Written by batch 9's outsider from the docs alone and hashed before any run (the original
``b9woc_variants.py`` had sha256
a4f6b01a66af8fd88387cd6ffab49cb60685c3ce663071dfa62c32355b06c86d). Kept as written: only
imports and typing changed, and the ``VARIANTS`` list became the catalogue at the end (same
names, rules and statements; each variant's adapter is built by ``build`` as before, now
with a backend); labels changed after triage are in ``RELABELLED``, variants found not to
be bugs in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main d694025: none of seven killed properly. Five survived:
``deny-bracket-literal`` (no deny pattern held a ``[...]`` set), ``nested-shared-buffer``
(no overlapping calls met inside one nested chain), ``edit-nfc`` (no edited file held
decomposed text), ``join-no-sep-after-blank`` (no non-final annotation ended in a blank
line) and ``limited-branch-uncontained`` (no observer raised under a time limit). Two were
failed only by scenarios that did not both cite and name their rule:
``nested-before-own-limit`` (by woc-slow-nested-own-limit, a SHOULD scenario citing
WOC-SLOW) and ``mkdir-retry-rehooks`` (by scenarios writing into a missing folder, which
cite other rules). The contract page's "Outsider mutants" section (batch 9) says what each
one is, whether upstream demands the behaviour, and what catches it now.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base9 import (
    SEPARATOR,
    Chain,
    Implementation,
    Refused,
    Result,
    Sandbox,
    Tools,
    build,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --------------------------------------------------------------------------- 1
# Deny globs translated to a regex by the common "escape, then un-escape * and ?"
# idiom: re.escape also escapes "[" and "]", so a set such as "[Bb]uild" matches only
# the literal text "[Bb]uild" and the paths it should refuse are allowed.


class _BracketLiteralSandbox(Sandbox):
    def matches(self, candidate: str, pattern: str) -> bool:
        regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
        return re.fullmatch(regex, candidate) is not None


class _BracketLiteralTools(Tools):
    sandbox_class = _BracketLiteralSandbox


# --------------------------------------------------------------------------- 2
# A nested chain collects its leaves' annotations in an attribute that the enclosing
# chain reads once the nested run is over. Top-level calls use a local list, so
# overlapping calls are fine until they overlap inside the same nested chain: the second
# call resets the buffer the first is still filling.


class _SharedBufferChain(Chain):
    async def _run(self, hook: str, path: Path, limit: float | None) -> list[str]:
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, _SharedBufferChain):
                await observer._run_nested(hook, path, observer._limit_for_nested(limit))
                notes.extend(observer._collected)
                continue
            note = await self._call_one(observer, hook, path, limit)
            if isinstance(note, str) and note != "":
                notes.append(note)
        return notes

    async def _run_nested(self, hook: str, path: Path, limit: float | None) -> None:
        self._collected: list[str] = []
        for observer in self.observers:
            if isinstance(observer, _SharedBufferChain):
                await observer._run_nested(hook, path, observer._limit_for_nested(limit))
                self._collected.extend(observer._collected)
                continue
            note = await self._call_one(observer, hook, path, limit)
            if isinstance(note, str) and note != "":
                self._collected.append(note)


# --------------------------------------------------------------------------- 3
# The before_write walk hands a nested chain the limit in force above it and forgets the
# nested chain's own hook_time_limit (the after_write walk gets it right). A nested chain
# with its own limit and a hung before_write is held for the outer limit, or, with no
# outer limit, not cut off at all.


class _BeforeIgnoresOwnLimitChain(Chain):
    async def before_write(self, path: Path) -> None:
        await self._before_all(path, self.hook_time_limit)

    async def _before_all(self, path: Path, limit: float | None) -> None:
        for observer in self.observers:
            if isinstance(observer, _BeforeIgnoresOwnLimitChain):
                await observer._before_all(path, limit)
                continue
            await self._call_one(observer, "before_write", path, limit)


# --------------------------------------------------------------------------- 4
# The edit tool normalises the file and the old/new texts to NFC so that a precomposed
# "é" in the model's old text matches a decomposed one in the file, and writes the
# normalised file back: every decomposed character elsewhere in the file changes bytes,
# while the tool reports success.


class _NfcEditTools(Tools):
    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self.sandbox.check(path)
        except Refused as refused:
            return Result(False, str(refused))
        if old == "":
            return Result(False, "edit failed: the old text is empty")
        try:
            raw = target.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return Result(False, f"edit failed: {path} does not exist")
        except (OSError, UnicodeDecodeError) as error:
            return Result(False, f"edit failed: {error}")
        text = unicodedata.normalize("NFC", raw)
        old = unicodedata.normalize("NFC", old)
        new = unicodedata.normalize("NFC", new)
        found = text.count(old)
        if found == 0:
            return Result(False, f"edit failed: the old text does not occur in {path}")
        if found > 1:
            return Result(
                False, f"edit failed: the old text occurs {found} times in {path}; be specific"
            )
        start = text.index(old)
        edited = text[:start] + new + text[start + len(old) :]
        await self.observer.before_write(target)
        try:
            with open(target, "wb") as handle:
                handle.write(edited.encode("utf-8"))
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        return await self._finish(target, f"edited {path}")


# --------------------------------------------------------------------------- 5
# The write tool creates missing parent folders lazily: when open() fails with
# FileNotFoundError it makes them and retries by calling itself, which runs the sandbox
# check and before_write a second time. A write into a missing folder calls every
# observer's before_write twice in one tool call.


class _MkdirRetryTools(Tools):
    async def write(self, path: str, content: str) -> Result:
        try:
            target = self.sandbox.check(path)
        except Refused as refused:
            return Result(False, str(refused))
        data = content.encode("utf-8")
        await self.observer.before_write(target)
        try:
            with open(target, "wb") as handle:
                handle.write(data)
        except FileNotFoundError:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                return Result(False, f"write failed: {error.strerror or error}")
            return await self.write(path, content)
        except OSError as error:
            return Result(False, f"write failed: {error.strerror or error}")
        return await self._finish(target, f"wrote {len(data)} bytes to {path}")


# --------------------------------------------------------------------------- 6
# The join avoids "doubling" a blank line: when the text so far already ends with a
# blank line ("\n\n"), the next annotation is appended without the separator.


class _NoSepAfterBlankChain(Chain):
    def _join(self, notes: list[str]) -> str | None:
        if not notes:
            return None
        out = notes[0]
        for note in notes[1:]:
            out += ("" if out.endswith("\n\n") else SEPARATOR) + note
        return out


# --------------------------------------------------------------------------- 7
# Two code paths for a hook call, with and without a time limit; only the unlimited one
# has the generic ``except Exception``. Under a hook_time_limit, an observer that raises
# escapes the chain (and fails the tool call).


class _LimitedBranchUncontainedChain(Chain):
    async def _call_one(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        if limit is None:
            try:
                result: str | None = await getattr(observer, hook)(path)
                return result
            except Exception as error:
                self._failed(observer, f"{hook} failed: {error!r}")
                return None
        with anyio.move_on_after(limit) as scope:
            value: str | None = await getattr(observer, hook)(path)
        if scope.cancelled_caught:
            self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
            return None
        return value


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc9-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


#: name, rule, statement, chain class, tools class (as the outsider wrote them)
_SPECS: Sequence[tuple[str, str, str, type, type]] = [
    (
        "out-woc9-deny-bracket-literal",
        "WOC-SEAM-DENIED",
        "Deny globs are turned into regexes with re.escape and only * and ? un-escaped, so a "
        "[...] set in a deny pattern matches literal brackets and the paths it names are allowed.",
        Chain,
        _BracketLiteralTools,
    ),
    (
        "out-woc9-nested-shared-buffer",
        "WOC-JOIN",
        "A nested chain gathers its leaves' annotations in an instance attribute the outer "
        "chain reads afterwards, so two calls overlapping inside the same nested chain lose "
        "or swap each other's annotations.",
        _SharedBufferChain,
        Tools,
    ),
    (
        "out-woc9-nested-before-own-limit",
        "WOC-SLOW-BOUNDED",
        "In before_write a nested chain runs its leaves under the limit in force above it and "
        "ignores its own hook_time_limit, so a hung before_write in a nested chain with its "
        "own (shorter, or only) limit is held for the outer limit or not cut off at all.",
        _BeforeIgnoresOwnLimitChain,
        Tools,
    ),
    (
        "out-woc9-edit-nfc",
        "WOC-SEAM-FAILED-WRITE",
        "The edit tool NFC-normalises the whole file before matching and writes the normalised "
        "text back, so decomposed characters outside the old text change bytes while the edit "
        "reports success.",
        Chain,
        _NfcEditTools,
    ),
    (
        "out-woc9-mkdir-retry-rehooks",
        "WOC-ORDER-BEFORE",
        "A write into a missing folder creates the folder after open() fails and retries by "
        "calling write again, so every observer's before_write runs twice in one tool call.",
        Chain,
        _MkdirRetryTools,
    ),
    (
        "out-woc9-join-no-sep-after-blank",
        "WOC-JOIN-EXACT",
        "The join appends the next annotation without a separator when the text so far "
        'already ends with a blank line, instead of always adding exactly "\\n\\n".',
        _NoSepAfterBlankChain,
        Tools,
    ),
    (
        "out-woc9-limited-branch-uncontained",
        "WOC-FAIL-CONTAINED",
        "The hook call under a time limit has no generic except Exception (only the unlimited "
        "path does), so an observer that raises while a hook_time_limit is set escapes the chain.",
        _LimitedBranchUncontainedChain,
        Tools,
    ),
]


def _build(backend: str, *, name: str, chain_class: type, tools_class: type) -> PythonAdapter:
    return build(name=name, chain_class=chain_class, tools_class=tools_class, backend=backend)


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
    """Batch 9's outsider implementation with the named variant's bug."""
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
