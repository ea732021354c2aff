"""Seven broken variants of ``base8``, each with exactly one bug (outsider batch 8, woc8).

Written by batch 8's outsider from the docs alone and hashed before any run (the original
``b8woc_variants.py`` had sha256
90eb0ae13cacbe18f0644f234226ee2d5ac4fbec53f3079eb438d9781a835d14). Kept as written: only
imports and typing changed, and the ``VARIANTS`` list became the catalogue at the end (same
names, rules and statements; each variant's adapter is built by ``make_adapter`` as
before, now with a backend); labels changed after triage are in ``RELABELLED``, variants
found not to be bugs in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main 425fce3: three of seven killed properly
(``write-crlf-normalized`` by woc-seam-edit-keeps-crlf, ``deny-glob-parents`` by
woc-seam-denied-nested-folder-pattern, ``dangling-hook-path`` by
woc-seam-pre-hooks-get-link-target). Four survived: ``grandchild-root-limit`` (no
scenario had a middle chain with its own limit above a grandchild),
``nested-before-unlimited`` (no nested chain hung in before_write under an outer limit),
``edit-char-offset`` (no edit's old text held a multi-byte character) and
``annotation-cap`` (no annotation near 8000 characters). The contract page's "Outsider
mutants" section (batch 8) says what each one is, whether upstream demands the
behaviour, and what catches it now.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.outsiders.base8 import (
    Chain,
    Implementation,
    Refused,
    Result,
    Tools,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --- 1. a grandchild chain inherits the root's limit, not its parent's own ---------------


class RootLimitChain(Chain):
    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit(inherited)
        # BUG: what a nested chain hands further down is the limit it was given (the
        # root's), falling back to its own only when it was given none.
        down = inherited if inherited is not None else self.hook_time_limit
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, down))
                continue
            note = await self._one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(note, str) and note != "":
                notes.append(note)
        return notes


# --- 2. before_write of a nested chain goes through its public method ------------------


class PublicBeforeChain(Chain):
    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                if hook == "after_write":
                    notes.extend(await observer._run(hook, path, limit))
                else:
                    # BUG: nothing to collect, so just call the nested chain as an
                    # observer; it then runs without the limit in force above it.
                    await observer.before_write(path)
                continue
            note = await self._one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(note, str) and note != "":
                notes.append(note)
        return notes


# --- 3. edit splices bytes with a character length -------------------------------------


class ByteSpliceTools(Tools):
    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        if not old:
            return Result(False, "edit failed: empty old text")
        try:
            raw = target.read_bytes()
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return Result(False, "edit failed: file is not UTF-8")
        count = text.count(old)
        if count == 0:
            return Result(False, "edit failed: old text not found")
        if count > 1:
            return Result(False, f"edit failed: old text occurs {count} times")
        await self.chain.before_write(target)
        # Work on the bytes so that line endings and a BOM stay exactly as they were.
        index = raw.find(old.encode("utf-8"))
        # BUG: len(old) counts characters, not the bytes of the match.
        updated = raw[:index] + new.encode("utf-8") + raw[index + len(old) :]
        try:
            with open(target, "wb") as handle:
                handle.write(updated)
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        return await self._after(target, f"edited {path}")


# --- 4. write normalises CRLF from the model -------------------------------------------


class LfWriteTools(Tools):
    async def write(self, path: str, content: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        await self.chain.before_write(target)
        # BUG: "models sometimes emit Windows line endings"; normalised to LF.
        data = content.replace("\r\n", "\n").encode("utf-8")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return Result(False, f"write failed: {error.strerror or error}")
        return await self._after(target, f"wrote {len(data)} bytes to {path}")


# --- 5. each annotation is capped to protect the context window ------------------------

ANNOTATION_CAP = 8000


class CappedChain(Chain):
    def _join(self, notes: list[str]) -> str | None:
        # BUG: a long annotation is cut short (and marked) instead of kept verbatim.
        kept = [
            note if len(note) <= ANNOTATION_CAP else note[:ANNOTATION_CAP] + "\n[... truncated]"
            for note in notes
        ]
        return "\n\n".join(kept) if kept else None


# --- 6. deny patterns match the path, or a literal folder prefix -----------------------


class PrefixDenyTools(Tools):
    def check(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads out of the workspace") from None
        if str(inside) in ("", "."):
            raise Refused(f"refused: {rel} is the workspace itself")
        posix = inside.as_posix()
        for pattern in self.deny:
            folder = pattern.rstrip("/")
            # BUG: parents are tested only as a literal prefix, so a glob that names a
            # folder (``*/node_modules``, ``cache-?``) never refuses what lies inside it.
            if fnmatch.fnmatchcase(posix, folder) or posix.startswith(folder + "/"):
                raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved


# --- 7. the path shown to observers is canonicalised only when it exists ---------------


class ExistsHookPathTools(Tools):
    def _observed(self, rel: str) -> Path:
        p = self.root / rel
        # BUG: exists() follows links, so a dangling link (or a new file under a linked
        # folder) is shown to observers under its own name, not where it leads.
        return p.resolve() if p.exists() else Path(os.path.abspath(p))

    async def write(self, path: str, content: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        observed = self._observed(path)
        await self.chain.before_write(observed)
        data = content.encode("utf-8")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return Result(False, f"write failed: {error.strerror or error}")
        annotation = await self.chain.after_write(observed)
        return Result(True, f"wrote {len(data)} bytes to {path}", annotation)


# --- registry --------------------------------------------------------------------------


def _impl(chain_class: type = Chain, tools_class: type = Tools) -> Any:
    impl = Implementation()
    impl.chain_class = chain_class
    impl.tools_class = tools_class
    return impl


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc8-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


#: name, rule, statement, chain class, tools class (as the outsider wrote them)
_SPECS: Sequence[tuple[str, str, str, type, type]] = [
    (
        "out-woc8-grandchild-root-limit",
        "WOC-SLOW-BOUNDED",
        "A nested chain with its own limit passes the outer limit (not its own) on to the "
        "chains nested in it, so a grandchild's leaves run under the root's limit.",
        RootLimitChain,
        Tools,
    ),
    (
        "out-woc8-nested-before-unlimited",
        "WOC-SLOW-BOUNDED",
        "For before_write a nested chain is called through its public method, so its "
        "leaves lose the outer chain's limit and a hung one holds the write indefinitely.",
        PublicBeforeChain,
        Tools,
    ),
    (
        "out-woc8-edit-char-offset",
        "WOC-SEAM-FAILED-WRITE",
        "The edit tool splices bytes but skips len(old) characters, so an old text with "
        "non-ASCII characters leaves some of its bytes behind while reporting success.",
        Chain,
        ByteSpliceTools,
    ),
    (
        "out-woc8-write-crlf-normalized",
        "WOC-SEAM-FAILED-WRITE",
        "The write tool turns CRLF in the content into LF, so a successful write does not "
        "put the bytes it was asked to write on disk.",
        Chain,
        LfWriteTools,
    ),
    (
        "out-woc8-annotation-cap",
        "WOC-JOIN",
        "The chain truncates any annotation longer than 8000 characters and adds a marker, "
        "so a long annotation does not appear in the result as it was written.",
        CappedChain,
        Tools,
    ),
    (
        "out-woc8-deny-glob-parents",
        "WOC-SEAM-DENIED",
        "Deny patterns are matched against the whole path with fnmatch but against parent "
        "folders only as a literal prefix, so a glob naming a folder lets writes inside it "
        "through.",
        Chain,
        PrefixDenyTools,
    ),
    (
        "out-woc8-dangling-hook-path",
        "WOC-SEAM-PRE",
        "The write tool gives its hooks path.resolve() only when path.exists(), so a write "
        "through a dangling link (or a new file under a linked folder) shows observers the "
        "link's name instead of the resolved target.",
        Chain,
        ExistsHookPathTools,
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


def implementation(name: str) -> Implementation:
    """Batch 8's outsider implementation with the named variant's bug."""
    _, _, _, chain, tools = next(s for s in _SPECS if s[0] == name)
    impl: Implementation = _impl(chain, tools)
    return impl


for _name, _, _, _chain, _tools in _SPECS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(
        _build, "asyncio", name=_name, chain_class=_chain, tools_class=_tools
    )
del _name, _chain, _tools
