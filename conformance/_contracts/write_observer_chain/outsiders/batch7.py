"""Seven broken variants of ``base7``, each with exactly one bug (outsider batch 7, woc7).

Written by batch 7's outsider from the docs alone and hashed before any run (the original
``b7woc_variants.py`` had sha256
36b1158d1e74e5e0835dda32eecb9bc12259de58066fd43d5040224efa096a1f). Kept as written: only
imports and typing changed, and the ``VARIANTS`` list became the catalogue at the end (same
names, rules and statements; each variant's adapter is built by ``make_adapter`` as
before, now with a backend); labels changed after triage are in ``RELABELLED``, variants
found not to be bugs in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main 9c7b1af (128 scenarios): four of seven killed properly
(``limit-after-write-only``, ``skip-after-when-before-failed``,
``tool-drops-blank-annotation``, ``root-itself-allowed``). Two survived under both
profiles (``edit-regex-escapes``: no edit's new text held a backslash;
``annotation-crlf-normalized``: no annotation held a carriage return);
``error-word-fails-tool`` was failed only by ``woc-builtin-formatter-hang-under-chain-limit``,
which cites WOC-SEAM-NO-ERROR but whose oracle findings did not name it (timing under
load: it passes the variant on rerun). The contract page's "Outsider mutants" section
(batch 7) says what each one is, whether upstream demands the behaviour, and what
catches it now.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.outsiders.base7 import (
    SEP,
    Chain,
    Implementation,
    Refused,
    Result,
    Tools,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --------------------------------------------------------------------------- 1
# edit builds its replacement with re.sub, so backslashes in the new text are
# interpreted as regex replacement escapes ("\\n" becomes a newline, "\\1" a group).


class RegexEditTools(Tools):
    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        if old == "":
            return Result(False, "edit failed: the old text is empty")
        try:
            text = target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            return Result(False, f"edit failed: {getattr(error, 'strerror', None) or error}")
        pattern = re.compile(re.escape(old))
        count = len(pattern.findall(text))  # non-overlapping, like str.count
        if count == 0:
            return Result(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return Result(False, f"edit failed: the old text occurs {count} times in {path}")
        await self._before(target)
        try:
            text = target.read_bytes().decode("utf-8")
            if len(pattern.findall(text)) != 1:
                return Result(False, f"edit failed: {path} changed under the edit")
            with open(target, "wb") as handle:
                handle.write(pattern.sub(new, text, count=1).encode("utf-8"))  # BUG
        except (OSError, UnicodeDecodeError) as error:
            return Result(False, f"edit failed: {getattr(error, 'strerror', None) or error}")
        annotation = await self._after(target)
        return Result(True, f"edited {path}", annotation)


class ImplRegexEdit(Implementation):
    tools_class = RegexEditTools


# --------------------------------------------------------------------------- 2
# the chain normalises Windows line endings in what observers say (a formatter run
# through a Windows tool prints CRLF diffs), so annotations are no longer verbatim.


class CrlfChain(Chain):
    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        ok, value = await super()._one(observer, hook, path, limit)
        if isinstance(value, str):
            value = value.replace("\r\n", "\n")  # BUG
        return ok, value


class ImplCrlf(Implementation):
    chain_class = CrlfChain


# --------------------------------------------------------------------------- 3
# the per-hook time limit is applied to after_write only ("before_write only
# reads the old bytes, it cannot hang"), so a hung before_write holds the write.


class AfterOnlyLimitChain(Chain):
    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        if hook == "before_write" and not isinstance(observer, Chain):
            limit = None  # BUG
        return await super()._one(observer, hook, path, limit)


class ImplAfterOnlyLimit(Implementation):
    chain_class = AfterOnlyLimitChain


# --------------------------------------------------------------------------- 4
# an observer whose before_write failed for a path is not asked for its
# after_write of that path ("it captured nothing, so it has nothing to pair with").


class PairedChain(Chain):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._failed_before: dict[str, set[int]] = {}

    async def _run(self, hook: str, path: Path, inherited: float | None) -> str | None:
        limit = self._limit(inherited)
        notes: list[str] = []
        key = str(path)
        if hook == "before_write":
            self._failed_before[key] = set()
        skip = self._failed_before.pop(key, set()) if hook == "after_write" else set()
        for observer in self.observers:
            if id(observer) in skip:  # BUG
                continue
            ok, value = await self._one(observer, hook, path, limit)
            if hook == "before_write" and not ok:
                self._failed_before[key].add(id(observer))
            if ok and hook == "after_write" and isinstance(value, str) and value != "":
                notes.append(value)
        if hook == "before_write" or not notes:
            return None
        return SEP.join(notes)


class ImplPaired(Implementation):
    chain_class = PairedChain


# --------------------------------------------------------------------------- 5
# the tools flag a result as failed when the observers' annotation reports an
# error ("make the model notice that its file does not compile").


class ErrorWordTools(Tools):
    @staticmethod
    def _flag(result: Result) -> Result:
        if result.ok and result.annotation is not None and "error" in result.annotation.lower():
            result.ok = False  # BUG
        return result

    async def write(self, path: str, content: str) -> Result:
        return self._flag(await super().write(path, content))

    async def edit(self, path: str, old: str, new: str) -> Result:
        return self._flag(await super().edit(path, old, new))

    async def delete(self, path: str) -> Result:
        return self._flag(await super().delete(path))


class ImplErrorWord(Implementation):
    tools_class = ErrorWordTools


# --------------------------------------------------------------------------- 6
# the tools append the annotation only when it has visible text
# (`if annotation and annotation.strip()`), so a whitespace-only one is dropped.


class BlankDropTools(Tools):
    async def _after(self, path: Path) -> str | None:
        annotation = await super()._after(path)
        if annotation is not None and not annotation.strip():
            return None  # BUG
        return annotation


class ImplBlankDrop(Implementation):
    tools_class = BlankDropTools


# --------------------------------------------------------------------------- 7
# the sandbox check forgets that a path resolving to the root itself is refused:
# `relative_to` succeeds with no parts, no deny pattern matches, the hooks run.


class RootAllowedTools(Tools):
    def check(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads out of the workspace") from None
        parts = inside.parts  # BUG: no refusal of the root itself when parts is empty
        import fnmatch

        for n in range(len(parts), 0, -1):
            candidate = "/".join(parts[:n])
            for pattern in self.deny:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved


class ImplRootAllowed(Implementation):
    tools_class = RootAllowedTools


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc7-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


#: name, rule, statement, the implementation class with the bug (as the outsider wrote them)
_SPECS: Sequence[tuple[str, str, str, type[Implementation]]] = [
    (
        "out-woc7-edit-regex-escapes",
        "WOC-SEAM-FAILED-WRITE",
        "The edit tool replaces with re.sub, so backslash escapes in the new text are "
        "interpreted and a reported success leaves bytes that were not asked for.",
        ImplRegexEdit,
    ),
    (
        "out-woc7-annotation-crlf-normalized",
        "WOC-JOIN-EXACT",
        "The chain turns CRLF into LF inside every annotation, so annotations are not "
        "kept verbatim.",
        ImplCrlf,
    ),
    (
        "out-woc7-limit-after-write-only",
        "WOC-SLOW-BOUNDED",
        "The per-hook time limit is applied to after_write only, so a hung before_write "
        "holds the call until an outer watchdog gives up.",
        ImplAfterOnlyLimit,
    ),
    (
        "out-woc7-skip-after-when-before-failed",
        "WOC-ORDER-AFTER",
        "An observer whose before_write raised for a path is skipped in the next "
        "after_write of that path, so after_write does not call every observer.",
        ImplPaired,
    ),
    (
        "out-woc7-error-word-fails-tool",
        "WOC-SEAM-NO-ERROR",
        "A tool reports ok=false when the observers' annotation contains the word "
        "'error', turning a successful write into a tool error.",
        ImplErrorWord,
    ),
    (
        "out-woc7-tool-drops-blank-annotation",
        "WOC-SEAM-APPEND",
        "The tools append the chain's annotation only when it has visible text, so a "
        "whitespace-only annotation never reaches the result text.",
        ImplBlankDrop,
    ),
    (
        "out-woc7-root-itself-allowed",
        "WOC-SEAM-DENIED",
        "The sandbox check allows a path that resolves to the root itself, so a tool "
        "call on it runs before_write before failing.",
        ImplRootAllowed,
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
    """Batch 7's outsider implementation with the named variant's bug."""
    cls = next(c for n, _, _, c in _SPECS if n == name)
    return cls()


for _name in VARIANTS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(
        _build, "asyncio", name=_name, implementation=type(implementation(_name))
    )
del _name
