"""Deliberately broken write-observer chains ("mutants"), one broken rule each.

A conformance suite is only as good as the bugs it catches. Each mutant here is the
reference with exactly one plausible mistake, labelled with the catalogue rule it breaks;
``tests/test_woc_mutants.py`` runs the shipped scenarios against every mutant and demands a
``fail`` verdict from a scenario that cites that rule. A mutant that survives points at a
rule whose scenarios are not sharp enough (WPT calls these meta-tests that must fail).

Mutants are also ordinary adapters, so anyone can watch the kit catch one::

    seamspec run --impl mutant:woc-after-reversed

How they are built: chain mutants subclass :class:`SteppedChain`, which is the reference
chain's ``_run_hook`` cut at its decision points (which observers, in what order; what
counts as a failure; which annotations are kept; how they are joined). A mutant overrides
one of those points and nothing else, so its docstring and its few lines *are* the bug.
:class:`SteppedChain` itself passes the whole suite (the tests check that too), which is
what makes "differs from a conforming chain in one place" true rather than hoped for.
Seam mutants subclass the reference :class:`WriteTools` the same way.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import anyio

from seamspec import __version__
from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._contracts.write_observer_chain.reference_adapter import (
    ReferenceWriteObservers,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    ANNOTATION_SEPARATOR,
    ObserverFailure,
    ToolResult,
    WriteObserver,
    WriteObserverChain,
    WriteTools,
)
from seamspec.reference._write_observer_chain.chain import Hook
from seamspec.reference._write_observer_chain.write_path import SandboxRefused

__all__ = ["MUTANTS", "Mutant", "MutantImplementation", "SteppedChain", "mutant_adapter"]


# --------------------------------------------------------------------------------------
# The conforming base every chain mutant starts from.


class SteppedChain(WriteObserverChain):
    """The reference chain with its one loop split into small overridable steps.

    Behaviour is identical to :class:`WriteObserverChain` (it keeps the reference's
    constructor, time limit and once-per-observer warning); only the shape differs, so a
    mutant can replace one decision without copying the loop around it.
    """

    #: What the chain treats as an observer's failure (contained, warned, no annotation).
    #: Cancellation is deliberately absent: it is a ``BaseException`` and must propagate.
    contained_errors: tuple[type[BaseException], ...] = (Exception,)

    async def after_write(self, path: Path) -> str | None:
        return self._join(await self._run_hook("after_write", path, math.inf))

    async def _joined(self, hook: Hook, path: Path, inherited_limit: float) -> str | None:
        return self._join(await self._run_hook(hook, path, inherited_limit))

    async def _run_hook(self, hook: Hook, path: Path, inherited_limit: float) -> list[str]:
        limit = inherited_limit if self._hook_time_limit is None else self._hook_time_limit
        annotations: list[str] = []
        for observer in self._schedule(hook):
            annotation = await self._contained(observer, hook, path, limit)
            if hook == "after_write" and self._keeps(annotation):
                annotations.append(annotation)
            if self._stops_after(annotation):
                break
        return annotations

    def _schedule(self, hook: Hook) -> Sequence[WriteObserver]:
        """Which observers this hook calls, in call order: all of them, in list order."""
        return self.observers

    async def _contained(
        self, observer: WriteObserver, hook: Hook, path: Path, limit: float
    ) -> str | None:
        """One observer's hook; a failure is reported and gives None.

        A leaf runs under ``limit``; a nested chain is not timed as a whole but handed
        ``limit`` for its own observers (WOC-SLOW).
        """
        with anyio.move_on_after(self._timed_by(observer, limit)):
            try:
                return await self._invoke(observer, hook, path, limit)
            except self.contained_errors as error:
                self._report(ObserverFailure(observer, hook, error, timed_out=False))
                return None
        self._report(ObserverFailure(observer, hook, None, timed_out=True))
        return None

    def _timed_by(self, observer: WriteObserver, limit: float) -> float:
        """The time limit this chain puts around ``observer``: none for a nested chain."""
        return math.inf if _is_chain(observer) else limit

    async def _invoke(
        self, observer: WriteObserver, hook: Hook, path: Path, limit: float
    ) -> str | None:
        if isinstance(observer, WriteObserverChain):
            return await observer._joined(hook, path, limit)
        if hook == "before_write":
            await observer.before_write(path)
            return None
        return await observer.after_write(path)

    def _keeps(self, annotation: str | None) -> TypeGuard[str]:
        """Whether an annotation goes into the result: any string but the empty one."""
        return isinstance(annotation, str) and annotation != ""

    def _stops_after(self, annotation: str | None) -> bool:
        """Whether the chain stops after this observer: never (WOC-NO-SHORT-CIRCUIT)."""
        return False

    def _join(self, annotations: list[str]) -> str | None:
        return ANNOTATION_SEPARATOR.join(annotations) if annotations else None


def _is_chain(observer: WriteObserver) -> bool:
    return isinstance(observer, WriteObserverChain)


# --------------------------------------------------------------------------------------
# Chain mutants: each overrides one step of SteppedChain.


class _BeforeReversed(SteppedChain):
    """Runs ``before_write`` last-to-first, as if the chain were a middleware stack."""

    def _schedule(self, hook: Hook) -> Sequence[WriteObserver]:
        return self.observers[::-1] if hook == "before_write" else self.observers


class _BeforeSkipsLast(SteppedChain):
    """An off-by-one: ``before_write`` never reaches the last observer."""

    def _schedule(self, hook: Hook) -> Sequence[WriteObserver]:
        return self.observers[:-1] if hook == "before_write" else self.observers


class _AfterReversed(SteppedChain):
    """Unwinds ``after_write`` in reverse, so diagnostics run before the formatters."""

    def _schedule(self, hook: Hook) -> Sequence[WriteObserver]:
        return self.observers[::-1] if hook == "after_write" else self.observers


class _AfterTwice(SteppedChain):
    """Calls each observer's ``after_write`` twice in a row (a naive retry)."""

    def _schedule(self, hook: Hook) -> Sequence[WriteObserver]:
        if hook == "before_write":
            return self.observers
        return [observer for observer in self.observers for _ in range(2)]


