"""Sweep 13's kit mutants: bugs nobody had written yet, found by walking the rules' edges.

Each is the reference (its chain or its write tools) with one plausible mistake of the
kind a harness author who reads only the contract page could make, breaking one rule.
None was caught by the suite before sweep 13; each docstring says what it does wrong and
the contract page's "Sweep 13" section names the scenario that now catches it. The
registry is in ``mutants.py``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from seamspec.conformance._contracts.write_observer_chain.mutant_chains import SteppedChain
from seamspec.reference import (
    ObserverFailure,
    ToolResult,
    WriteObserver,
    WriteObserverChain,
    WriteTools,
)
from seamspec.reference._write_observer_chain.chain import Hook
from seamspec.reference._write_observer_chain.write_path import SandboxRefused

__all__ = ["SWEEP13_MUTANTS"]


class _RelpathDotDotContainment(WriteTools):
    """Tests containment with the common idiom ``os.path.relpath(target, root)
    .startswith("..")``, so a file or folder whose *name* starts with two dots
    (``..cache/x``, ``..notes.txt``) is taken for a path that leaves the root."""

    def _check(self, path: str) -> tuple[Path, str]:
        target, rel = super()._check(path)
        if os.path.relpath(target, self.root).startswith(".."):
            raise SandboxRefused(f"{path} is outside the workspace")
        return target, rel


class _DenyCaseInsensitive(WriteTools):
    """Matches deny patterns case-insensitively ("for case-insensitive file systems"), so
    ``build`` also refuses ``Build/`` and ``*.lock`` refuses ``Cargo.LOCK``."""

    @staticmethod
    def _denied(rel: str, pattern: str) -> bool:
        prefixes = [rel, *(p.as_posix() for p in PurePosixPath(rel).parents)]
        return any(fnmatchcase(p.lower(), pattern.lower()) for p in prefixes if p != ".")


class _DenyAsWrittenToo(WriteTools):
    """Applies the deny patterns to the path as written as well as to where it resolves
    ("belt and braces"), so a link that lies in a denied folder but leads to an allowed
    file is refused."""

    def _check(self, path: str) -> tuple[Path, str]:
        target, rel = super()._check(path)
        written = os.path.normpath(path)
        for pattern in self._deny:
            if self._denied(written, pattern):
                raise SandboxRefused(f"{path} matches the deny rule {pattern!r}")
        return target, rel


class _PathTrimmed(WriteTools):
    """Trims the tool path it is given (as is often done to a model's arguments), so
    ``"notes.txt "`` writes the twin ``notes.txt`` and reports a success."""

    async def write(self, path: str, content: str | bytes) -> ToolResult:
        return await super().write(path.strip(), content)

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return await super().edit(path.strip(), old, new)

    async def delete(self, path: str) -> ToolResult:
        return await super().delete(path.strip())


class _NewTextToFileEndings(WriteTools):
    """Turns the new text's CRLF into LF when the file has no CRLF of its own ("keep the
    file's line endings"), so an edit that asks for CRLF in an LF file writes LF."""

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target, _rel = self._check(path)
            lf_only = b"\r\n" not in target.read_bytes()
        except (SandboxRefused, OSError):
            lf_only = False
        return await super().edit(path, old, new.replace("\r\n", "\n") if lf_only else new)


def _loose_match(text: str, old: str) -> re.Match[str] | None:
    """The one place ``old`` occurs when trailing blanks of each line are ignored."""
    lines = [re.escape(line.rstrip(" \t")) for line in old.split("\n")]
    found = list(re.finditer(r"[ \t]*\n".join(lines), text))
    return found[0] if len(found) == 1 else None


class _EditIgnoresTrailingBlanks(WriteTools):
    """When the old text does not occur, retries it with each line's trailing spaces and
    tabs ignored (a "forgiving" match for models that copy whitespace wrong), and edits
    what that finds."""

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target, rel = self._check(path)
            text = target.read_bytes().decode("utf-8")
        except (SandboxRefused, OSError, UnicodeDecodeError):
            return await super().edit(path, old, new)
        if not old or text.count(old) != 0:
            return await super().edit(path, old, new)
        match = _loose_match(text, old)
        if match is None:
            return await super().edit(path, old, new)
        data = (text[: match.start()] + new + text[match.end() :]).encode("utf-8")
        return await self._mutate(target, rel, data, f"edited {rel}")


class _RepeatSuppressed(SteppedChain):
    """Drops an annotation identical to the one the same observer gave on the chain's
    previous call ("the model has already been told"), so a finding that is still true
    on the next write vanishes from its result."""

    def __init__(
        self,
        observers: Sequence[WriteObserver],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[ObserverFailure], None] | None = None,
    ) -> None:
        super().__init__(observers, hook_time_limit=hook_time_limit, on_failure=on_failure)
        self._last: dict[int, str | None] = {}

    async def _contained(
        self, observer: WriteObserver, hook: Hook, path: Path, limit: float
    ) -> str | None:
        annotation = await super()._contained(observer, hook, path, limit)
        if hook != "after_write" or isinstance(observer, WriteObserverChain):
            return annotation
        previous, self._last[id(observer)] = self._last.get(id(observer)), annotation
        return None if annotation and annotation == previous else annotation


#: (name, rule, statement, tools class, chain class) of every sweep 13 mutant.
SWEEP13_MUTANTS: tuple[tuple[str, str, str, type[WriteTools], type[WriteObserverChain]], ...] = (
    ("woc-seam-relpath-dotdot-containment", "WOC-SEAM-DENIED",
     "tests containment with relpath(...).startswith('..'), refusing names that start "
     "with two dots", _RelpathDotDotContainment, WriteObserverChain),
    ("woc-seam-deny-case-insensitive", "WOC-SEAM-DENIED",
     "matches deny patterns case-insensitively, refusing Build/ under 'build'",
     _DenyCaseInsensitive, WriteObserverChain),
    ("woc-seam-edit-ignores-trailing-blanks", "WOC-SEAM-FAILED-WRITE",
     "an old text that does not occur is retried with trailing blanks of each line "
     "ignored, and what that finds is edited", _EditIgnoresTrailingBlanks,
     WriteObserverChain),
    ("woc-join-repeat-suppressed", "WOC-JOIN",
     "drops an annotation identical to the one the same observer gave on the previous "
     "call", WriteTools, _RepeatSuppressed),
    ("woc-seam-deny-as-written-too", "WOC-SEAM-DENIED",
     "applies the deny patterns to the path as written too, refusing a link in a denied "
     "folder that leads to an allowed file", _DenyAsWrittenToo, WriteObserverChain),
    ("woc-seam-path-trimmed", "WOC-SEAM-FAILED-WRITE",
     "trims the tool path, so a name with a trailing space writes its twin and reports "
     "a success", _PathTrimmed, WriteObserverChain),
    ("woc-seam-edit-new-text-to-file-endings", "WOC-SEAM-FAILED-WRITE",
     "turns the new text's CRLF into LF when the file has none", _NewTextToFileEndings,
     WriteObserverChain),
)  # fmt: skip
