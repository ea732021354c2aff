"""Fifteen plausible broken variants of ``base``: each has exactly one bug.

Outsider batch 1, written before any of them was run against the suite (the original
``variants.py`` had sha256 f9c72e561cfddf6b030b41a426dab7fed9c5f0dc93f7fd95fa39ce9fe3c90b71).
Kept as written: only imports, typing and the CLI loader functions changed, and one
label, which the split of WOC-JOIN moved (see ``RELABELLED``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.outsiders.base import (
    SEPARATOR,
    Chain,
    HookTimeout,
    Implementation,
    Refused,
    ToolResult,
    Tools,
    build,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --- chain bugs ----------------------------------------------------------------------------


class AfterSkippedWhenBeforeFailed(Chain):
    """Skips an observer's after_write for a path whose before_write failed on it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._before_failed: dict[str, set[int]] = {}

    async def _call_one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        failed = self._before_failed.setdefault(str(path), set())
        if hook == "after_write" and id(observer) in failed:
            # "it could not prepare, so it has nothing to finish" (one after per failed before)
            failed.discard(id(observer))
            return None
        before = self.failures_in_last_call
        value = await super()._call_one(observer, hook, path, limit)
        if (
            hook == "before_write"
            and not isinstance(observer, Chain)
            and self.failures_in_last_call > before
        ):
            failed.add(id(observer))
        return value


class JoinSingleNewlineAfterTrailingNewline(Chain):
    """Avoids a 'triple newline' by joining with one newline after a note ending in one."""

    def _join(self, values: list[Any]) -> str | None:
        notes = [value for value in values if self._keep(value)]
        if not notes:
            return None
        out: str = notes[0]
        for note in notes[1:]:
            out += ("\n" if out.endswith("\n") else SEPARATOR) + note
        return out


class EmptyStringKept(Chain):
    """Filters out only None, so an empty-string annotation is joined like any other."""

    def _keep(self, value: Any) -> bool:
        return isinstance(value, str)


class WhitespaceOnlyDropped(Chain):
    """Treats a whitespace-only annotation as 'nothing to say'."""

    def _keep(self, value: Any) -> bool:
        return isinstance(value, str) and value.strip() != ""


class AllEmptyReturnsEmptyString(Chain):
    """Returns None only when every observer returned None; all-empty strings give ""."""

    def _join(self, values: list[Any]) -> str | None:
        if all(value is None for value in values):
            return None
        return SEPARATOR.join(value for value in values if self._keep(value))


class FailureMessageAsAnnotation(Chain):
    """Tells the model that an observer failed, by adding its error as an annotation."""

    def _value_after_failure(self, observer: Any, hook: str, error: Exception) -> Any:
        if hook == "after_write":
            name = getattr(observer, "name", repr(observer))
            return f"{name} failed: {error}"
        return None


class WarnOncePerHook(Chain):
    """Deduplicates warnings per (observer, hook) instead of per observer."""

    def _warn_key(self, observer: Any, hook: str) -> Any:
        return (id(observer), hook)


class CallerCancelTakenForTimeout(Chain):
    """Under a time limit, takes any cancellation of a hook for its own timeout."""

    async def _invoke(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        method = getattr(observer, hook)
        if limit is None:
            return await method(path)
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + limit):
                return await method(path)
            raise HookTimeout(f"{hook} exceeded the per-hook time limit of {limit} s")
        except anyio.get_cancelled_exc_class():
            raise HookTimeout(f"{hook} was cancelled: over the limit of {limit} s") from None


class BeforeWriteConcurrent(Chain):
    """Runs the before_write hooks concurrently, since they 'only read'."""

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[Any]:
        if hook != "before_write":
            return await super()._run(hook, path, inherited)
        self.failures_in_last_call = 0
        limit = self._limit(inherited)
        values: list[Any] = [None] * len(self.observers)

        async def one(index: int, observer: Any) -> None:
            values[index] = await self._call_one(observer, hook, path, limit)

        async with anyio.create_task_group() as group:
            for index, observer in enumerate(self.observers):
                group.start_soon(one, index, observer)
        return values