class _Concurrent(SteppedChain):
    """Starts every observer's hook at once in a task group, to "save time"."""

    async def _run_hook(self, hook: Hook, path: Path, inherited_limit: float) -> list[str]:
        limit = inherited_limit if self._hook_time_limit is None else self._hook_time_limit
        observers = self._schedule(hook)
        results: list[str | None] = [None] * len(observers)

        async def run(index: int, observer: WriteObserver) -> None:
            results[index] = await self._contained(observer, hook, path, limit)

        async with anyio.create_task_group() as group:
            for index, observer in enumerate(observers):
                group.start_soon(run, index, observer)
        if hook == "before_write":
            return []
        return [annotation for annotation in results if self._keeps(annotation)]


class _ShortCircuit(SteppedChain):
    """Stops at the first observer that returns something (``None`` aside)."""

    def _stops_after(self, annotation: str | None) -> bool:
        return annotation is not None


class _JoinNewline(SteppedChain):
    """Joins annotations with a single newline instead of a blank line."""

    def _join(self, annotations: list[str]) -> str | None:
        return "\n".join(annotations) if annotations else None


class _JoinTrimmed(SteppedChain):
    """Strips each annotation's surrounding whitespace before joining ("tidying" it)."""

    def _join(self, annotations: list[str]) -> str | None:
        return super()._join([annotation.strip() for annotation in annotations])


class _JoinReversed(SteppedChain):
    """Calls observers in order but joins their annotations newest first."""

    def _join(self, annotations: list[str]) -> str | None:
        return super()._join(annotations[::-1])


class _EmptyKept(SteppedChain):
    """Keeps empty-string annotations, so each leaves a stray separator."""

    def _keeps(self, annotation: str | None) -> TypeGuard[str]:
        return isinstance(annotation, str)


class _WhitespaceDropped(SteppedChain):
    """Treats a whitespace-only annotation as empty and drops it."""

    def _keeps(self, annotation: str | None) -> TypeGuard[str]:
        return isinstance(annotation, str) and annotation.strip() != ""


class _NoneAsEmpty(SteppedChain):
    """Returns ``""`` when there is nothing to say (a bare ``str.join``)."""

    def _join(self, annotations: list[str]) -> str | None:
        return ANNOTATION_SEPARATOR.join(annotations)


class _SingleSuffixed(SteppedChain):
    """Ends a lone annotation with the separator, as if more paragraphs followed."""

    def _join(self, annotations: list[str]) -> str | None:
        if len(annotations) == 1:
            return annotations[0] + ANNOTATION_SEPARATOR
        return super()._join(annotations)


class _FailureEscapes(SteppedChain):
    """Contains nothing: an observer's exception escapes the chain (timeouts still handled)."""

    contained_errors = ()


class _CancelSwallowed(SteppedChain):
    """Catches ``BaseException``, so the caller's cancellation is taken for a failure."""

    contained_errors = (BaseException,)


class _WarnEveryTime(SteppedChain):
    """Warns on every failure instead of once per observer."""

    def _report(self, failure: ObserverFailure) -> None:
        self._on_failure(failure)


