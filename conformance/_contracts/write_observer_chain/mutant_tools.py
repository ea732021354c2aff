"""Seam mutants: the reference write tools, calling the chain at the wrong moment or
reporting the wrong thing, one broken WOC-SEAM-* rule each. The registry is in
``mutants.py``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path

from seamspec.conformance._contracts.write_observer_chain.mutant_chains import (
    FailureRecordingChain,
)
from seamspec.reference import ToolResult, WriteObserver, WriteObserverChain, WriteTools
from seamspec.reference._write_observer_chain.write_path import SandboxRefused

__all__ = ["TOOL_MUTANTS"]


class _DenyCheckedLate(WriteTools):
    """Checks containment, calls ``before_write``, and only then applies the deny rules.

    (Refusing escaping paths first keeps the mutant from ever reading outside the sandbox.)
    """

    def __init__(
        self, root: Path, observer: WriteObserver | None = None, *, deny: Sequence[str] = ()
    ) -> None:
        super().__init__(root, observer)
        self._deny_only = WriteTools(root, deny=deny)

    async def _before(self, target: Path) -> None:
        await super()._before(target)
        self._deny_only._check(target.relative_to(self.root).as_posix())

    async def _mutate(self, target: Path, rel: str, data: bytes, message: str) -> ToolResult:
        return await _refusal_as_result(super()._mutate(target, rel, data, message))

    async def delete(self, path: str) -> ToolResult:
        return await _refusal_as_result(super().delete(path))


async def _refusal_as_result(operation: Awaitable[ToolResult]) -> ToolResult:
    try:
        return await operation
    except SandboxRefused as refusal:
        return ToolResult(False, f"refused: {refusal}")


class _BeforeAfterMutation(WriteTools):
    """Calls ``before_write`` only once the file is written, just before ``after_write``."""

    async def _before(self, target: Path) -> None:
        return None

    async def _after(self, target: Path) -> str | None:
        await super()._before(target)
        return await super()._after(target)


class _AfterBeforeMutation(WriteTools):
    """Runs both hooks before the mutation, so ``after_write`` sees the pre-image."""

    _early: str | None = None

    async def _before(self, target: Path) -> None:
        await super()._before(target)
        self._early = await super()._after(target)

    async def _after(self, target: Path) -> str | None:
        annotation, self._early = self._early, None
        return annotation


@dataclass(frozen=True)
class _NoBlankLineResult(ToolResult):
    """Appends the annotation after a single newline instead of a blank line."""

    @property
    def text(self) -> str:
        return f"{self.message}\n{self.annotation}" if self.annotation else self.message


class _NoBlankLine(WriteTools):
    """Appends the chain's annotation to the tool's message with ``"\\n"``."""

    async def write(self, path: str, content: str | bytes) -> ToolResult:
        return _no_blank_line(await super().write(path, content))

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return _no_blank_line(await super().edit(path, old, new))

    async def delete(self, path: str) -> ToolResult:
        return _no_blank_line(await super().delete(path))


def _no_blank_line(result: ToolResult) -> ToolResult:
    return _NoBlankLineResult(result.ok, result.message, result.annotation)


class _AfterFailedWrite(WriteTools):
    """Calls ``after_write`` even when the mutation failed (as if in a ``finally``).

    The annotation is thrown away and the error still reported: only the call is wrong.
    """

    async def _mutate(self, target: Path, rel: str, data: bytes, message: str) -> ToolResult:
        result = await super()._mutate(target, rel, data, message)
        if not result.ok:
            await self._after(target)
        return result

    async def delete(self, path: str) -> ToolResult:
        result = await super().delete(path)
        if result.message.startswith("delete failed"):  # refusals stay hook-free
            await self._after(self._check(path)[0])
        return result


class _FailureIsError(WriteTools):
    """Reports a write during which an observer failed as a failed write (``ok=False``)."""

    async def write(self, path: str, content: str | bytes) -> ToolResult:
        return await self._blamed(super().write(path, content))

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return await self._blamed(super().edit(path, old, new))

    async def delete(self, path: str) -> ToolResult:
        return await self._blamed(super().delete(path))

    async def _blamed(self, operation: Awaitable[ToolResult]) -> ToolResult:
        chain = self.observer
        assert isinstance(chain, FailureRecordingChain), "built with FailureRecordingChain"
        known = len(chain.failures)
        result = await operation
        if not result.ok or len(chain.failures) == known:
            return result
        blame = f"write failed: {chain.failures[-1].describe()}"
        return ToolResult(False, blame, result.annotation)


@dataclass(frozen=True)
class _NoAnnotationResult(ToolResult):
    """A result whose text never carries the annotation."""

    @property
    def text(self) -> str:
        return self.message


class _AnnotationDropped(WriteTools):
    """Calls both hooks at the right moments but never adds the annotation to the text."""

    async def write(self, path: str, content: str | bytes) -> ToolResult:
        return _without_annotation(await super().write(path, content))

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return _without_annotation(await super().edit(path, old, new))

    async def delete(self, path: str) -> ToolResult:
        return _without_annotation(await super().delete(path))


def _without_annotation(result: ToolResult) -> ToolResult:
    return _NoAnnotationResult(result.ok, result.message, result.annotation)


class _LinksNotResolved(WriteTools):
    """Checks the path as written, without resolving symbolic links first.

    Containment and the deny rules see ``docs/link.md`` and are satisfied; the mutation then
    follows the link wherever it leads, into a denied folder or out of the workspace.
    """

    def _check(self, path: str) -> tuple[Path, str]:
        rel = posixpath.normpath(path) if path else ""
        if (
            not rel
            or "\0" in rel
            or posixpath.isabs(rel)
            or rel in (".", "..")
            or rel.startswith("../")
        ):
            raise SandboxRefused(f"{path!r} is not a path inside the workspace")
        for pattern in self._deny:
            if self._denied(rel, pattern):
                raise SandboxRefused(f"{path} matches the deny rule {pattern!r}")
        return self.root / rel, rel


class _SameSizeSkipped(WriteTools):
    """Skips the disk write when the new bytes have the old file's size ("no change")."""

    async def _mutate(self, target: Path, rel: str, data: bytes, message: str) -> ToolResult:
        if target.is_file() and target.stat().st_size == len(data):
            await self._before(target)
            return ToolResult(True, message, await self._after(target))
        return await super()._mutate(target, rel, data, message)