_DEADLINE: ContextVar[float | None] = ContextVar("outsider_woc_deadline", default=None)


class TimeLimitPerCallNotPerHook(Chain):
    """Starts the limit's clock once per chain call and shares it among the observers."""

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[Any]:
        limit = self._limit(inherited)
        token = _DEADLINE.set(None if limit is None else anyio.current_time() + limit)
        try:
            return await super()._run(hook, path, inherited)
        finally:
            _DEADLINE.reset(token)

    async def _invoke(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        deadline = _DEADLINE.get()
        method = getattr(observer, hook)
        if deadline is None:
            return await method(path)
        try:
            with anyio.fail_after(deadline - anyio.current_time()):
                return await method(path)
        except TimeoutError:
            raise HookTimeout(f"{hook} ran past the chain's time limit") from None


# --- tool / seam bugs ----------------------------------------------------------------------


class DenyGlobAnchoredRight(Tools):
    """Matches deny globs with PurePath.match (anchored at the right end of the path)."""

    def _matches(self, rel: str, pattern: str) -> bool:
        return PurePosixPath(rel).match(pattern)


class WriteOpensBeforeHook(Tools):
    """Opens the target for writing first ('fail fast'), then calls before_write."""

    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target, _ = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle = target.open("w", encoding="utf-8", newline="")
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        try:
            await self._before(target)
            handle.write(content)
        finally:
            handle.close()
        annotation = await self._after(target)
        size = len(content.encode("utf-8"))
        return self._finish(f"wrote {size} bytes to {path}", annotation)


class AfterWriteBeforeFlush(Tools):
    """Calls after_write inside the open file's with-block, before the bytes are flushed."""

    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target, _ = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        await self._before(target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("w", encoding="utf-8", newline="") as handle:
                handle.write(content)
                annotation = await self._after(target)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        size = len(content.encode("utf-8"))
        return self._finish(f"wrote {size} bytes to {path}", annotation)


class DeleteMissingOk(Tools):
    """Deletes idempotently: a missing file counts as deleted."""

    def _unlink(self, target: Path) -> None:
        target.unlink(missing_ok=True)


class ObserverFailureFailsTool(Tools):
    """Reports the tool call as failed when the chain says an observer failed."""

    _observer_failures = 0

    async def _before(self, target: Path) -> None:
        await super()._before(target)
        self._observer_failures = getattr(self.observer, "failures_in_last_call", 0)

    async def _after(self, target: Path) -> str | None:
        annotation = await super()._after(target)
        self._observer_failures += getattr(self.observer, "failures_in_last_call", 0)
        return annotation

    def _finish(self, message: str, annotation: str | None) -> ToolResult:
        if self._observer_failures:
            return ToolResult(
                False, f"{message}, but {self._observer_failures} observer(s) failed", annotation
            )
        return ToolResult(True, message, annotation)


# --- the catalogue of variants ---------------------------------------------------------------


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix given below, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


def _builder(
    name: str, *, chain_cls: type[Chain] = Chain, tools_cls: type[Tools] = Tools
) -> Callable[[str], PythonAdapter]:
    return functools.partial(_build, name=name, chain_cls=chain_cls, tools_cls=tools_cls)


def _build(
    backend: str, *, name: str, chain_cls: type[Chain], tools_cls: type[Tools]
) -> PythonAdapter:
    return build(backend, chain_cls=chain_cls, tools_cls=tools_cls, name=name)


_SPECS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "out-woc-after-skipped-when-before-failed",
        "WOC-ORDER-AFTER",
        "Skips an observer's after_write for a path whose before_write raised for that "
        "observer, so after_write does not call every observer.",
        {"chain_cls": AfterSkippedWhenBeforeFailed},
    ),
    (
        "out-woc-join-single-newline-after-trailing-newline",
        "WOC-JOIN-EXACT",
        "Joins with a single newline when the previous annotation already ends in a newline, "
        "instead of always exactly \\n\\n.",
        {"chain_cls": JoinSingleNewlineAfterTrailingNewline},
    ),
    (
        "out-woc-empty-string-kept",
        "WOC-EMPTY-DROPPED",
        "Filters out only None annotations, so an empty string is joined and adds a stray "
        "separator.",
        {"chain_cls": EmptyStringKept},
    ),
    (
        "out-woc-whitespace-only-dropped",
        "WOC-WHITESPACE-KEPT",
        "Drops whitespace-only annotations as if they were empty.",
        {"chain_cls": WhitespaceOnlyDropped},
    ),
    (
        "out-woc-all-empty-returns-empty-string",
        "WOC-NONE",
        "Returns None only when every observer returned None; when they returned only empty "
        'strings it returns "".',
        {"chain_cls": AllEmptyReturnsEmptyString},
    ),
    (
        "out-woc-failure-message-as-annotation",
        "WOC-FAIL-CONTAINED",
        "Contains an after_write exception but adds '<observer> failed: <error>' as that "
        "observer's annotation.",
        {"chain_cls": FailureMessageAsAnnotation},
    ),
    (
        "out-woc-warn-once-per-hook",
        "WOC-FAIL-WARN",
        "Deduplicates warnings per (observer, hook), so an observer failing in both hooks is "
        "reported twice.",
        {"chain_cls": WarnOncePerHook},
    ),
    (
        "out-woc-caller-cancel-taken-for-timeout",
        "WOC-CANCEL",
        "When a per-hook time limit is set, treats any cancellation of a hook (including the "
        "caller's) as that hook's timeout, contains it and goes on with the next observer.",
        {"chain_cls": CallerCancelTakenForTimeout},
    ),
    (
        "out-woc-before-write-concurrent",
        "WOC-SEQUENTIAL",
        "Runs the before_write hooks concurrently in a task group (results kept in order), "
        "so they overlap.",
        {"chain_cls": BeforeWriteConcurrent},
    ),
    (
        "out-woc-time-limit-per-call-not-per-hook",
        "WOC-SLOW",
        "Applies the time limit as one deadline for the whole chain call, so observers after "
        "a slow one get only the time that is left and are cut off too.",
        {"chain_cls": TimeLimitPerCallNotPerHook},
    ),
    (
        "out-woc-deny-glob-anchored-right",
        "WOC-SEAM-DENIED",
        "Matches deny globs with PurePath.match, which anchors at the right, so a directory "
        "pattern such as '.git' does not refuse '.git/config'.",
        {"tools_cls": DenyGlobAnchoredRight},
    ),
    (
        "out-woc-write-opens-before-hook",
        "WOC-SEAM-PRE",
        "The write tool opens (creating or truncating) the file before calling before_write, "
        "so before_write sees an empty file instead of the pre-image or absence.",
        {"tools_cls": WriteOpensBeforeHook},
    ),
    (
        "out-woc-after-write-before-flush",
        "WOC-SEAM-POST",
        "The write tool calls after_write inside the open file's with-block, so observers see "
        "the file before the buffered bytes are flushed.",
        {"tools_cls": AfterWriteBeforeFlush},
    ),
    (
        "out-woc-delete-missing-ok",
        "WOC-SEAM-FAILED-WRITE",
        "The delete tool uses unlink(missing_ok=True), so deleting a missing file succeeds "
        "and calls after_write instead of reporting the error.",
        {"tools_cls": DeleteMissingOk},
    ),
    (
        "out-woc-observer-failure-fails-tool",
        "WOC-SEAM-NO-ERROR",
        "Reports ok=false when the chain says an observer failed during the write, although "
        "the file was written.",
        {"tools_cls": ObserverFailureFailsTool},
    ),
]

MUTANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(name, rule, statement, _builder(name, **classes))
    for name, rule, statement, classes in _SPECS
}


#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {
    "out-woc-join-single-newline-after-trailing-newline": (
        "WOC-JOIN",
        "a blank line still separates the annotations, so upstream's WOC-JOIN holds; the "
        "exact separator is WOC-JOIN-EXACT since the rule was split",
    ),
}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    classes = next(c for n, _, _, c in _SPECS if n == name)
    return Implementation(**classes)