class _WarnNever(SteppedChain):
    """Contains failures silently: a broken formatter is never mentioned."""

    def _report(self, failure: ObserverFailure) -> None:
        return None


class _NoTimeLimit(SteppedChain):
    """Accepts ``hook_time_limit`` and ignores it: a hung hook hangs the write."""

    def __init__(
        self,
        observers: Sequence[WriteObserver],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[ObserverFailure], None] | None = None,
    ) -> None:
        super().__init__(observers, hook_time_limit=None, on_failure=on_failure)


class _NestedNewline(SteppedChain):
    """Flattens a nested chain's ``after_write`` itself, joining its parts with ``"\\n"``."""

    async def _invoke(
        self, observer: WriteObserver, hook: Hook, path: Path, limit: float
    ) -> str | None:
        if hook == "after_write" and isinstance(observer, WriteObserverChain):
            return "\n".join(await observer._run_hook(hook, path, limit)) or None
        return await super()._invoke(observer, hook, path, limit)


class _NestedTimedWhole(SteppedChain):
    """Times a nested chain as one observer: one hung observer in it cuts off the rest."""

    def _timed_by(self, observer: WriteObserver, limit: float) -> float:
        return limit

    async def _invoke(
        self, observer: WriteObserver, hook: Hook, path: Path, limit: float
    ) -> str | None:
        if isinstance(observer, WriteObserverChain):  # a nested chain keeps only its own limit
            return await observer._joined(hook, path, math.inf)
        return await super()._invoke(observer, hook, path, limit)


class _NestedLast(SteppedChain):
    """Runs its plain observers first and nested chains after them."""

    def _schedule(self, hook: Hook) -> Sequence[WriteObserver]:
        plain = [observer for observer in self.observers if not _is_chain(observer)]
        return plain + [observer for observer in self.observers if _is_chain(observer)]


class _FailureRecordingChain(WriteObserverChain):
    """A conforming chain that also remembers every failure, for the tools to consult."""

    def __init__(
        self,
        observers: Sequence[WriteObserver],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[ObserverFailure], None] | None = None,
    ) -> None:
        super().__init__(observers, hook_time_limit=hook_time_limit, on_failure=on_failure)
        self.failures: list[ObserverFailure] = []

    def _report(self, failure: ObserverFailure) -> None:
        self.failures.append(failure)
        super()._report(failure)


# --------------------------------------------------------------------------------------
# Seam mutants: the reference chain behind write tools that call it at the wrong moment.


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
        assert isinstance(chain, _FailureRecordingChain), "built with _FailureRecordingChain"
        known = len(chain.failures)
        result = await operation
        if not result.ok or len(chain.failures) == known:
            return result
        blame = f"write failed: {chain.failures[-1].describe()}"
        return ToolResult(False, blame, result.annotation)


# --------------------------------------------------------------------------------------
# The registry.


