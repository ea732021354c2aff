"""Chain mutants: the reference chain with one decision changed, one broken rule each.

:class:`SteppedChain` is the reference chain's ``_run_hook`` cut at its decision points
(which observers, in what order; what counts as a failure; which annotations are kept; how
they are joined; which time limit bounds what). A mutant overrides one of those points and
nothing else, so its docstring and its few lines *are* the bug. :class:`SteppedChain`
itself passes the whole suite (``tests/test_woc_mutants.py`` checks that too), which is
what makes "differs from a conforming chain in one place" true rather than hoped for.
The registry is in ``mutants.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeGuard

import anyio

from seamspec.reference import (
    ANNOTATION_SEPARATOR,
    ObserverFailure,
    WriteObserver,
    WriteObserverChain,
)
from seamspec.reference._write_observer_chain.chain import Hook

__all__ = ["CHAIN_MUTANTS", "FailureRecordingChain", "SteppedChain"]


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


class FailureRecordingChain(WriteObserverChain):
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


class _NestedIgnoresOuterLimit(SteppedChain):
    """Hands a nested chain no limit: without one of its own, its observers run unbounded.

    The nested chain is not timed as a whole (correct), but the outer limit is not passed
    down either, so a hung observer inside it holds the write until some outer watchdog
    (the kit's own call limit) gives up.
    """

    async def _invoke(
        self, observer: WriteObserver, hook: Hook, path: Path, limit: float
    ) -> str | None:
        if isinstance(observer, WriteObserverChain):
            return await observer._joined(hook, path, math.inf)
        return await super()._invoke(observer, hook, path, limit)


class _LimitDoubled(SteppedChain):
    """Cuts a hung hook off only at twice its limit (a "soft" and a "hard" deadline)."""

    def _timed_by(self, observer: WriteObserver, limit: float) -> float:
        return super()._timed_by(observer, limit) * 2


class _TimeoutEscapesAsCancel(SteppedChain):
    """Lets its timer's cancellation out: a hook past its limit ends the whole call as if
    the caller had cancelled it, instead of being contained like a failure."""

    async def _contained(
        self, observer: WriteObserver, hook: Hook, path: Path, limit: float
    ) -> str | None:
        with anyio.move_on_after(self._timed_by(observer, limit)) as timer:
            try:
                return await self._invoke(observer, hook, path, limit)
            except self.contained_errors as error:
                self._report(ObserverFailure(observer, hook, error, timed_out=False))
                return None
        if timer.cancelled_caught:
            raise anyio.get_cancelled_exc_class()()
        return None


#: (name, rule, statement, chain class) of every chain mutant, in catalogue order.
CHAIN_MUTANTS: tuple[tuple[str, str, str, type[WriteObserverChain]], ...] = (
    ("woc-before-reversed", "WOC-ORDER-BEFORE",
     "before_write calls the observers last-to-first", _BeforeReversed),
    ("woc-before-skips-last", "WOC-ORDER-BEFORE",
     "before_write never calls the last observer", _BeforeSkipsLast),
    ("woc-after-reversed", "WOC-ORDER-AFTER",
     "after_write calls the observers last-to-first", _AfterReversed),
    ("woc-after-twice", "WOC-ORDER-AFTER",
     "after_write calls every observer twice in a row", _AfterTwice),
    ("woc-concurrent", "WOC-SEQUENTIAL",
     "runs all observers' hooks concurrently in a task group", _Concurrent),
    ("woc-short-circuit", "WOC-NO-SHORT-CIRCUIT",
     "after_write stops at the first observer that returns a string (even \"\")",
     _ShortCircuit),
    ("woc-join-newline", "WOC-JOIN",
     'joins annotations with "\\n" instead of "\\n\\n"', _JoinNewline),
    ("woc-join-reversed", "WOC-JOIN",
     "joins the annotations in reverse observer order", _JoinReversed),
    ("woc-join-trimmed", "WOC-JOIN-EXACT",
     "strips whitespace around each annotation before joining", _JoinTrimmed),
    ("woc-empty-kept", "WOC-EMPTY-DROPPED",
     "keeps empty annotations, leaving stray separators", _EmptyKept),
    ("woc-whitespace-dropped", "WOC-WHITESPACE-KEPT",
     "drops whitespace-only annotations as if they were empty", _WhitespaceDropped),
    ("woc-none-as-empty", "WOC-NONE",
     'returns "" instead of None when there is no annotation', _NoneAsEmpty),
    ("woc-single-suffixed", "WOC-SINGLE",
     'returns a lone annotation with a trailing "\\n\\n"', _SingleSuffixed),
    ("woc-fail-escapes", "WOC-FAIL-CONTAINED",
     "lets an observer's exception escape the chain", _FailureEscapes),
    ("woc-warn-every-time", "WOC-FAIL-WARN",
     "warns on every failure instead of once per observer", _WarnEveryTime),
    ("woc-warn-never", "WOC-FAIL-WARN",
     "never warns about a failing observer", _WarnNever),
    ("woc-cancel-swallowed", "WOC-CANCEL",
     "catches BaseException: cancellation is treated as a failure and the chain goes on",
     _CancelSwallowed),
    ("woc-no-time-limit", "WOC-SLOW",
     "ignores hook_time_limit, so a hung hook hangs the call", _NoTimeLimit),
    ("woc-timeout-escapes-as-cancel", "WOC-SLOW",
     "a hook past its limit raises a cancellation out of the chain, ending the call as if "
     "the caller had cancelled", _TimeoutEscapesAsCancel),
    ("woc-nested-chain-timed-whole", "WOC-SLOW",
     "times a nested chain as one observer, so a hung observer in it cuts off the rest",
     _NestedTimedWhole),
    ("woc-nested-ignores-outer-limit", "WOC-SLOW-BOUNDED",
     "a nested chain with no limit of its own runs unbounded, so a hung observer in it "
     "holds the write until the kit's own call limit", _NestedIgnoresOuterLimit),
    ("woc-limit-doubled", "WOC-SLOW-BOUNDED",
     "cuts a hung hook off at twice the per-hook limit", _LimitDoubled),
    ("woc-nested-newline", "WOC-NESTED",
     'joins a nested chain\'s annotations with "\\n"', _NestedNewline),
    ("woc-nested-last", "WOC-NESTED",
     "runs nested chains after the outer chain's plain observers", _NestedLast),
)  # fmt: skip