@dataclass(frozen=True)
class _AnnotationFirstResult(ToolResult):
    """A result whose text puts the annotation before the tool's own message."""

    @property
    def text(self) -> str:
        return f"{self.annotation}\n\n{self.message}" if self.annotation else self.message


@dataclass(frozen=True)
class _MessageReplacedResult(ToolResult):
    """A result whose text is the annotation alone when there is one."""

    @property
    def text(self) -> str:
        return self.annotation or self.message


class _Retexted(WriteTools):
    """Tools whose results render their text with :attr:`result_type`."""

    result_type: type[ToolResult] = ToolResult

    async def write(self, path: str, content: str | bytes) -> ToolResult:
        return self._retext(await super().write(path, content))

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        return self._retext(await super().edit(path, old, new))

    async def delete(self, path: str) -> ToolResult:
        return self._retext(await super().delete(path))

    def _retext(self, result: ToolResult) -> ToolResult:
        return self.result_type(result.ok, result.message, result.annotation)


class _AnnotationFirst(_Retexted):
    """Puts the chain's annotation first, then a blank line, then the tool's message."""

    result_type = _AnnotationFirstResult


class _MessageReplaced(_Retexted):
    """Shows the chain's annotation instead of the tool's message when there is one."""

    result_type = _MessageReplacedResult


class _EditVerifiedByAbsence(WriteTools):
    """Checks an edit by reading the file back: if the old text is still there, it "failed".

    An edit whose new text contains the old one is written, then reported as an error
    (after_write skipped), although the file holds exactly what the edit asked for.
    """

    _old: str | None = None

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        self._old = old
        try:
            return await super().edit(path, old, new)
        finally:
            self._old = None

    async def _mutate(self, target: Path, rel: str, data: bytes, message: str) -> ToolResult:
        if self._old is None:
            return await super()._mutate(target, rel, data, message)
        await self._before(target)
        target.write_bytes(data)
        if self._old in target.read_text(encoding="utf-8"):
            return ToolResult(False, f"edit failed: the old text is still in {rel}")
        return ToolResult(True, message, await self._after(target))