class MutantImplementation(ReferenceWriteObservers):
    """A :class:`WriteObserverImplementation` built from a chain class and a tools class.

    With the defaults it is the reference itself; a mutant swaps exactly one of the two.
    """

    def __init__(
        self,
        chain: type[WriteObserverChain] = WriteObserverChain,
        tools: type[WriteTools] = WriteTools,
    ) -> None:
        self.chain = chain
        self.tools = tools

    def make_chain(
        self,
        observers: Sequence[WriteObserver],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> WriteObserverChain:
        def report(failure: ObserverFailure) -> None:
            on_failure(failure.observer, failure.describe())

        return self.chain(observers, hook_time_limit=hook_time_limit, on_failure=report)

    def make_tools(self, root: Path, observer: WriteObserver, *, deny: Sequence[str]) -> WriteTools:
        return self.tools(root, observer, deny=deny)


@dataclass(frozen=True)
class Mutant:
    """One named bug: the rule it breaks, what it does wrong, and how to build it."""

    name: str
    rule: str
    statement: str
    chain: type[WriteObserverChain] = WriteObserverChain
    tools: type[WriteTools] = WriteTools

    def implementation(self) -> MutantImplementation:
        return MutantImplementation(self.chain, self.tools)


def _chain(name: str, rule: str, statement: str, chain: type[SteppedChain]) -> Mutant:
    return Mutant(name, rule, statement, chain=chain)


def _tools(
    name: str,
    rule: str,
    statement: str,
    tools: type[WriteTools],
    chain: type[WriteObserverChain] = WriteObserverChain,
) -> Mutant:
    return Mutant(name, rule, statement, chain=chain, tools=tools)


_ALL = (
    _chain("woc-before-reversed", "WOC-ORDER-BEFORE",
           "before_write calls the observers last-to-first", _BeforeReversed),
    _chain("woc-before-skips-last", "WOC-ORDER-BEFORE",
           "before_write never calls the last observer", _BeforeSkipsLast),
    _chain("woc-after-reversed", "WOC-ORDER-AFTER",
           "after_write calls the observers last-to-first", _AfterReversed),
    _chain("woc-after-twice", "WOC-ORDER-AFTER",
           "after_write calls every observer twice in a row", _AfterTwice),
    _chain("woc-concurrent", "WOC-SEQUENTIAL",
           "runs all observers' hooks concurrently in a task group", _Concurrent),
    _chain("woc-short-circuit", "WOC-NO-SHORT-CIRCUIT",
           "after_write stops at the first observer that returns a string (even \"\")",
           _ShortCircuit),
    _chain("woc-join-newline", "WOC-JOIN",
           'joins annotations with "\\n" instead of "\\n\\n"', _JoinNewline),
    _chain("woc-join-trimmed", "WOC-JOIN",
           "strips whitespace around each annotation before joining", _JoinTrimmed),
    _chain("woc-join-reversed", "WOC-JOIN",
           "joins the annotations in reverse observer order", _JoinReversed),
    _chain("woc-empty-kept", "WOC-EMPTY-DROPPED",
           "keeps empty annotations, leaving stray separators", _EmptyKept),
    _chain("woc-whitespace-dropped", "WOC-WHITESPACE-KEPT",
           "drops whitespace-only annotations as if they were empty", _WhitespaceDropped),
    _chain("woc-none-as-empty", "WOC-NONE",
           'returns "" instead of None when there is no annotation', _NoneAsEmpty),
    _chain("woc-single-suffixed", "WOC-SINGLE",
           'returns a lone annotation with a trailing "\\n\\n"', _SingleSuffixed),
    _chain("woc-fail-escapes", "WOC-FAIL-CONTAINED",
           "lets an observer's exception escape the chain", _FailureEscapes),
    _chain("woc-warn-every-time", "WOC-FAIL-WARN",
           "warns on every failure instead of once per observer", _WarnEveryTime),
    _chain("woc-warn-never", "WOC-FAIL-WARN",
           "never warns about a failing observer", _WarnNever),
    _chain("woc-cancel-swallowed", "WOC-CANCEL",
           "catches BaseException: cancellation is treated as a failure and the chain goes on",
           _CancelSwallowed),
    _chain("woc-no-time-limit", "WOC-SLOW",
           "ignores hook_time_limit, so a hung hook hangs the call", _NoTimeLimit),
    _chain("woc-nested-chain-timed-whole", "WOC-SLOW",
           "times a nested chain as one observer, so a hung observer in it cuts off the rest",
           _NestedTimedWhole),
    _chain("woc-nested-newline", "WOC-NESTED",
           'joins a nested chain\'s annotations with "\\n"', _NestedNewline),
    _chain("woc-nested-last", "WOC-NESTED",
           "runs nested chains after the outer chain's plain observers", _NestedLast),
    _tools("woc-seam-deny-late", "WOC-SEAM-DENIED",
           "applies the deny rules after before_write, so refused paths reach observers",
           _DenyCheckedLate),
    _tools("woc-seam-before-late", "WOC-SEAM-PRE",
           "calls before_write after the mutation (it sees the new bytes)", _BeforeAfterMutation),
    _tools("woc-seam-after-early", "WOC-SEAM-POST",
           "calls after_write before the mutation (it sees the pre-image)", _AfterBeforeMutation),
    _tools("woc-seam-no-blank-line", "WOC-SEAM-POST",
           'appends the annotation to the tool message with "\\n", not "\\n\\n"', _NoBlankLine),
    _tools("woc-seam-after-failed-write", "WOC-SEAM-FAILED-WRITE",
           "calls after_write even when the mutation failed", _AfterFailedWrite),
    _tools("woc-seam-failure-is-error", "WOC-SEAM-NO-ERROR",
           "reports a write during which an observer failed as ok=False", _FailureIsError,
           chain=_FailureRecordingChain),
)  # fmt: skip

#: Every mutant by name, in catalogue order of the rule it breaks.
MUTANTS: dict[str, Mutant] = {mutant.name: mutant for mutant in _ALL}


def mutant_adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named mutant as an adapter, exactly like :func:`reference_adapter` builds one."""
    mutant = MUTANTS[name]
    return PythonAdapter(
        name=f"seamspec-mutant-{name}",
        version=__version__,
        drivers=[WriteObserverChainDriver(mutant.implementation())],
        backend=backend,
        details={"mutant": name, "breaks": mutant.rule},
    )
