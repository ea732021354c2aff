"""The write path: the file-mutating tools and the one place they call the observer.

The WOC contract has rules about the chain and rules about the *seam* (WOC-SEAM-*): when the
tools call the hooks relative to the sandbox check and the mutation. Keeping the tools here,
separate from the chain, lets the kit test each side on its own, and gives implementers one
short, readable model of where the two hook calls belong.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

import anyio.to_thread

from seamspec.reference._write_observer_chain.chain import (
    ANNOTATION_SEPARATOR,
    Hook,
    ObserverFailure,
    ObserverFailureWarning,
    WriteObserver,
)

__all__ = ["SandboxRefused", "ToolResult", "WriteTools", "write_bytes_durably"]


@dataclass(frozen=True)
class ToolResult:
    """What a file tool hands back to the model.

    ``message`` and ``annotation`` are kept apart so that a checker can tell the tool's own
    words from what the observers added; :attr:`text` is the single string the model sees.
    """

    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        """The append rule: one blank line between the tool's message and the annotation.

        The same separator as the chain's join (WOC-JOIN), so a result reads as paragraphs:
        the tool's message, then each observer's contribution. No annotation adds nothing.
        """
        if not self.annotation:
            return self.message
        return f"{self.message}{ANNOTATION_SEPARATOR}{self.annotation}"


class SandboxRefused(Exception):
    """A path the tools will not touch; raised and caught inside :class:`WriteTools`."""


def write_bytes_durably(path: Path, data: bytes) -> None:
    """Overwrite ``path`` with ``data`` and fsync, so "wrote" means "on disk".

    Observers that rewrite files (formatters) and the checkpoint's restore use this too, so
    every byte the reference writes has the same durability as the tool's own write.
    """
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _create_and_write(path: Path, data: bytes) -> None:
    # A regular file where a parent directory should be makes mkdir say "File exists";
    # letting open() fail instead gives the clearer "Not a directory".
    with contextlib.suppress(FileExistsError):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_durably(path, data)


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def _report(observer: WriteObserver, hook: Hook, error: Exception) -> None:
    """Warn about an observer that raised straight into the tools.

    Reached only when the observer is not a chain (a chain contains its own failures).
    Under ``-W error`` the warning itself raises; that must not fail the write either.
    """
    failure = ObserverFailure(observer, hook, error, timed_out=False)
    with contextlib.suppress(Exception):
        warnings.warn(ObserverFailureWarning(failure.describe()), stacklevel=3)


class WriteTools:
    """``write``, ``edit`` and ``delete`` confined to ``root``, with one observer seam.

    Every operation follows the same order: sandbox check, (edit only) compute the new
    text, ``before_write``, the real mutation, ``after_write``. Anything refused or
    impossible before the mutation calls no hook at all, because nothing is about to
    change; a mutation that fails skips ``after_write``, because nothing changed.

    Args:
        root: the directory the tools may change; it must exist.
        observer: normally a :class:`WriteObserverChain`; ``None`` means no hooks.
        deny: ``fnmatch`` globs (case-sensitive; ``*`` also matches ``/``) matched against
            the POSIX path relative to ``root`` after resolving symlinks and ``..``, and
            against each of its parent directories, so ``".git"`` also protects
            ``".git/config"`` and a link that leads into ``.git`` is refused too. Patterns
            are anchored at the root: ``"*/node_modules"`` reaches nested folders.
    """

    def __init__(
        self, root: Path, observer: WriteObserver | None = None, *, deny: Sequence[str] = ()
    ) -> None:
        resolved = Path(root).resolve()
        if not resolved.is_dir():
            raise ValueError(f"WriteTools root must be an existing directory, got {root!s}")
        self._root = resolved
        self._observer = observer
        self._deny = tuple(deny)

    @property
    def root(self) -> Path:
        return self._root

    @property
    def observer(self) -> WriteObserver | None:
        return self._observer

    async def write(self, path: str, content: str | bytes) -> ToolResult:
        """Create or overwrite a file (creating parent directories)."""
        try:
            target, rel = self._check(path)
        except SandboxRefused as refusal:
            return ToolResult(False, f"refused: {refusal}")
        try:
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        except UnicodeEncodeError:
            return ToolResult(False, "write failed: the content cannot be encoded as UTF-8")
        return await self._mutate(target, rel, data, f"wrote {len(data)} bytes to {rel}")

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        """Replace the single occurrence of ``old``; ambiguity is an error, not a guess."""
        try:
            target, rel = self._check(path)
        except SandboxRefused as refusal:
            return ToolResult(False, f"refused: {refusal}")
        if not old:
            return ToolResult(False, f"edit failed: the text to replace in {rel} is empty")
        try:
            raw = await anyio.to_thread.run_sync(target.read_bytes)
        except FileNotFoundError:
            return ToolResult(False, f"edit failed: {rel} does not exist")
        except OSError as error:
            return ToolResult(False, f"edit failed: {rel}: {_reason(error)}")
        try:
            # Decoded from bytes (not read_text) so CRLF line endings survive the edit.
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult(False, f"edit failed: {rel} is not UTF-8 text")
        count = text.count(old)
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            return ToolResult(False, f"edit failed: the text to replace {where} in {rel}")
        try:
            data = text.replace(old, new, 1).encode("utf-8")
        except UnicodeEncodeError:
            return ToolResult(False, "edit failed: the new text cannot be encoded as UTF-8")
        return await self._mutate(target, rel, data, f"edited {rel}")

    async def delete(self, path: str) -> ToolResult:
        """Remove a file. A missing file is a failed mutation, reported after before_write."""
        try:
            target, rel = self._check(path)
        except SandboxRefused as refusal:
            return ToolResult(False, f"refused: {refusal}")
        await self._before(target)
        try:
            await anyio.to_thread.run_sync(target.unlink)
        except OSError as error:
            return ToolResult(False, f"delete failed: {_reason(error)}")
        return ToolResult(True, f"deleted {rel}", await self._after(target))

    async def _mutate(self, target: Path, rel: str, data: bytes, message: str) -> ToolResult:
        await self._before(target)
        try:
            await anyio.to_thread.run_sync(_create_and_write, target, data)
        except OSError as error:
            return ToolResult(False, f"write failed: {_reason(error)}")
        return ToolResult(True, message, await self._after(target))

    def _check(self, path: str) -> tuple[Path, str]:
        """Resolve ``path`` under the root or raise :class:`SandboxRefused` with a reason.

        Symlinks are resolved before the containment and deny tests, so a link pointing out
        of the root or into a denied folder is refused; inside the root the tools and the
        hooks work on the resolved file (a link to an allowed file is followed).
        """
        if not path or "\0" in path:
            raise SandboxRefused(f"{path!r} is not a usable path")
        if PurePosixPath(path).is_absolute() or Path(path).is_absolute():
            raise SandboxRefused(f"{path} is absolute; paths are relative to the workspace")
        try:
            target = (self._root / path).resolve()
        except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (< 3.13)
            raise SandboxRefused(f"{path} cannot be resolved: {error}") from None
        if target == self._root:
            raise SandboxRefused(f"{path} is the workspace itself, not a file in it")
        if not target.is_relative_to(self._root):
            raise SandboxRefused(f"{path} is outside the workspace")
        rel = target.relative_to(self._root).as_posix()
        # Only where the path leads counts: the hooks and the mutation act on ``target``.
        for pattern in self._deny:
            if self._denied(rel, pattern):
                raise SandboxRefused(f"{path} matches the deny rule {pattern!r}")
        return target, rel

    @staticmethod
    def _denied(rel: str, pattern: str) -> bool:
        prefixes = [rel, *(p.as_posix() for p in PurePosixPath(rel).parents)]
        return any(fnmatchcase(prefix, pattern) for prefix in prefixes if prefix != ".")

    async def _before(self, target: Path) -> None:
        if self._observer is None:
            return
        try:
            await self._observer.before_write(target)
        except Exception as error:  # WOC-SEAM-NO-ERROR; cancellation is not an Exception
            _report(self._observer, "before_write", error)

    async def _after(self, target: Path) -> str | None:
        if self._observer is None:
            return None
        try:
            annotation = await self._observer.after_write(target)
        except Exception as error:  # WOC-SEAM-NO-ERROR; cancellation is not an Exception
            _report(self._observer, "after_write", error)
            return None
        # Anything but a non-empty string (including a buggy observer's non-str) adds nothing.
        return annotation if isinstance(annotation, str) and annotation else None