#: (name, rule, statement, tools class, chain class) of every seam mutant, in catalogue order.
class _RollbackOnCancel(WriteTools):
    """Puts the file's old bytes back when its caller is cancelled, then re-raises.

    It returns no result, so only the file shows it undid a mutation (decision 7).
    """

    async def _mutate(self, target: Path, rel: str, data: bytes, message: str) -> ToolResult:
        original = target.read_bytes() if target.is_file() else None
        try:
            return await super()._mutate(target, rel, data, message)
        except BaseException:
            if original is None:
                target.unlink(missing_ok=True)
            else:
                target.write_bytes(original)
            raise


class _MutatesWhenCancelled(WriteTools):
    """Finishes the mutation when its caller is cancelled in ``before_write``, then
    re-raises ("the write was already decided")."""

    async def _mutate(self, target: Path, rel: str, data: bytes, message: str) -> ToolResult:
        try:
            await self._before(target)
        except BaseException:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            raise
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error}")
        return ToolResult(True, message, await self._after(target))


TOOL_MUTANTS: tuple[tuple[str, str, str, type[WriteTools], type[WriteObserverChain]], ...] = (
    ("woc-seam-deny-late", "WOC-SEAM-DENIED",
     "applies the deny rules after before_write, so refused paths reach observers",
     _DenyCheckedLate, WriteObserverChain),
    ("woc-seam-links-not-resolved", "WOC-SEAM-DENIED",
     "checks the path as written, so a symbolic link leads the write into a denied folder "
     "or out of the workspace", _LinksNotResolved, WriteObserverChain),
    ("woc-seam-before-late", "WOC-SEAM-PRE",
     "calls before_write after the mutation (it sees the new bytes)", _BeforeAfterMutation,
     WriteObserverChain),
    ("woc-seam-after-early", "WOC-SEAM-POST",
     "calls after_write before the mutation (it sees the pre-image)", _AfterBeforeMutation,
     WriteObserverChain),
    ("woc-seam-annotation-dropped", "WOC-SEAM-POST",
     "never adds the chain's annotation to the tool's result text", _AnnotationDropped,
     WriteObserverChain),
    ("woc-seam-no-blank-line", "WOC-SEAM-APPEND",
     'appends the annotation to the tool message with "\\n", not "\\n\\n"', _NoBlankLine,
     WriteObserverChain),
    ("woc-seam-annotation-first", "WOC-SEAM-APPEND",
     "puts the annotation before the tool's own message", _AnnotationFirst, WriteObserverChain),
    ("woc-seam-message-replaced", "WOC-SEAM-APPEND",
     "shows the annotation instead of the tool's message when there is one", _MessageReplaced,
     WriteObserverChain),
    ("woc-seam-edit-verified-by-absence", "WOC-SEAM-FAILED-WRITE",
     "reports an edit whose new text contains the old one as failed, after writing it",
     _EditVerifiedByAbsence, WriteObserverChain),
    ("woc-seam-after-failed-write", "WOC-SEAM-FAILED-WRITE",
     "calls after_write even when the mutation failed", _AfterFailedWrite, WriteObserverChain),
    ("woc-seam-same-size-skipped", "WOC-SEAM-FAILED-WRITE",
     "skips the disk write when the new content has the old file's size, yet reports success",
     _SameSizeSkipped, WriteObserverChain),
    ("woc-cancel-tool-rolls-back", "WOC-CANCEL",
     "puts the old bytes back when the tool's caller is cancelled after the mutation, then "
     "lets the cancellation out", _RollbackOnCancel, WriteObserverChain),
    ("woc-cancel-tool-mutates-anyway", "WOC-CANCEL",
     "still makes the mutation when the tool's caller is cancelled inside before_write, then "
     "lets the cancellation out", _MutatesWhenCancelled, WriteObserverChain),
    ("woc-seam-failure-is-error", "WOC-SEAM-NO-ERROR",
     "reports a write during which an observer failed as ok=False", _FailureIsError,
     FailureRecordingChain),
)  # fmt: skip
